/// A linear map from one time axis to another: `to = toAnchor + rate × (from − fromAnchor)`.
///
/// Used for local → session time (the clock-sync estimate) and for true monotonic → a peer's skewed local
/// time (benchmarks). `rate` is "to-nanoseconds per from-nanosecond", close to 1.
public struct ClockMapping: Sendable, Codable, Hashable, CustomStringConvertible {
    /// A reading on the source axis (e.g. local time).
    public var localAnchor: Int64
    /// The reading on the target axis (e.g. session time) that corresponds to `localAnchor`.
    public var sessionAnchor: Int64
    /// Target nanoseconds per source nanosecond.
    public var rate: Double

    public init(localAnchor: Int64, sessionAnchor: Int64, rate: Double = 1) {
        self.localAnchor = localAnchor
        self.sessionAnchor = sessionAnchor
        self.rate = rate
    }

    /// Maps every time to itself.
    public static let identity = ClockMapping(localAnchor: 0, sessionAnchor: 0, rate: 1)

    /// A pure offset: `session = local + offset`.
    public static func offset(_ offset: Int64) -> ClockMapping {
        ClockMapping(localAnchor: 0, sessionAnchor: offset, rate: 1)
    }

    /// The target-axis time at source time `local`.
    public func sessionTime(atLocal local: Int64) -> Int64 {
        sessionAnchor &+ Int64((Double(local &- localAnchor) * rate).rounded())
    }

    /// The source-axis time at target time `session`.
    public func localTime(atSession session: Int64) -> Int64 {
        localAnchor &+ Int64((Double(session &- sessionAnchor) / rate).rounded())
    }

    /// Offset `session − local` at source time `local`.
    public func offset(atLocal local: Int64) -> Int64 { sessionTime(atLocal: local) &- local }

    /// `self ∘ inner`: first `inner`, then `self`.
    public func composed(after inner: ClockMapping) -> ClockMapping {
        ClockMapping(localAnchor: inner.localAnchor,
                     sessionAnchor: sessionTime(atLocal: inner.sessionAnchor),
                     rate: rate * inner.rate)
    }

    /// The inverse map (target → source).
    public var inverted: ClockMapping {
        ClockMapping(localAnchor: sessionAnchor, sessionAnchor: localAnchor, rate: 1 / rate)
    }

    /// The same map re-anchored at source time `local` (keeps numbers small and precise).
    public func reanchored(atLocal local: Int64) -> ClockMapping {
        ClockMapping(localAnchor: local, sessionAnchor: sessionTime(atLocal: local), rate: rate)
    }

    public var description: String {
        let ppm = (rate - 1) * 1_000_000
        return "ClockMapping(offset \(sessionAnchor &- localAnchor) ns at \(localAnchor), \(ppm) ppm)"
    }
}
