#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A monotonic time source in nanoseconds.
///
/// State machines in `TandemCore` never read a clock themselves: every input carries `now`. Drivers read a
/// `MonotonicClock`, so tests inject `ManualClock` (TandemTesting) and benchmarks inject skewed clocks.
public protocol MonotonicClock: Sendable {
    /// The current reading in nanoseconds. Never decreases.
    func now() -> Int64
}

/// The machine's `CLOCK_MONOTONIC`, the same time base GStreamer's system clock uses.
///
/// Provided here so that every layer agrees on one definition; the state machines themselves take time as input.
public struct SystemMonotonicClock: MonotonicClock {
    public init() {}
    public func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// A clock that reads `mapping(base.now())`: how benchmarks give a peer a wrong view of time
/// (an offset and a drift) while ground truth stays on `base`.
public struct SkewedClock: MonotonicClock {
    public let base: any MonotonicClock
    /// Maps a `base` reading to this clock's reading.
    public let skew: ClockMapping
    public init(base: any MonotonicClock, offset: Int64, driftPPM: Double) {
        self.base = base
        let anchor = base.now()
        self.skew = ClockMapping(localAnchor: anchor, sessionAnchor: anchor + offset, rate: 1 + driftPPM / 1_000_000)
    }
    public func now() -> Int64 { skew.sessionTime(atLocal: base.now()) }
}

/// Durations in nanoseconds, spelled readably.
public enum Nanos {
    public static func seconds(_ s: Double) -> Int64 { Int64((s * 1_000_000_000).rounded()) }
    public static func milliseconds(_ ms: Double) -> Int64 { Int64((ms * 1_000_000).rounded()) }
    public static func microseconds(_ us: Double) -> Int64 { Int64((us * 1_000).rounded()) }
    public static func toSeconds(_ ns: Int64) -> Double { Double(ns) / 1_000_000_000 }
    public static func toMilliseconds(_ ns: Int64) -> Double { Double(ns) / 1_000_000 }
}
