import CTandemGStreamerShim
import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// The video window's extras on real pipelines: the on-screen display and subtitles are judged from the pixels
/// the sink received, keys from a navigation event sent up from the sink as a window sends it.
@Suite("Video window: OSD, keys, subtitles, volume, tracks, offset", .serialized)
struct PlayerWindowTests {
    /// Frames converted to RGBx and kept by the sink, so a test can read the last one.
    static func grabbingPlayer(overlay: Bool = true, subtitles: String? = nil) throws -> GStreamerPlayer {
        var configuration = GStreamerPlayer.Configuration.headless
        configuration.videoSink = .description(
            "videoconvert ! video/x-raw,format=RGBx ! fakesink sync=true qos=false max-lateness=-1 enable-last-sample=true")
        configuration.overlay = overlay
        configuration.subtitleFile = subtitles
        return try GStreamerPlayer(configuration: configuration)
    }

    struct Frame {
        var width = 0
        var height = 0
        var pixels: [UInt8] = []
        /// The item time the frame shows (ns).
        var itemTime: Int64 = -1

        /// How many pixels differ (any channel by more than 40) between this frame and `other` inside the rows
        /// `rows` and columns `columns` (fractions of the height and width).
        func differing(from other: Frame, rows: ClosedRange<Double>, columns: ClosedRange<Double> = 0...1) -> Int {
            precondition(width == other.width && height == other.height)
            let first = Int(Double(height) * rows.lowerBound)
            let last = min(height - 1, Int(Double(height) * rows.upperBound))
            let left = Int(Double(width) * columns.lowerBound)
            let right = min(width - 1, Int(Double(width) * columns.upperBound))
            var count = 0
            for y in first...last {
                for x in left...right {
                    let i = (y * width + x) * 4
                    if (0..<3).contains(where: { abs(Int(pixels[i + $0]) - Int(other.pixels[i + $0])) > 40 }) {
                        count += 1
                    }
                }
            }
            return count
        }
    }

    /// Prerolls at `seconds` and reads the frame the sink holds.
    static func frame(_ player: GStreamerPlayer, at seconds: Double) async throws -> Frame {
        try await player.prepare(at: ItemTime(nanoseconds: TimeSpan.seconds(seconds).nanoseconds), rate: 1)
        let frame = lastFrame(player)
        #expect(frame != nil, "the sink kept no frame")
        return frame ?? Frame()
    }

    /// The frame the sink rendered last.
    static func lastFrame(_ player: GStreamerPlayer) -> Frame? {
        var frame = Frame()
        frame.pixels = [UInt8](repeating: 0, count: 1920 * 1080 * 4)
        var width: Int32 = 0
        var height: Int32 = 0
        var pts: Int64 = -1
        let copied = frame.pixels.withUnsafeMutableBufferPointer {
            tdm_gst_last_frame_rgbx(player.handles.videoSink, $0.baseAddress, $0.count, &width, &height, &pts)
        }
        guard copied == 1 else { return nil }
        frame.width = Int(width)
        frame.height = Int(height)
        frame.itemTime = pts
        return frame
    }

    @Test("the on-screen display draws its text on the video, at the top, and nowhere else")
    func overlayDrawsText() async throws {
        let player = try Self.grabbingPlayer()
        _ = try await player.load(Samples.countdown)
        #expect(player.hasOverlay)
        let plain = try await Self.frame(player, at: 2)
        player.setOverlayText("bob & carol <3 paused at 0:12\nwaiting for dave (loading)")
        let withText = try await Self.frame(player, at: 2)
        #expect(plain.width > 0 && plain.width == withText.width)
        let top = withText.differing(from: plain, rows: 0...0.2)
        let bottom = withText.differing(from: plain, rows: 0.6...1)
        #expect(top > 500, "only \(top) pixels changed where the text is drawn")
        #expect(bottom == 0, "\(bottom) pixels changed below the text")
        player.setOverlayText(nil)
        let cleared = try await Self.frame(player, at: 2)
        #expect(cleared.differing(from: plain, rows: 0...1) == 0, "clearing the text leaves the picture as it was")
        await player.close()
    }

    @Test("a key pressed in the video window arrives as its name; without the overlay there is no key stream")
    func windowKeys() async throws {
        let player = try Self.grabbingPlayer()
        _ = try await player.load(Samples.countdown)
        var keys = player.windowKeys.makeAsyncIterator()
        #expect(player.injectWindowKey("space"))
        #expect(player.injectWindowKey("Right"))
        #expect(await keys.next() == "space")
        #expect(await keys.next() == "Right")
        await player.close()

        let plain = try Self.grabbingPlayer(overlay: false)
        var none = plain.windowKeys.makeAsyncIterator()
        #expect(await none.next() == nil)
        #expect(!plain.hasOverlay)
        await plain.close()
    }

    @Test("a subtitle file's cue is drawn while it is due and not before or after")
    func subtitleCue() async throws {
        let directory = try Samples.scratch()
        defer { Samples.remove(directory) }
        let srt = directory.appendingPathComponent("cues.srt")
        // GStreamer recognises a subtitle file from its first 129 bytes, so a real file's worth of cues.
        let cues = "1\n00:00:03,000 --> 00:00:05,000\nTANDEM SUBTITLE CUE\n\n"
            + "2\n00:00:20,000 --> 00:00:22,000\nA later cue, far from the frames this test looks at\n\n"
            + "3\n00:00:24,000 --> 00:00:26,000\nAnd one more\n\n"
        try cues.write(to: srt, atomically: true, encoding: .utf8)
        let subtitled = try Self.grabbingPlayer(overlay: false, subtitles: srt.path)
        _ = try await subtitled.load(Samples.countdown)
        #expect(subtitled.subtitleTrack == 0)
        #expect(subtitled.subtitleTrackCount == 1)
        // Play 2 s → 6.5 s and keep what the sink renders every 100 ms.
        try await subtitled.prepare(at: ItemTime(nanoseconds: TimeSpan.seconds(2).nanoseconds), rate: 1)
        let start = subtitled.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await subtitled.play(from: ItemTime(nanoseconds: TimeSpan.seconds(2).nanoseconds),
                                 atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        var seen: [Frame] = []
        for _ in 0..<48 {
            try await sleep(ms: 100)
            if let frame = Self.lastFrame(subtitled), frame.itemTime >= 0 { seen.append(frame) }
        }
        _ = try await subtitled.pause()
        await subtitled.close()

        // The sample's lower band (colour blocks, left of its noise patch) is the same in every frame, and the
        // cue is drawn there: compare each frame's band with a frame from a player without subtitles.
        let plain = try Self.grabbingPlayer(overlay: false)
        _ = try await plain.load(Samples.countdown)
        #expect(plain.subtitleTrack == nil)
        let reference = try await Self.frame(plain, at: 1)
        await plain.close()
        let band = (rows: 0.75...0.98, columns: 0.0...0.72)
        var due: [Int] = []
        var outside: [Int] = []
        for frame in seen {
            let t = frame.itemTime
            let changed = frame.differing(from: reference, rows: band.rows, columns: band.columns)
            if t >= TimeSpan.milliseconds(3_100).nanoseconds && t <= TimeSpan.milliseconds(4_900).nanoseconds { due.append(changed) }
            if t <= TimeSpan.milliseconds(2_900).nanoseconds || t >= TimeSpan.milliseconds(5_100).nanoseconds { outside.append(changed) }
        }
        #expect(due.count >= 5 && outside.count >= 5, "frames compared: \(due.count) in the cue, \(outside.count) outside")
        #expect(due.allSatisfy { $0 > 300 }, "pixels changed in the band while the cue is due: \(due)")
        #expect(outside.allSatisfy { $0 == 0 }, "pixels changed in the band outside the cue's time: \(outside)")
    }

    @Test("a missing subtitle file is a clear error at load")
    func missingSubtitleFile() async throws {
        let player = try Self.grabbingPlayer(overlay: false, subtitles: "/nonexistent/cues.srt")
        await #expect(throws: PlaybackError.noSuchFile(path: "/nonexistent/cues.srt")) {
            _ = try await player.load(Samples.countdown)
        }
        await player.close()
    }

    @Test("volume, mute and track choices are the pipeline's; a track that does not exist says how many there are")
    func volumeAndTracks() async throws {
        let player = try Self.grabbingPlayer()
        _ = try await player.load(Samples.countdown)
        player.setVolume(0.4)
        #expect(abs(player.volume - 0.4) < 1e-6)
        player.setVolume(7)
        #expect(player.volume == 1.5)
        player.setMuted(true)
        #expect(player.isMuted)
        #expect(player.audioTrackCount == 1)
        try player.selectAudioTrack(0)
        #expect(player.audioTrack == 0)
        #expect(throws: PlaybackError.noSuchTrack(kind: "audio", index: 1, count: 1)) { try player.selectAudioTrack(1) }
        #expect(PlaybackError.noSuchTrack(kind: "audio", index: 1, count: 1).description
                == "there is no audio track 2: this item has 1 (1 to 1)")
        #expect(player.subtitleTrackCount == 0)
        #expect(throws: PlaybackError.self) { try player.selectSubtitleTrack(0) }
        await player.close()
    }

    @Test("a personal offset delays rendering through the clock, and the reported position stays the group's")
    func outputOffset() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        player.setOutputOffset(.milliseconds(150))
        // No clock sync here: session time is this machine's monotonic clock. The group starts item 0 at S.
        let s = SystemMonotonicClock().now.nanoseconds + TimeSpan.milliseconds(400).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: 0), atSessionTime: SessionInstant(nanoseconds: s), rate: 1)
        try await sleep(ms: 900)
        let position = try #require(player.currentItemTime())
        let groupPosition = SystemMonotonicClock().now.nanoseconds - s
        _ = try await player.pause()
        // The engine clock reads 150 ms behind the session, so this player renders 150 ms after the group. The
        // median frame: on a busy machine the first frame can come late (a preroll that ended after the start) while
        // the clock puts every later one where it belongs.
        let video = player.renderProbe.drain().filter { $0.kind == .video }
        let latenesses = video.map {
            Double($0.monotonicTime - (s + TimeSpan.milliseconds(150).nanoseconds + $0.itemTime)) / 1e6
        }.sorted()
        try #require(latenesses.count >= 3, "\(latenesses.count) video frames rendered")
        let lateness = latenesses[latenesses.count / 2]
        #expect(abs(lateness) < 15, "rendered \(lateness) ms (the median of \(latenesses.count) frames) away from 150 ms behind the group")
        #expect(abs(Double(position.nanoseconds - groupPosition) / 1e6) < 40,
                "reported \(position.nanoseconds) ns, the group is at \(groupPosition) ns")
        await player.close()
    }
}
