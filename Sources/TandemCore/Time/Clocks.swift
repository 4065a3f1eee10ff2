#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A monotonic clock that reads `LocalInstant`s and can be slept on: the clock a peer's drivers read and wait on.
///
/// State machines in `TandemCore` never read a clock themselves: every input carries `now`. Drivers read and sleep
/// on a `MonotonicClock`, so tests inject `ManualClock` (TandemTesting) and benchmarks inject skewed clocks.
public protocol MonotonicClock: Clock where Instant == LocalInstant, Duration == Swift.Duration {}

/// The machine's `CLOCK_MONOTONIC`, the same time base GStreamer's system clock uses.
///
/// Provided here so that every layer agrees on one definition; the state machines themselves take time as input.
public struct SystemMonotonicClock: MonotonicClock {
    public init() {}

    public var now: LocalInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return LocalInstant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: LocalInstant, tolerance: Duration? = nil) async throws {
        // CLOCK_MONOTONIC is the clock ContinuousClock reads on Linux; sleep there for the remaining span.
        let remaining = deadline - now
        guard remaining > .zero else { try Task.checkCancellation(); return }
        try await ContinuousClock().sleep(for: remaining.duration, tolerance: tolerance)
    }
}

/// Any `MonotonicClock`, wrapped so that generic code (`ClockedPlaybackCoordinator`) can take a clock chosen at
/// run time.
public struct AnyMonotonicClock: MonotonicClock {
    public let base: any MonotonicClock
    public init(_ base: any MonotonicClock) { self.base = base }
    public var now: LocalInstant { base.now }
    public var minimumResolution: Duration { base.minimumResolution }
    public func sleep(until deadline: LocalInstant, tolerance: Duration? = nil) async throws {
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}

/// A clock that reads `skew(base.now)`: how benchmarks give a peer a wrong view of time (an offset and a drift)
/// while ground truth stays on `base`.
public struct SkewedClock: MonotonicClock {
    public let base: any MonotonicClock
    /// Maps a `base` reading to this clock's reading.
    public let skew: ClockMapping
    public init(base: any MonotonicClock, offset: TimeSpan, driftPPM: Double) {
        self.base = base
        let anchor = base.now
        self.skew = ClockMapping(localAnchor: anchor, sessionAnchor: SessionInstant(nanoseconds: (anchor + offset).nanoseconds),
                                 rate: 1 + driftPPM / 1_000_000)
    }
    public var now: LocalInstant { LocalInstant(nanoseconds: skew.sessionTime(atLocal: base.now).nanoseconds) }
    public var minimumResolution: Duration { base.minimumResolution }
    public func sleep(until deadline: LocalInstant, tolerance: Duration? = nil) async throws {
        let baseDeadline = skew.localTime(atSession: SessionInstant(nanoseconds: deadline.nanoseconds))
        try await base.sleep(until: baseDeadline, tolerance: tolerance)
    }
}
