import Foundation
import TandemCore

/// A deterministic, seeded simulation of one peer synchronising its clock with the session authority.
///
/// Everything runs on simulated time (nothing sleeps): the authority's clock *is* true time (so session time is
/// ground truth); the peer's local clock is off by `peerOffset` and runs `peerDriftPPM` fast. The peer pings on
/// the estimator's schedule, its `NetworkPath` delays or drops each packet, the authority stamps
/// `t2`/`t3` around a small turnaround, and the peer feeds each pong to its `ClockSyncEstimator`.
///
/// Errors are `estimated session time − true session time` at the same instant. Between two samples the
/// estimate is a fixed linear map of a linearly running clock, so the error is linear in time there; the
/// simulation evaluates it just before and just after every sample (and on a regular grid), so the maximum
/// it reports is the exact maximum over continuous time.
public enum ClockSyncSimulation {
    /// What to simulate.
    public struct Configuration: Sendable {
        public var profile: NetworkPath
        /// Simulated duration (ns).
        public var duration: Int64 = 60_000_000_000
        public var seed: UInt64 = 1
        /// The peer's local clock minus true time at the start (ns).
        public var peerOffset: Int64 = 3_600_000_000_000
        /// How fast the peer's clock runs against true time (ppm, positive: fast).
        public var peerDriftPPM: Double = 200
        /// The authority's time between stamping `t2` and `t3` (ns).
        public var turnaround: Int64 = 20_000
        public var estimator: ClockSyncEstimator.Configuration = .init()
        /// Spacing (ns) of the regular error grid in the report.
        public var recordInterval: Int64 = 100_000_000
        /// Times since the start (ns) at which the report gives the error.
        public var checkpoints: [Int64] = [1, 2, 5, 10, 30, 60, 120].map { $0 * 1_000_000_000 }
        /// Extra delays injected into particular exchanges.
        public var spikes: [Spike] = []

        public init(profile: NetworkPath, duration: Int64 = 60_000_000_000, seed: UInt64 = 1) {
            self.profile = profile
            self.duration = duration
            self.seed = seed
        }
    }

    /// An extra delay on one exchange (by ping sequence number, from 0): a queue that suddenly filled.
    public struct Spike: Sendable, Hashable {
        public var sequence: Int
        public var up: Int64
        public var down: Int64
        public init(sequence: Int, up: Int64 = 0, down: Int64 = 0) {
            self.sequence = sequence
            self.up = up
            self.down = down
        }
    }

    /// The estimate's error at one instant.
    public struct Point: Sendable, Hashable {
        /// Time since the start of the simulation (ns).
        public var time: Int64
        /// Estimated minus true session time (ns).
        public var error: Int64
        /// The estimator's error bound at that instant (ns).
        public var errorBound: Int64
    }

    /// The outcome of one simulation.
    public struct Report: Sendable {
        public var profileName: String
        public var seed: UInt64
        public var duration: Int64
        public var trueDriftPPM: Double
        /// The peer's true clock offset at the start (ns).
        public var peerOffset: Int64
        /// Every evaluation, in time order: the regular grid, checkpoints, and both sides of every sample.
        public var trace: [Point]
        /// The error at each configured checkpoint within the duration.
        public var checkpoints: [Point]
        /// The estimator's state at the end.
        public var finalError: Int64?
        public var finalErrorBound: Int64?
        public var finalUncertainty: Int64?
        public var minimumRoundTrip: Int64?
        public var estimatedDriftPPM: Double?
        public var pingsSent: Int
        public var pongsReceived: Int
        /// Pings or pongs the network path dropped.
        public var lost: Int
        public var rejectedSamples: Int

        /// The largest |error| at or after `time` (ns since start), or nil if nothing was evaluated then.
        public func maxAbsError(after time: Int64) -> Int64? {
            trace.lazy.filter { $0.time >= time }.map { abs($0.error) }.max()
        }

        /// The error range (min, max) at or after `time`.
        public func errorRange(after time: Int64) -> (min: Int64, max: Int64)? {
            let errors = trace.lazy.filter { $0.time >= time }.map(\.error)
            guard let lo = errors.min(), let hi = errors.max() else { return nil }
            return (lo, hi)
        }

        /// The earliest time (ns since start) from which |error| stays within `threshold` to the end, or nil.
        public func settleTime(within threshold: Int64) -> Int64? {
            guard let last = trace.last, abs(last.error) <= threshold else { return nil }
            var settle = last.time
            for point in trace.reversed() {
                if abs(point.error) > threshold { break }
                settle = point.time
            }
            return settle
        }

        /// Whether the error bound covered |error| at every evaluation at or after `time`.
        public func boundHolds(after time: Int64) -> Bool {
            trace.allSatisfy { $0.time < time || abs($0.error) <= $0.errorBound }
        }

        /// The error at checkpoint `time`, if it was evaluated.
        public func error(at time: Int64) -> Int64? { checkpoints.first { $0.time == time }?.error }
    }

    /// Runs one simulation.
    public static func run(_ configuration: Configuration) -> Report {
        let start: Int64 = 1_000_000_000_000  // the authority has been up a while; session time = true time
        let end = start + configuration.duration
        // True time → the peer's local clock.
        let skew = ClockMapping(localAnchor: LocalInstant(nanoseconds: start),
                                sessionAnchor: SessionInstant(nanoseconds: start &+ configuration.peerOffset),
                                rate: 1 + configuration.peerDriftPPM / 1_000_000)
        func local(_ trueTime: Int64) -> LocalInstant {
            LocalInstant(nanoseconds: skew.sessionTime(atLocal: LocalInstant(nanoseconds: trueTime)).nanoseconds)
        }

        var rng = SeededRandom(seed: configuration.seed)
        var estimator = ClockSyncEstimator(configuration: configuration.estimator)
        var trace: [Point] = []
        var checkpoints: [Point] = []
        var inFlight: [(arrival: Int64, t1: LocalInstant, t2: Int64, t3: Int64)] = []
        var lastPing: LocalInstant?
        var sequence = 0, received = 0, lost = 0
        var nextRecord = start
        var pendingCheckpoints = configuration.checkpoints.filter { $0 <= configuration.duration }.sorted()
        let spikes = Dictionary(configuration.spikes.map { ($0.sequence, $0) }, uniquingKeysWith: { a, _ in a })

        func evaluate(_ now: Int64) -> Point? {
            let localNow = local(now)
            guard let estimate = estimator.sessionTime(atLocal: localNow),
                  let bound = estimator.errorBound(atLocal: localNow) else { return nil }
            return Point(time: now - start, error: estimate.nanoseconds - now, errorBound: bound.nanoseconds)
        }

        var now = start
        while true {
            let nextPingLocal = estimator.nextPingTime(lastPing: lastPing)
            var nextPing = nextPingLocal.nanoseconds == Int64.min
                ? now : skew.localTime(atSession: SessionInstant(nanoseconds: nextPingLocal.nanoseconds)).nanoseconds
            if nextPing < now { nextPing = now }
            let nextArrival = inFlight.map(\.arrival).min() ?? Int64.max
            let nextCheckpoint = pendingCheckpoints.first.map { start + $0 } ?? Int64.max
            now = min(nextPing, nextArrival, nextRecord, nextCheckpoint, end)

            // Pongs arriving now.
            while let index = inFlight.indices.min(by: { inFlight[$0].arrival < inFlight[$1].arrival }),
                  inFlight[index].arrival <= now {
                let pong = inFlight.remove(at: index)
                if let before = evaluate(now) { trace.append(before) }
                // Session time is true time here (the authority's clock).
                estimator.add(ClockSample(t1: pong.t1, t2: SessionInstant(nanoseconds: pong.t2),
                                          t3: SessionInstant(nanoseconds: pong.t3), t4: local(now)))
                received += 1
                if let after = evaluate(now) { trace.append(after) }
            }
            if now == nextRecord {
                if let point = evaluate(now) { trace.append(point) }
                nextRecord += configuration.recordInterval
            }
            if now == nextCheckpoint {
                pendingCheckpoints.removeFirst()
                if let point = evaluate(now) { checkpoints.append(point); trace.append(point) }
            }
            if now >= end { break }
            if now == nextPing {
                let t1 = local(now)
                let spike = spikes[sequence]
                let up = configuration.profile.up.sample(using: &rng)
                let down = configuration.profile.down.sample(using: &rng)
                estimator.pingSent()
                lastPing = t1
                sequence += 1
                if let up, let down {
                    let t2 = now + up + (spike?.up ?? 0)
                    let t3 = t2 + configuration.turnaround
                    inFlight.append((t3 + down + (spike?.down ?? 0), t1, t2, t3))
                } else {
                    lost += 1
                }
            }
        }
        let final = evaluate(end)
        return Report(profileName: configuration.profile.name, seed: configuration.seed,
                      duration: configuration.duration, trueDriftPPM: configuration.peerDriftPPM,
                      peerOffset: configuration.peerOffset,
                      trace: trace, checkpoints: checkpoints, finalError: final?.error,
                      finalErrorBound: final?.errorBound, finalUncertainty: estimator.uncertainty?.nanoseconds,
                      minimumRoundTrip: estimator.roundTrip?.nanoseconds, estimatedDriftPPM: estimator.driftPPM,
                      pingsSent: sequence, pongsReceived: received, lost: lost,
                      rejectedSamples: estimator.rejectedCount)
    }

    /// Runs `runs` seeds (`seed`, `seed + 1`, …) of each profile for `duration` seconds and formats the table.
    public static func benchmark(profiles: [NetworkPath], duration: Double = 60, seed: UInt64 = 1,
                                 runs: Int = 1) -> String {
        let groups = profiles.map { profile in
            (0..<max(1, runs)).map { run in
                Self.run(Configuration(profile: profile, duration: TimeSpan.seconds(duration).nanoseconds,
                                       seed: seed &+ UInt64(run)))
            }
        }
        return formatTable(groups)
    }

    /// Formats reports as a table, one row per group (a profile over one or more seeds; worst case shown).
    ///
    /// Columns: error at 1, 5 and 30 s; the largest |error| from 5 s and from 30 s on; the final error bound
    /// and the regression part of it; the estimated drift against the true one; pings sent and lost.
    public static func formatTable(_ groups: [[Report]]) -> String {
        var table = TextTable(["link", "seeds", "|err| 1 s", "|err| 5 s", "|err| 30 s", "max ≥5 s", "max ≥30 s",
                               "bound", "±stat", "drift ppm", "pings", "lost"], rightAligned: Set(1...11), rule: "-")
        for group in groups where !group.isEmpty {
            func worst(_ value: (Report) -> Int64?) -> String {
                let values = group.compactMap(value)
                return values.count == group.count ? formatDuration(values.max()!) : "–"
            }
            let driftErrors = group.compactMap { r in r.estimatedDriftPPM.map { ($0, abs($0 - r.trueDriftPPM)) } }
            let drift = driftErrors.max { $0.1 < $1.1 }.map { String(format: "%.2f (%.0f)", $0.0, group[0].trueDriftPPM) } ?? "–"
            table.add([
                group[0].profileName,
                "\(group.count)",
                worst { $0.error(at: 1_000_000_000).map(abs) },
                worst { $0.error(at: 5_000_000_000).map(abs) },
                worst { $0.error(at: 30_000_000_000).map(abs) },
                worst { $0.maxAbsError(after: 5_000_000_000) },
                worst { $0.maxAbsError(after: 30_000_000_000) },
                worst(\.finalErrorBound),
                worst(\.finalUncertainty),
                drift,
                "\(group.map(\.pingsSent).reduce(0, +) / group.count)",
                "\(group.map(\.lost).reduce(0, +) / group.count)",
            ])
        }
        var out = table.rendered + "\n"
        if let first = groups.first?.first {
            out += String(format: "(peer clock %+.0f s and %+.0f ppm off; %.0f s simulated; ",
                          TimeSpan(nanoseconds: first.peerOffset).seconds, first.trueDriftPPM, TimeSpan(nanoseconds: first.duration).seconds)
            out += "error = estimated − true session time; worst over seeds)\n"
        }
        return out
    }

    /// A duration (ns) in the unit that reads best: ns, µs, ms or s.
    public static func formatDuration(_ ns: Int64) -> String {
        let magnitude = abs(ns)
        if magnitude < 1_000 { return "\(ns) ns" }
        if magnitude < 1_000_000 { return String(format: "%.1f µs", Double(ns) / 1_000) }
        if magnitude < 1_000_000_000 { return String(format: "%.3f ms", Double(ns) / 1_000_000) }
        return String(format: "%.3f s", Double(ns) / 1_000_000_000)
    }
}
