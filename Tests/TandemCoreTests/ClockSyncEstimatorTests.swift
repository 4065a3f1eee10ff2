import Testing
import TandemCore
import TandemTesting

/// Unit tests of `ClockSyncEstimator` fed with hand-made exchanges.
@Suite struct ClockSyncEstimatorTests {
    /// A peer clock `+1 h` and `+200 ppm` off true (= session) time, as in the issue.
    static let skew = ClockMapping(localAnchor: 0, sessionAnchor: 3_600_000_000_000, rate: 1.0002)

    /// The exchange a ping sent at true time `sent` makes over the given one-way delays.
    static func exchange(sentAt sent: Int64, up: Int64, down: Int64, turnaround: Int64 = 20_000,
                         authorityShift: Int64 = 0) -> ClockSample {
        let t2 = sent + up
        let t3 = t2 + turnaround
        return ClockSample(t1: LocalInstant(nanoseconds: skew.sessionNanos(atLocal: sent)),
                           t2: SessionInstant(nanoseconds: t2 + authorityShift),
                           t3: SessionInstant(nanoseconds: t3 + authorityShift),
                           t4: LocalInstant(nanoseconds: skew.sessionNanos(atLocal: t3 + down)))
    }

    /// The estimate's error (estimated − true session time) at true time `trueTime`.
    static func error(_ estimator: ClockSyncEstimator, at trueTime: Int64) -> Int64? {
        estimator.sessionTime(atLocal: LocalInstant(nanoseconds: skew.sessionNanos(atLocal: trueTime)))
            .map { $0.nanoseconds - trueTime }
    }

    /// An estimator fed `count` exchanges a second apart with seeded LAN-like jitter, from true time 1000 s.
    static func converged(count: Int = 60, seed: UInt64 = 7) -> (ClockSyncEstimator, Int64) {
        var estimator = ClockSyncEstimator()
        var rng = SeededRandom(seed: seed)
        var t: Int64 = 1_000_000_000_000
        for _ in 0..<count {
            let up = NetworkPath.lan.up.sample(using: &rng)!
            let down = NetworkPath.lan.down.sample(using: &rng)!
            estimator.pingSent()
            estimator.add(exchange(sentAt: t, up: up, down: down))
            t += 1_000_000_000
        }
        return (estimator, t)
    }

    @Test func emptyEstimatorKnowsNothingAndAsksForAPingNow() {
        let estimator = ClockSyncEstimator()
        #expect(estimator.mapping == nil)
        #expect(estimator.errorBound == nil)
        #expect(estimator.roundTrip == nil)
        #expect(estimator.driftPPM == nil)
        #expect(estimator.nextPingTime(lastPing: nil).nanoseconds == Int64.min)
    }

    @Test func scheduleIsBurstThenAcquisitionThenSteady() {
        var estimator = ClockSyncEstimator()
        let c = estimator.configuration
        var intervals: [TimeSpan] = []
        var last = LocalInstant.zero
        for _ in 0..<(c.burstCount + c.acquisitionCount + 3) {
            estimator.pingSent()
            let next = estimator.nextPingTime(lastPing: last)
            intervals.append(next - last)
            last = next
        }
        // No pong ever came back, so the estimate never firmed up and acquisition ran its full length.
        #expect(intervals.prefix(c.burstCount - 1).allSatisfy { $0 == c.burstInterval })
        #expect(intervals.dropFirst(c.burstCount - 1).prefix(c.acquisitionCount).allSatisfy { $0 == c.acquisitionInterval })
        #expect(intervals.suffix(2).allSatisfy { $0 == c.steadyInterval })
        #expect(c.burstInterval < c.acquisitionInterval && c.acquisitionInterval < c.steadyInterval)
    }

    @Test func acquisitionEndsEarlyOnceTheEstimateIsFirm() {
        // A jitter-free LAN: the estimate is exact after a few samples, so fast pinging stops early.
        var estimator = ClockSyncEstimator()
        var t: Int64 = 1_000_000_000_000
        var pings = 0
        while estimator.currentInterval != estimator.currentSteadyInterval && pings < 1_000 {
            estimator.pingSent()
            pings += 1
            estimator.add(Self.exchange(sentAt: t, up: 500_000, down: 500_000))
            t += estimator.currentInterval.nanoseconds
        }
        #expect(pings < estimator.configuration.burstCount + estimator.configuration.acquisitionCount / 4)
    }

    @Test func oneSampleGivesTheOffsetAndABoundOfHalfTheRoundTrip() {
        var estimator = ClockSyncEstimator()
        let sample = Self.exchange(sentAt: 1_000_000_000_000, up: 30_000_000, down: 70_000_000)
        estimator.add(sample)
        #expect(estimator.mapping?.offset(atLocal: sample.localMidpoint) == sample.offset)
        #expect(estimator.roundTrip == sample.roundTrip)
        #expect(estimator.errorBound! >= 50_000_000)
        // 30 ms up, 70 ms back: the estimate is 20 ms early, and the bound says it may be.
        let error = Self.error(estimator, at: 1_000_000_000_000 + 50_000_000)!
        #expect(abs(error + 20_000_000) < 1_000)
        #expect(estimator.errorBound!.nanoseconds >= abs(error))
    }

    /// A starved sender's first pings leave late (80 and 30 ms on a 150 ms path, 50 ms apart, as a burst's do);
    /// the third gets through on time. With a clean exchange in hand the estimate rests on it: the few early
    /// points must not tilt the fitted line, which no clock's drift could (a 300 ms round trip keeps the error
    /// bound far above this, so only the estimate itself can tell).
    @Test func aStallOnOneLegDoesNotTiltTheEarlyEstimate() {
        var estimator = ClockSyncEstimator()
        let start: Int64 = 1_000_000_000_000
        let spacing: Int64 = 50_000_000
        let lateUp: [Int64] = [80_000_000, 30_000_000, 0]
        for (i, late) in lateUp.enumerated() {
            estimator.pingSent()
            estimator.add(Self.exchange(sentAt: start + Int64(i) * spacing, up: 150_000_000 + late, down: 150_000_000))
        }
        let now = start + 2 * spacing + 300_000_000
        let error = Self.error(estimator, at: now)!
        #expect(abs(error) < 100_000, "off by \(error) ns with an on-time exchange in hand")
        #expect(abs(estimator.driftPPM!) < 2_000, "a drift of \(estimator.driftPPM!) ppm from 100 ms of samples")
    }

    @Test func recoversOffsetAndDriftExactlyOnAQuietLink() {
        var estimator = ClockSyncEstimator()
        var t: Int64 = 1_000_000_000_000
        for _ in 0..<40 {
            estimator.pingSent()
            estimator.add(Self.exchange(sentAt: t, up: 400_000, down: 400_000))
            t += 500_000_000
        }
        #expect(abs(Self.error(estimator, at: t)!) <= 2)
        #expect(abs(Self.error(estimator, at: t + 10_000_000_000)!) <= 20)
        #expect(abs(estimator.driftPPM! - 200) < 0.01)
        #expect(estimator.rejectedCount == 0)
    }

    @Test func driftIsEstimatedWithinAFewPPMUnderJitter() {
        let (estimator, t) = Self.converged()
        #expect(abs(estimator.driftPPM! - 200) < 2)
        #expect(estimator.driftUncertaintyPPM! < 5)
        #expect(abs(Self.error(estimator, at: t)!) < 20_000)
    }

    @Test(arguments: [(Int64(500_000_000), Int64(0)), (0, 500_000_000), (250_000_000, 250_000_000)])
    func delaySpikeDoesNotMoveTheEstimate(up extraUp: Int64, down extraDown: Int64) {
        let (clean, t) = Self.converged()
        var spiked = clean
        spiked.add(Self.exchange(sentAt: t, up: 500_000 + extraUp, down: 500_000 + extraDown))
        let probe = LocalInstant(nanoseconds: Self.skew.sessionNanos(atLocal: t + 1_000_000_000))
        let moved = spiked.sessionTime(atLocal: probe)! - clean.sessionTime(atLocal: probe)!
        #expect(moved.magnitude <= 1_000, "a 500 ms spike moved the estimate by \(moved)")
        #expect(spiked.roundTrip == clean.roundTrip)
    }

    @Test func corruptedTimestampsAreRejected() {
        // Normal round trip, but the authority's stamps are 500 ms off: the round trip cannot flag it,
        // the disagreement with every other sample does.
        let (clean, t) = Self.converged()
        var corrupted = clean
        corrupted.add(Self.exchange(sentAt: t, up: 500_000, down: 500_000, authorityShift: 500_000_000))
        let probe = LocalInstant(nanoseconds: Self.skew.sessionNanos(atLocal: t + 1_000_000_000))
        let moved = corrupted.sessionTime(atLocal: probe)! - clean.sessionTime(atLocal: probe)!
        #expect(moved.magnitude <= 1_000, "a corrupted sample moved the estimate by \(moved)")
        #expect(corrupted.rejectedCount == 1)
    }

    @Test func followsAClockStepAfterAFewConsistentSamples() {
        // The peer's monotonic clock stops for 10 s (suspend): every later offset is 10 s different.
        var (estimator, t) = Self.converged()
        let step: Int64 = 10_000_000_000
        let stepped = ClockMapping(localAnchor: 0, sessionAnchor: SessionInstant(nanoseconds: 3_600_000_000_000 - step),
                                   rate: 1.0002)
        for _ in 0..<(estimator.configuration.resetAfterRejections + 4) {
            estimator.pingSent()
            let t3 = t + 500_000 + 20_000
            estimator.add(ClockSample(t1: LocalInstant(nanoseconds: stepped.sessionNanos(atLocal: t)),
                                      t2: SessionInstant(nanoseconds: t + 500_000), t3: SessionInstant(nanoseconds: t3),
                                      t4: LocalInstant(nanoseconds: stepped.sessionNanos(atLocal: t3 + 500_000))))
            t += 1_000_000_000
        }
        #expect(estimator.resetCount == 1)
        let estimate = estimator.sessionTime(atLocal: LocalInstant(nanoseconds: stepped.sessionNanos(atLocal: t)))!
        #expect(abs(estimate.nanoseconds - t) < 100_000)
        #expect(estimator.currentInterval < estimator.currentSteadyInterval)  // pinging fast again
    }

    @Test func windowStaysBoundedAndKeepsTheNewestSamples() {
        var estimator = ClockSyncEstimator()
        var rng = SeededRandom(seed: 3)
        var t: Int64 = 1_000_000_000_000
        var last = ClockSample(t1: 0, t2: 0, t3: 0, t4: 0)
        for _ in 0..<1_000 {
            let up = NetworkPath.wan().up.sample(using: &rng) ?? 60_000_000
            let down = NetworkPath.wan().down.sample(using: &rng) ?? 60_000_000
            last = Self.exchange(sentAt: t, up: up, down: down)
            estimator.add(last)
            t += 200_000_000
        }
        #expect(estimator.samples.count <= estimator.configuration.window)
        #expect(estimator.samples.last == last)
        let oldest = estimator.samples.first!.t4
        #expect(last.t4 - oldest <= estimator.configuration.windowDuration)
    }

    /// The spread of the way back: about the 99th percentile of the answers' delay beyond the least. An exponential
    /// jitter of 5 ms mean has its 99th percentile at 23 ms, with or without a few answers a loss held back 200 ms;
    /// jitter on the way up only is not counted; a quiet path has none; it is unknown until 16 answers are in.
    @Test func returnDelaySpreadIsTheWayBacksHighPercentile() {
        func spread(up: DelayModel, down: DelayModel, count: Int, heldBackEvery: Int = 0) -> TimeSpan? {
            var estimator = ClockSyncEstimator()
            var rng = SeededRandom(seed: 11)
            var t: Int64 = 1_000_000_000_000
            for i in 0..<count {
                // An answer behind a lost segment on a stream waits for its retransmission (200 ms).
                let held: Int64 = heldBackEvery > 0 && i % heldBackEvery == heldBackEvery - 1 ? 200_000_000 : 0
                estimator.pingSent()
                estimator.add(Self.exchange(sentAt: t, up: up.sample(using: &rng)!,
                                            down: down.sample(using: &rng)! + held))
                t += 1_000_000_000
            }
            return estimator.returnDelaySpread
        }
        let jittery = DelayModel(base: 50_000_000, jitter: .exponential(mean: 5_000_000))
        let quiet = DelayModel(base: 50_000_000)
        let both = spread(up: jittery, down: jittery, count: 256)
        #expect(both.map { $0 > .milliseconds(15) && $0 < .milliseconds(35) } == true, "\(String(describing: both))")
        let held = spread(up: jittery, down: jittery, count: 256, heldBackEvery: 33)
        #expect(held.map { $0 > .milliseconds(15) && $0 < .milliseconds(35) } == true,
                "3 % of answers held back 200 ms: \(String(describing: held))")
        let upOnly = spread(up: jittery, down: quiet, count: 256)
        #expect(upOnly.map { $0 < .milliseconds(1) } == true, "\(String(describing: upOnly))")
        #expect(spread(up: quiet, down: quiet, count: 64).map { $0 < .microseconds(10) } == true)
        #expect(spread(up: jittery, down: jittery, count: 15) == nil)
        #expect(spread(up: jittery, down: jittery, count: 16) != nil)
    }

    @Test func updatesAreCheap() {
        // A full window, then many updates: benchmarks run dozens of peers, each adding about one sample a
        // second and reading the mapping on every frame.
        var estimator = ClockSyncEstimator()
        var rng = SeededRandom(seed: 5)
        var t: Int64 = 1_000_000_000_000
        let clock = ContinuousClock()
        let count = 1_000
        let elapsed = clock.measure {
            for _ in 0..<count {
                let up = NetworkPath.harsh.up.sample(using: &rng) ?? 50_000_000
                let down = NetworkPath.harsh.down.sample(using: &rng) ?? 50_000_000
                estimator.add(Self.exchange(sentAt: t, up: up, down: down))
                t += 1_000_000_000
            }
        }
        let perUpdate = elapsed / count
        print("clock sync: \(perUpdate) per update with a window of \(estimator.samples.count) samples")
        // Loose, for a shared machine: a peer adds about one sample a second. Unoptimised builds are far slower.
        #if DEBUG
        #expect(perUpdate < .milliseconds(30))
        #else
        #expect(perUpdate < .milliseconds(1))
        #endif
    }
}

private extension ClockMapping {
    /// The mapping read on plain nanoseconds (these tests use it as a true → local skew).
    func sessionNanos(atLocal t: Int64) -> Int64 { sessionTime(atLocal: LocalInstant(nanoseconds: t)).nanoseconds }
}
