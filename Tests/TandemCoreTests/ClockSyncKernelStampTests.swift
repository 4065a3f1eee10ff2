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
        #expect(estimator.departureStamps == nil)
    }

    /// One exchange with kernel receive stamps whose send times are read before each side seals and sends its
    /// datagram — a busy peer takes longer than the server — or are the kernels' transmit stamps (`sent`).
    static func exchange(readAt read: Int64, sendStamps: Bool, _ rng: inout SeededRandom) -> ClockSample {
        let peerSend = 40_000 + exponential(mean: 30_000, &rng)
        let serverSend = 8_000 + exponential(mean: 4_000, &rng)
        let left = read + peerSend
        let arrived = left + 8_000 + exponential(mean: 2_000, &rng)
        let t3Read = arrived + 15_000 + exponential(mean: 20_000, &rng)
        let answerLeft = t3Read + serverSend
        let answered = answerLeft + 8_000 + exponential(mean: 2_000, &rng)
        return ClockSample(t1: local(sendStamps ? left : read), t2: SessionInstant(nanoseconds: arrived),
                           t3: SessionInstant(nanoseconds: sendStamps ? answerLeft : t3Read),
                           t4: local(answered), arrival: .kernel, departure: sendStamps ? .kernel : .user)
    }

    @Test("send stamps take the time each side spends sealing and sending out of the estimate, and say so")
    func sendStampsRemoveTheSendSide() {
        for seed in UInt64(1)...4 {
            var errors: [Bool: Int64] = [:]
            for sendStamps in [true, false] {
                var estimator = ClockSyncEstimator()
                var rng = SeededRandom(seed: seed)
                let clock = ManualClock(1_000_000_000_000)
                for _ in 0..<300 {
                    estimator.pingSent()
                    estimator.add(Self.exchange(readAt: clock.now.nanoseconds, sendStamps: sendStamps, &rng))
                    clock.advance(by: .milliseconds(200))
                }
                let now = clock.now.nanoseconds
                errors[sendStamps] = estimator.sessionTime(atLocal: Self.local(now))!.nanoseconds - now
                #expect(estimator.departureStamps == (sendStamps ? .kernel : .user))
            }
            // Read before sending, the peer's t1 is early by its 40 µs floor and the server's t3 by its 8 µs: half
            // the difference (16 µs) stays in the offset. The transmit stamps leave the path's symmetric noise.
            #expect(abs(errors[true]!) < 5_000, "seed \(seed): send-stamped error \(errors[true]!) ns")
            #expect(abs(errors[false]!) > 10_000, "seed \(seed): error with the times read before sending \(errors[false]!) ns")
        }
    }

    @Test func aSampleDecodedWithoutADepartureTookItsTimesFromTheClock() throws {
        let json = #"{"t1":1,"t2":2,"t3":3,"t4":4,"arrival":"kernel"}"#
        let sample = try JSONDecoder().decode(ClockSample.self, from: Data(json.utf8))
        #expect(sample.arrival == .kernel && sample.departure == .user)
        let again = try JSONDecoder().decode(ClockSample.self, from: try JSONEncoder().encode(
            ClockSample(t1: LocalInstant(nanoseconds: 1), t2: SessionInstant(nanoseconds: 2),
                        t3: SessionInstant(nanoseconds: 3), t4: LocalInstant(nanoseconds: 4), arrival: .kernel,
                        departure: .kernel)))
        #expect(again.departure == .kernel)
    }

    @Test func samplesWithoutAnArrivalSourceDecodeAsLoopStamped() throws {
        let json = #"{"t1":1,"t2":2,"t3":3,"t4":4}"#
        let sample = try JSONDecoder().decode(ClockSample.self, from: Data(json.utf8))
        #expect(sample.arrival == .user)
        let stamped = ClockSample(t1: 1, t2: 2, t3: 3, t4: 4, arrival: .kernel)
        #expect(try JSONDecoder().decode(ClockSample.self, from: JSONEncoder().encode(stamped)) == stamped)
    }
}
