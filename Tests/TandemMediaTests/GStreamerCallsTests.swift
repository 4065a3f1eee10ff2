import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// What TandemMedia now asks GStreamer for itself, where the C shim used to wrap the call.
@Suite("Direct GStreamer calls", .serialized)
struct GStreamerCallsTests {
    @Test("calibration rates become fractions over 10⁹, never below 1/10⁹")
    func rateFraction() {
        #expect(GStreamerPlayer.rateFraction(1) == (1_000_000_000, 1_000_000_000))
        #expect(GStreamerPlayer.rateFraction(1.0001) == (1_000_100_000, 1_000_000_000))
        #expect(GStreamerPlayer.rateFraction(0.5) == (500_000_000, 1_000_000_000))
        #expect(GStreamerPlayer.rateFraction(0) == (1, 1_000_000_000))
        #expect(GStreamerPlayer.rateFraction(-1) == (1, 1_000_000_000))
    }

    @Test("queries answer for a loaded pipeline and say nothing for an empty one")
    func queries() async throws {
        let player = try Samples.headlessPlayer()
        let pipeline = player.handles.pipeline
        #expect(pipeline.queryDuration() == nil)
        let info = try await player.load(Samples.countdown)
        #expect(pipeline.queryDuration() == info.duration?.nanoseconds)
        #expect(pipeline.querySeekable())
        #expect((pipeline.queryPosition() ?? -1) >= 0)
        #expect(pipeline.seek(to: TimeSpan.seconds(2).nanoseconds, rate: 1))
        await player.close()
    }

    @Test("caps that do not parse have no installer detail")
    func unparseableCaps() {
        #expect(GStreamer.missingDecoderDetail(caps: "((not caps") == nil)
    }
}
