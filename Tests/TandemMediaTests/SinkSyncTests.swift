import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// Sinks the user names that would not wait on the clock (fakesink's default sync=false, or sync=false given):
/// the player makes them wait, says so, and its position stays on the clock. Serialized: timing checks.
@Suite("User-given sinks wait on the clock", .serialized)
struct SinkSyncTests {
    static func player(video: String, audio: String) throws -> GStreamerPlayer {
        try GStreamerPlayer(configuration: .init(videoSink: .description(video), audioSink: .description(audio)))
    }

    @Test("a sink that would not sync is made to, and the player says which and why; one that syncs is left alone")
    func notices() async throws {
        let plain = try Self.player(video: "fakesink", audio: "fakesink sync=true")
        #expect(plain.sinkNotices == ["the video sink 'fakesink' did not sync to the clock; Tandem set sync=true on "
            + "fakesink (a sink that runs ahead of the clock puts this player ahead of the group)"])
        await plain.close()

        // A chain, sync=false given explicitly, and an audio sink: each named once.
        let told = try Self.player(video: "videoconvert ! fakesink sync=false",
                                   audio: "tee name=t ! queue ! fakesink t. ! queue ! fakesink sync=0")
        #expect(told.sinkNotices.count == 2)
        let video = try #require(told.sinkNotices.first)
        #expect(video.hasPrefix("the video sink 'videoconvert ! fakesink sync=false' was told not to sync to the clock "
            + "(sync=false); Tandem set sync=true on fakesink "), "\(video)")
        let audio = try #require(told.sinkNotices.last)
        #expect(audio.hasPrefix("the audio sink 'tee name=t ! queue ! fakesink t. ! queue ! fakesink sync=0' was told not "
            + "to sync to the clock (sync=false); Tandem set sync=true on fakesink "), "\(audio)")
        await told.close()

        for quiet in [try GStreamerPlayer(configuration: .headless), try Self.player(video: "videoconvert ! fakesink sync=true",
                                                                                     audio: "appsink")] {
            #expect(quiet.sinkNotices.isEmpty, "\(quiet.sinkNotices)")
            await quiet.close()
        }
    }

    @Test("with unsynchronised fakesinks (a chain for video, sync=false for audio) frames render on time, the position follows the clock and a pause lands where playback is")
    func unsyncedSinksPlayOnTime() async throws {
        let player = try Self.player(video: "videoconvert ! fakesink", audio: "fakesink sync=false")
        #expect(player.sinkNotices.count == 2)
        _ = try await player.load(Samples.countdown)
        let from = TimeSpan.seconds(2).nanoseconds
        let start = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: from), atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        // Without the fix the sinks ran through the 40 s file within about two seconds of playing.
        var worst: Int64 = 0
        for _ in 0..<12 {
            try await sleep(ms: 400)
            let position = try #require(player.currentItemTime()?.nanoseconds)
            let expected = from + (player.sessionTimeNow().nanoseconds - start)
            worst = max(worst, abs(position - expected))
        }
        #expect(worst < TimeSpan.milliseconds(150).nanoseconds, "position off the clock by up to \(worst / 1_000_000) ms")

        let expectedAtPause = from + (player.sessionTimeNow().nanoseconds - start)
        let held = try await player.pause().nanoseconds
        #expect(abs(held - expectedAtPause) < TimeSpan.milliseconds(250).nanoseconds,
                "paused at \(held / 1_000_000) ms, playback was at \(expectedAtPause / 1_000_000) ms")
        // Ground truth: every frame was released when the clock reached its item time (identity calibration:
        // session time is CLOCK_MONOTONIC), none early — an unsynchronised sink releases them seconds ahead.
        let video = player.renderProbe.drain().filter { $0.kind == .video && $0.isExact }
        #expect(video.count > 60)
        let early = video.map { (start + ($0.itemTime - from)) - $0.monotonicTime }.max() ?? .max
        #expect(early < TimeSpan.milliseconds(20).nanoseconds, "a frame rendered \(early / 1_000_000) ms early")
        #expect((video.map(\.itemTime).max() ?? .max) <= held + TimeSpan.milliseconds(100).nanoseconds)
        await player.close()
    }
}
