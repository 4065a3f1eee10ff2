import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// Every kind of bad input gets its typed error, and the player stays usable afterwards.
@Suite("Bad input", .serialized)
struct BadInputTests {
    private func loadError(_ location: String) async throws -> PlaybackError? {
        let player = try Samples.headlessPlayer()
        defer { Task { await player.close() } }
        do {
            _ = try await player.load(location)
            return nil
        } catch {
            return error
        }
    }

    @Test func missingFile() async throws {
        #expect(try await loadError("/nonexistent/movie.webm") == .noSuchFile(path: "/nonexistent/movie.webm"))
        #expect(try await loadError("file:///nonexistent/movie.webm") == .noSuchFile(path: "/nonexistent/movie.webm"))
    }

    @Test func directory() async throws {
        let dir = try Samples.scratch()
        defer { Samples.remove(dir) }
        #expect(try await loadError(dir.path) == .isDirectory(path: dir.path))
    }

    @Test func notMedia() async throws {
        #expect(try await loadError(Samples.notMedia) == .notMedia(path: Samples.notMedia))
    }

    @Test func truncatedFile() async throws {
        let dir = try Samples.scratch()
        defer { Samples.remove(dir) }
        let truncated = dir.appendingPathComponent("truncated.webm")
        let data = try Data(contentsOf: URL(fileURLWithPath: Samples.countdown))
        try data.prefix(4096).write(to: truncated)
        let error = try await loadError(truncated.path)
        guard case .truncatedOrCorrupt(let path, _) = error else {
            Issue.record("expected truncatedOrCorrupt, got \(String(describing: error))")
            return
        }
        #expect(path == truncated.path)
    }

    @Test func unsupportedScheme() async throws {
        #expect(try await loadError("ftp://example.invalid/movie.webm") == .unsupportedScheme("ftp"))
        #expect(try await loadError("rtsp://example.invalid/stream") == .unsupportedScheme("rtsp"))
    }

    @Test("a sink element that does not exist names the missing plugin")
    func missingSinkElement() throws {
        let configuration = GStreamerPlayer.Configuration(videoSink: .description("tandemnosuchsink"), audioSink: .headless)
        #expect {
            _ = try GStreamerPlayer(configuration: configuration)
        } throws: { error in
            guard case PlaybackError.missingPlugin(let detail, _) = error else { return false }
            return detail.contains("tandemnosuchsink")
        }
    }

    @Test("missing codecs map to the Debian package that provides them")
    func missingCodecPackages() throws {
        let h264 = try #require(GStreamer.missingDecoderDetail(caps: "video/x-h264"))
        #expect(h264.contains("decoder-video/x-h264"))
        #expect(GStreamer.debianPackage(providing: h264) == "gstreamer1.0-libav")
        let aac = try #require(GStreamer.missingDecoderDetail(caps: "audio/mpeg, mpegversion=(int)4"))
        #expect(GStreamer.debianPackage(providing: aac) == "gstreamer1.0-libav")
        #expect(GStreamer.debianPackage(providing: GStreamer.missingDecoderDetail(caps: "video/x-vp8")!)
                == "gstreamer1.0-plugins-good")
        #expect(GStreamer.debianPackage(providing: GStreamer.missingDecoderDetail(caps: "audio/x-opus")!)
                == "gstreamer1.0-plugins-base")
        #expect(GStreamer.debianPackage(providing: "matroskademux") == "gstreamer1.0-plugins-good")
        #expect(GStreamer.debianPackage(providing: "vorbisdec") == "gstreamer1.0-plugins-base")
        #expect(GStreamer.debianPackage(providing: "x264enc") == "gstreamer1.0-plugins-ugly")
        #expect(GStreamer.debianPackage(providing: "tandem-unknown-thing") == nil)
    }

    @Test("seeks outside the item and bad rates are refused; the player stays usable")
    func seeksAndRates() async throws {
        let player = try Samples.headlessPlayer()
        await #expect(throws: PlaybackError.notLoaded) { try await player.prepare(at: ItemTime(nanoseconds: 0), rate: 1) }
        let info = try await player.load(Samples.short)
        let duration = try #require(info.duration?.nanoseconds)
        await #expect(throws: PlaybackError.seekOutOfRange(itemTime: -1, duration: TimeSpan(nanoseconds: duration))) {
            try await player.prepare(at: ItemTime(nanoseconds: -1), rate: 1)
        }
        await #expect(throws: PlaybackError.seekOutOfRange(itemTime: ItemTime(nanoseconds: duration + 1),
                                                           duration: TimeSpan(nanoseconds: duration))) {
            try await player.prepare(at: ItemTime(nanoseconds: duration + 1), rate: 1)
        }
        for rate in [0, Double.nan, -1, .infinity] {
            await #expect(throws: PlaybackError.self) {
                try await player.play(from: ItemTime(nanoseconds: 0), atSessionTime: SessionInstant(nanoseconds: player.sessionTimeNow().nanoseconds + TimeSpan.seconds(1).nanoseconds), rate: rate)
            }
            do {
                try await player.prepare(at: ItemTime(nanoseconds: 0), rate: rate)
                Issue.record("rate \(rate) accepted")
            } catch {
                guard case .invalidRate = error else { Issue.record("unexpected \(error)"); continue }
            }
        }
        // Still fine after all that.
        try await player.prepare(at: ItemTime(nanoseconds: TimeSpan.seconds(3).nanoseconds), rate: 1)
        #expect(abs((player.currentItemTime()?.nanoseconds ?? 0) - TimeSpan.seconds(3).nanoseconds) <= TimeSpan.milliseconds(34).nanoseconds)
        // And a good file loads after a bad one.
        await #expect(throws: PlaybackError.notMedia(path: Samples.notMedia)) { _ = try await player.load(Samples.notMedia) }
        #expect(try await player.load(Samples.countdownOpus).hasAudio)
        await player.close()
    }

    @Test("error messages say what to do")
    func messages() {
        #expect(PlaybackError.missingPlugin(detail: "H.264 decoder", debianPackage: "gstreamer1.0-libav").description
                .contains("apt-get install gstreamer1.0-libav"))
        #expect(PlaybackError.invalidRate(0).description.contains("greater than 0"))
    }
}
