import Tandem
import Testing
import TandemBench

@Suite("Baseline rules")
struct BaselineRulesTests {
    typealias Syncplay = BaselineRules.Syncplay
    typealias Jellyfin = BaselineRules.Jellyfin

    @Test("Syncplay smooths the round trip and forwards the server's position by half of it")
    func syncplayPosition() {
        #expect(Syncplay.smoothedRoundTrip(nil, sample: 100) == 100)
        #expect(Syncplay.smoothedRoundTrip(100, sample: 200) == 125)
        #expect(Syncplay.globalPosition(serverPosition: 1_000, rate: 1, smoothedRoundTrip: 200, sinceArrival: 50) == 1_150)
        #expect(Syncplay.globalPosition(serverPosition: 1_000, rate: 2, smoothedRoundTrip: 0, sinceArrival: 50) == 1_100)
    }

    @Test("Syncplay slows down past 1.5 s ahead, seeks back past 4 s, resets near the group")
    func syncplayCorrections() {
        let s: Int64 = 1_000_000_000
        #expect(Syncplay.correction(position: 10 * s, global: 10 * s, slowedDown: false) == .none)
        #expect(Syncplay.correction(position: 12 * s, global: 10 * s, slowedDown: false) == .slowDown)
        #expect(Syncplay.correction(position: 12 * s, global: 10 * s, slowedDown: true) == .none)
        #expect(Syncplay.correction(position: 15 * s, global: 10 * s, slowedDown: false) == .seek(to: 10 * s))
        #expect(Syncplay.correction(position: 10 * s, global: 10 * s, slowedDown: true) == .resetSpeed)
        // Behind is never corrected.
        #expect(Syncplay.correction(position: 0, global: 10 * s, slowedDown: false) == .none)
    }

    @Test("Jellyfin's lead, offset from the fastest of the last eight samples, speed and skip corrections")
    func jellyfin() {
        let ms: Int64 = 1_000_000
        #expect(Jellyfin.lead(ping: 100 * ms) == 500 * ms)
        #expect(Jellyfin.lead(ping: 400 * ms) == 800 * ms)
        let samples = (0..<10).map { i in
            ClockSample(t1: 0, t2: SessionInstant(nanoseconds: Int64(i)), t3: SessionInstant(nanoseconds: Int64(i)),
                        t4: LocalInstant(nanoseconds: i == 0 ? 1 : 1_000 + Int64(i)))
        }
        // The fastest exchange (index 0) has dropped out of the window; the fastest left is index 2.
        #expect(Jellyfin.offset(samples) == samples[2].offset.nanoseconds)
        #expect(Jellyfin.offset([]) == nil)
        #expect(Jellyfin.correction(position: 0, expected: 10 * ms) == .none)
        #expect(Jellyfin.correction(position: 0, expected: 100 * ms) == .speed(1.1))
        #expect(Jellyfin.correction(position: 500 * ms, expected: 0) == .skip(to: 0))
    }
}
