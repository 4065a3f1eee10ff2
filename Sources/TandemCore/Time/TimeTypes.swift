/// A reading of this machine's monotonic clock (`CLOCK_MONOTONIC`, the base GStreamer's system clock uses).
/// Never compared across peers.
public struct LocalInstant: TimePoint {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
}

/// A reading of the session's shared clock (the authority's monotonic clock), which every peer estimates from
/// its local clock.
public struct SessionInstant: TimePoint {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
}

/// A position inside the media (0 is its start).
public struct ItemTime: TimePoint {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
}

/// A length of time in nanoseconds, on any axis: the difference of two instants of the same kind.
public struct TimeSpan: TimeValue, AdditiveArithmetic {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static var zero: TimeSpan { TimeSpan(nanoseconds: 0) }


    public static func + (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds &+ b.nanoseconds) }
    public static func - (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds &- b.nanoseconds) }
    public static prefix func - (a: TimeSpan) -> TimeSpan { TimeSpan(nanoseconds: -a.nanoseconds) }
    public static func * (a: TimeSpan, k: Int64) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds &* k) }
    public static func * (k: Int64, a: TimeSpan) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds &* k) }
    public static func / (a: TimeSpan, k: Int64) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds / k) }
    /// The span scaled by `factor`, rounded to the nearest nanosecond.
    public static func * (a: TimeSpan, factor: Double) -> TimeSpan {
        TimeSpan(nanoseconds: Int64((Double(a.nanoseconds) * factor).rounded()))
    }
    public static func / (a: TimeSpan, b: TimeSpan) -> Double { Double(a.nanoseconds) / Double(b.nanoseconds) }
    /// The span divided by `divisor`, rounded to the nearest nanosecond.
    public static func / (a: TimeSpan, divisor: Double) -> TimeSpan {
        TimeSpan(nanoseconds: Int64((Double(a.nanoseconds) / divisor).rounded()))
    }

    /// The span's length, whatever its sign.
    public var magnitude: TimeSpan { TimeSpan(nanoseconds: abs(nanoseconds)) }

    /// The same span as a Swift `Duration`.
    public var duration: Duration { .nanoseconds(nanoseconds) }

    /// A Swift `Duration`, rounded to nanoseconds.
    public init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(nanoseconds: seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
    }
}

extension LocalInstant: InstantProtocol {
    public func advanced(by duration: Duration) -> LocalInstant { self + TimeSpan(duration) }
    public func duration(to other: LocalInstant) -> Duration { (other - self).duration }
}
