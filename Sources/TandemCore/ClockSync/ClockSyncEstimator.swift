/// One completed four-timestamp exchange. `t1`, `t4` on the peer's local clock; `t2`, `t3` on session time.
public struct ClockSample: Hashable, Sendable, Codable {
    public var t1: Int64
    public var t2: Int64
    public var t3: Int64
    public var t4: Int64
    public init(t1: Int64, t2: Int64, t3: Int64, t4: Int64) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }
    /// Network round trip, excluding the authority's own turnaround.
    public var roundTrip: Int64 { (t4 - t1) - (t3 - t2) }
    /// Offset `session − local` assuming a symmetric path, at local time `localMidpoint`.
    public var offset: Int64 { ((t2 - t1) + (t3 - t4)) / 2 }
    public var localMidpoint: Int64 { t1 + (t4 - t1) / 2 }
}

/// Estimates `session time = f(local time)` from clock exchanges with the session authority.
///
/// A pure value: the driver sends a ping when `nextPingTime` says, and feeds each pong as a `ClockSample`.
/// (Interim implementation: minimum-round-trip offset over a window. To be replaced by the regression estimator.)
public struct ClockSyncEstimator: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// Pings in the initial burst, and their spacing.
        public var burstCount: Int = 8
        public var burstInterval: Int64 = 50_000_000
        /// Steady-state ping interval.
        public var steadyInterval: Int64 = 1_000_000_000
        /// How many recent samples are kept.
        public var window: Int = 64
        public init() {}
    }

    public let configuration: Configuration
    public private(set) var samples: [ClockSample] = []
    public private(set) var sentCount = 0

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Call when a ping is sent (so the burst/steady schedule advances).
    public mutating func pingSent() { sentCount += 1 }

    /// When (local time) the next ping should go out, given the last one went out at `lastPing`.
    public func nextPingTime(lastPing: Int64?) -> Int64 {
        guard let lastPing else { return Int64.min }
        return lastPing + (sentCount < configuration.burstCount ? configuration.burstInterval : configuration.steadyInterval)
    }

    /// Feeds a completed exchange.
    public mutating func add(_ sample: ClockSample) {
        guard sample.roundTrip >= 0 else { return }
        samples.append(sample)
        if samples.count > configuration.window { samples.removeFirst(samples.count - configuration.window) }
    }

    /// The current estimate of local → session time, or nil before the first sample.
    public var mapping: ClockMapping? {
        guard let best = samples.min(by: { $0.roundTrip < $1.roundTrip }) else { return nil }
        return ClockMapping(localAnchor: best.localMidpoint, sessionAnchor: best.localMidpoint + best.offset, rate: 1)
    }

    /// A bound on |estimate − truth| in ns (half the best round trip covers any path asymmetry), or nil.
    public var errorBound: Int64? { samples.map(\.roundTrip).min().map { $0 / 2 } }

    /// The smallest recent round trip (ns), or nil.
    public var roundTrip: Int64? { samples.map(\.roundTrip).min() }
}
