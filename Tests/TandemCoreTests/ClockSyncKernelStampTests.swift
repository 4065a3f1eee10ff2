import Foundation
import Testing
import TandemCore
import TandemTesting

/// `ClockSyncEstimator` fed with exchanges whose receive times are the kernel's arrival stamps, against the same
/// exchanges stamped by the receiving event loops (time is input: a manual clock walks the true time).
@Suite struct ClockSyncKernelStampTests {
    /// The peer's clock: 7 s and 150 ppm off session time.
    static let skew = ClockMapping(localAnchor: 0, sessionAnchor: 7_000_000_000, rate: 1.00015)

    static func local(_ trueTime: Int64) -> LocalInstant {
        LocalInstant(nanoseconds: skew.sessionTime(atLocal: LocalInstant(nanoseconds: trueTime)).nanoseconds)
    }

    static func exponential(mean: Double, _ rng: inout SeededRandom) -> Int64 {
        Int64(-mean * log(1 - Double.random(in: 0..<1, using: &rng)))
    }

    /// One datagram exchange sent at true time `sent` (the authority's clock is true time): a few microseconds in
    /// the kernel each way, then a wake-up of the receiving loop — short on the server, long and irregular on a
    /// busy peer. The server stamps t3 after its loop has read the ping either way; `kernel` says whether the two
    /// receive times are the kernel's stamps or the loops' readings.
    static func exchange(sentAt sent: Int64, kernel: Bool, _ rng: inout SeededRandom) -> ClockSample {
        let up = 8_000 + exponential(mean: 2_000, &rng)
        let down = 8_000 + exponential(mean: 2_000, &rng)
        let serverWake = 15_000 + exponential(mean: 20_000, &rng)
        let peerWake = 120_000 + exponential(mean: 200_000, &rng)
        let arrived = sent + up
        let t3 = arrived + serverWake + 10_000
        let answered = t3 + down
        return ClockSample(t1: local(sent), t2: SessionInstant(nanoseconds: kernel ? arrived : arrived + serverWake),
                           t3: SessionInstant(nanoseconds: t3),
                           t4: local(kernel ? answered : answered + peerWake), arrival: kernel ? .kernel : .user)
    }

    /// An estimator fed `count` exchanges 200 ms apart (`kernel(i)`: the i-th is kernel-stamped), and its error at
    /// the end (estimated − true session time).
    static func run(count: Int = 300, seed: UInt64, kernel: (Int) -> Bool) -> (ClockSyncEstimator, Int64) {
        var estimator = ClockSyncEstimator()
        var rng = SeededRandom(seed: seed)
        let clock = ManualClock(1_000_000_000_000)
        for i in 0..<count {
            estimator.pingSent()
            estimator.add(exchange(sentAt: clock.now.nanoseconds, kernel: kernel(i), &rng))
            clock.advance(by: .milliseconds(200))
        }
        let now = clock.now.nanoseconds
        let estimate = estimator.sessionTime(atLocal: local(now))!.nanoseconds
        return (estimator, estimate - now)
    }

    @Test("kernel receive stamps take the loops' wake-ups out of the estimate")
    func kernelStampsRemoveTheWakeUps() {
        for seed in UInt64(1)...4 {
            let (kernel, kernelError) = Self.run(seed: seed) { _ in true }
            let (user, userError) = Self.run(seed: seed) { _ in false }
            // The loops' stamps leave half the difference of the two least wake-ups, (15 − 120) / 2 µs, in the
            // offset; the kernel's leave the path's few microseconds of symmetric noise.
            #expect(abs(kernelError) < 5_000, "seed \(seed): kernel-stamped error \(kernelError) ns")
            #expect(abs(userError) > 30_000, "seed \(seed): loop-stamped error \(userError) ns")
            #expect(kernel.arrivalStamps == .kernel && kernel.kernelStampedCount == kernel.samples.count)
            #expect(user.arrivalStamps == .user && user.kernelStampedCount == 0)
            #expect(kernel.errorBound! < user.errorBound!)
        }
    }

    @Test("among loop-stamped samples (the TCP path's), the kernel-stamped ones set the estimate and say so")
    func mixedSamplesRestOnTheKernelStamps() {
        let (estimator, error) = Self.run(seed: 9) { $0.isMultiple(of: 2) }
        #expect(abs(error) < 5_000, "error \(error) ns")
        #expect(estimator.arrivalStamps == .kernel)
        #expect(estimator.kernelStampedCount > 0 && estimator.kernelStampedCount < estimator.samples.count)
    }

    @Test func emptyEstimatorReportsNoStampSource() {
        let estimator = ClockSyncEstimator()
        #expect(estimator.arrivalStamps == nil && estimator.kernelStampedCount == 0)
    }

    @Test func samplesWithoutAnArrivalSourceDecodeAsLoopStamped() throws {
        let json = #"{"t1":1,"t2":2,"t3":3,"t4":4}"#
        let sample = try JSONDecoder().decode(ClockSample.self, from: Data(json.utf8))
        #expect(sample.arrival == .user)
        let stamped = ClockSample(t1: 1, t2: 2, t3: 3, t4: 4, arrival: .kernel)
        #expect(try JSONDecoder().decode(ClockSample.self, from: JSONEncoder().encode(stamped)) == stamped)
    }
}
