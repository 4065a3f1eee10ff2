/// What the four kinds of time have in common: a count of nanoseconds on one axis.
///
/// Each axis has its own type so that a local instant cannot be handed where a session instant or an item time is
/// expected. They encode as a bare `Int64` of nanoseconds (a single-value container), so the wire format carries
/// plain numbers. Integer literals are nanoseconds.
public protocol TimeValue: Comparable, Hashable, Sendable, Codable, ExpressibleByIntegerLiteral,
    CustomStringConvertible where IntegerLiteralType == Int64 {
    /// Nanoseconds on this value's axis.
    var nanoseconds: Int64 { get }
    init(nanoseconds: Int64)
}

extension TimeValue {
    public init(integerLiteral value: Int64) { self.init(nanoseconds: value) }

    public init(from decoder: any Decoder) throws {
        self.init(nanoseconds: try decoder.singleValueContainer().decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(nanoseconds)
    }

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    /// `ns` nanoseconds on this axis (a span of that length, or the instant that far from the axis's origin).
    public static func nanoseconds(_ ns: Int64) -> Self { Self(nanoseconds: ns) }
    /// `us` microseconds, rounded to the nearest nanosecond.
    public static func microseconds(_ us: Double) -> Self { Self(nanoseconds: Int64((us * 1_000).rounded())) }
    /// `ms` milliseconds, rounded to the nearest nanosecond.
    public static func milliseconds(_ ms: Double) -> Self { Self(nanoseconds: Int64((ms * 1_000_000).rounded())) }
    /// `s` seconds, rounded to the nearest nanosecond: `ItemTime.seconds(90)` is 1:30 into the item.
    public static func seconds(_ s: Double) -> Self { Self(nanoseconds: Int64((s * 1_000_000_000).rounded())) }

    /// The value in seconds, for display and figures.
    public var seconds: Double { Double(nanoseconds) / 1_000_000_000 }
    /// The value in milliseconds, for display and figures.
    public var milliseconds: Double { Double(nanoseconds) / 1_000_000 }

    public var description: String { "\(nanoseconds) ns" }
}

/// A point on an axis (as opposed to a `TimeSpan`): instants differ by spans and move by spans.
public protocol TimePoint: TimeValue {}

extension TimePoint {
    public static func - (a: Self, b: Self) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds &- b.nanoseconds) }
    public static func + (a: Self, b: TimeSpan) -> Self { Self(nanoseconds: a.nanoseconds &+ b.nanoseconds) }
    public static func + (a: TimeSpan, b: Self) -> Self { Self(nanoseconds: a.nanoseconds &+ b.nanoseconds) }
    public static func - (a: Self, b: TimeSpan) -> Self { Self(nanoseconds: a.nanoseconds &- b.nanoseconds) }
    public static func += (a: inout Self, b: TimeSpan) { a = a + b }
    public static func -= (a: inout Self, b: TimeSpan) { a = a - b }

    /// The axis's origin (nanosecond 0).
    public static var zero: Self { Self(nanoseconds: 0) }
}
