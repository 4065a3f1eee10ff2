/// A linear map from one time axis to another: `to = toAnchor + rate × (from − fromAnchor)`.
///
/// The one place this projection is written. It carries local → session time (the clock-sync estimate,
/// `ClockMapping`), session → item time (a playing timeline, `ItemProjection`) and true → skewed local time
/// (benchmarks). `rate` is "to-nanoseconds per from-nanosecond".
public struct LinearMap<From: TimePoint, To: TimePoint>: Sendable, Hashable, CustomStringConvertible {
    /// A reading on the source axis.
    public var fromAnchor: From
    /// The reading on the target axis that corresponds to `fromAnchor`.
    public var toAnchor: To
    /// Target nanoseconds per source nanosecond.
    public var rate: Double

    public init(from fromAnchor: From, to toAnchor: To, rate: Double = 1) {
        self.fromAnchor = fromAnchor
        self.toAnchor = toAnchor
        self.rate = rate
    }

    /// Maps every value to the value with the same number of nanoseconds.
    public static var identity: LinearMap { LinearMap(from: .zero, to: .zero, rate: 1) }

    /// The target-axis value at source value `from`.
    public func callAsFunction(_ from: From) -> To { toAnchor + (from - fromAnchor) * rate }

    /// The source-axis value at target value `to`.
    public func inverse(_ to: To) -> From { fromAnchor + (to - toAnchor) / rate }

    /// The inverse map (target → source).
    public var inverted: LinearMap<To, From> { LinearMap<To, From>(from: toAnchor, to: fromAnchor, rate: 1 / rate) }

    /// `self ∘ inner`: first `inner`, then `self`.
    public func composed<Before: TimePoint>(after inner: LinearMap<Before, From>) -> LinearMap<Before, To> {
        LinearMap<Before, To>(from: inner.fromAnchor, to: self(inner.toAnchor), rate: rate * inner.rate)
    }

    /// The same map re-anchored at source value `from` (keeps numbers small and precise).
    public func reanchored(at from: From) -> LinearMap {
        LinearMap(from: from, to: self(from), rate: rate)
    }

    /// `to − from` at source value `from`, as nanoseconds between the two axes' readings.
    public func offset(at from: From) -> TimeSpan { TimeSpan(nanoseconds: self(from).nanoseconds &- from.nanoseconds) }

    public var description: String {
        let ppm = (rate - 1) * 1_000_000
        return "LinearMap(offset \(toAnchor.nanoseconds &- fromAnchor.nanoseconds) ns at \(fromAnchor.nanoseconds), \(ppm) ppm)"
    }
}

extension LinearMap: Codable {
    private enum CodingKeys: String, CodingKey { case fromAnchor, toAnchor, rate }
}

/// A playing line: session time → item time (a playing `Timeline`, the coordinator's engine target).
public typealias ItemProjection = LinearMap<SessionInstant, ItemTime>
