import Foundation
import Testing
import TandemCore
@testable import TandemMedia

@Suite("MediaProbe")
struct MediaProbeTests {
    @Test("the countdown sample: WebM with VP8 320x240 at 30 fps and stereo Opus, 40 s")
    func countdown() async throws {
        let probe = try await MediaProbe.probe(Samples.countdown)
        #expect(((probe.duration ?? .zero) - .seconds(40)).magnitude < .milliseconds(50))
        #expect(probe.isSeekable)
        let video = try #require(probe.streams.first { $0.kind == .video })
        #expect(video.codec.contains("VP8"))
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frameRate == 30)
        let audio = try #require(probe.streams.first { $0.kind == .audio })
        #expect(audio.codec.contains("Opus"))
        #expect(audio.channels == 2 && audio.sampleRate == 48000)
        #expect(probe.container?.contains("WebM") == true)
    }

    @Test("audio only, and a different duration")
    func otherSamples() async throws {
        let opus = try await MediaProbe.probe(Samples.countdownOpus)
        #expect(opus.hasAudio && !opus.hasVideo)
        let short = try await MediaProbe.probe(Samples.short)
        #expect(((short.duration ?? .zero) - .seconds(25)).magnitude < .milliseconds(50))
    }

    @Test("bad input gets typed errors")
    func badInput() async throws {
        await #expect(throws: PlaybackError.notMedia(path: Samples.notMedia)) {
            _ = try await MediaProbe.probe(Samples.notMedia)
        }
        await #expect(throws: PlaybackError.noSuchFile(path: "/nonexistent.webm")) {
            _ = try await MediaProbe.probe("/nonexistent.webm")
        }
        await #expect(throws: PlaybackError.unsupportedScheme("gopher")) {
            _ = try await MediaProbe.probe("gopher://example.invalid/x")
        }
    }
}

@Suite("Clock calibration plan")
struct ClockCalibrationPlanTests {
    let ms = TimeSpan.milliseconds(1)

    @Test("not playing: step")
    func stepWhenPaused() {
        let plan = ClockCalibrationPlan.plan(current: .identity, target: .offset(5 * ms), now: .milliseconds(1_000),
                                             isPlaying: false, stepThreshold: 20 * ms, slewDuration: 1_000 * ms)
        #expect(plan == .step(ClockMapping.offset(5 * ms).reanchored(atLocal: .milliseconds(1_000))))
    }

    @Test("playing, small error: slew continuously, meeting the target after the slew")
    func slewWhenSmall() {
        let now = LocalInstant.milliseconds(1_000)
        let plan = ClockCalibrationPlan.plan(current: .identity, target: .offset(10 * ms), now: now,
                                             isPlaying: true, stepThreshold: 20 * ms, slewDuration: 1_000 * ms)
        guard case .slew(let slewing, let duration, let target) = plan else {
            Issue.record("expected a slew, got \(plan)")
            return
        }
        #expect(slewing.sessionTime(atLocal: now).nanoseconds == now.nanoseconds)  // no step
        let end = now + duration
        #expect((slewing.sessionTime(atLocal: end) - target.sessionTime(atLocal: end)).magnitude <= 1)
        #expect(abs(slewing.rate - 1.01) < 1e-9)
    }

    @Test("playing, large error: step")
    func stepWhenLarge() {
        let plan = ClockCalibrationPlan.plan(current: .identity, target: .offset(-50 * ms), now: .milliseconds(1_000),
                                             isPlaying: true, stepThreshold: 20 * ms, slewDuration: 1_000 * ms)
        guard case .step = plan else {
            Issue.record("expected a step, got \(plan)")
            return
        }
    }
}
