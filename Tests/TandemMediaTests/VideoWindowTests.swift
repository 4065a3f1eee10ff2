import CTandemGStreamerShim
import TandemTestDisplay
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TandemCore
import TandemPeer
@testable import TandemMedia

/// The video window the player owns, on a real X server (Xvfb, no window manager): its title and full screen,
/// read back from the server through a connection of the test's own.
@Suite("Video window on an X display", .serialized)
struct VideoWindowTests {
    static func windowedPlayer(on display: VirtualDisplay, title: String?) throws -> GStreamerPlayer {
        var configuration = GStreamerPlayer.Configuration.headless
        configuration.videoSink = .description("ximagesink display=\(display.name)")
        configuration.overlay = true
        configuration.windowTitle = title
        return try GStreamerPlayer(configuration: configuration)
    }

    /// Runs `body` with an X server of its own, stopped after `body`'s players are gone.
    static func withDisplay(_ body: (VirtualDisplay) async throws -> Void) async throws {
        let display = try VirtualDisplay.start()
        defer { display.stop() }
        try await body(display)
    }

    @Test("the window is titled with the activity's title (WM_NAME and UTF-8 _NET_WM_NAME), and retitled")
    func windowTitle() async throws { try await Self.withDisplay { display in
        let title = "Movie night — Amélie 🎬"
        let player = try Self.windowedPlayer(on: display, title: title)
        #expect(player.videoWindowID == nil, "no window before the sink asks for one")
        _ = try await player.load(Samples.countdown)
        let xid = try #require(player.videoWindowID, "the sink never asked for a window")
        let info = try #require(display.query(xid), "the X server does not know window \(xid)")
        #expect(info.netWMName == title)
        #expect(info.wmName == title)
        #expect(info.mapped != 0)
        #expect(info.width > 0 && info.width < display.width && info.height > 0 && info.height < display.height,
                "the window is the video's size: \(info.width)×\(info.height)")
        player.setWindowTitle("Episode 2")
        #expect(display.query(xid)?.netWMName == "Episode 2")
        #expect(player.windowTitle == "Episode 2")
        await player.close()
    } }

    @Test("f in the video window makes it cover the screen, and f again restores it")
    func fullScreen() async throws { try await Self.withDisplay { display in
        let player = try Self.windowedPlayer(on: display, title: "Full screen")
        _ = try await player.load(Samples.countdown)
        let xid = try #require(player.videoWindowID)
        let before = try #require(display.query(xid))
        #expect(!player.isFullScreen)

        // The key travels as a window sends it and means the same as the terminal's f.
        var keys = player.windowKeys.makeAsyncIterator()
        #expect(player.injectWindowKey("f"))
        let key = try #require(await keys.next())
        #expect(UserCommand.windowKey(key) == .toggleFullscreen)
        #expect(player.toggleFullScreen() == true)
        let full = try #require(display.query(xid))
        #expect(full.x == 0 && full.y == 0 && full.width == display.width && full.height == display.height,
                "full screen is \(full.x),\(full.y) \(full.width)×\(full.height) on a \(display.width)×\(display.height) screen")
        #expect(player.isFullScreen)
        // Still playing into it: a preroll elsewhere works with the window covering the screen.
        try await player.prepare(at: ItemTime(nanoseconds: TimeSpan.seconds(3).nanoseconds), rate: 1)

        #expect(player.injectWindowKey("f"))
        #expect(await keys.next().flatMap(UserCommand.windowKey) == .toggleFullscreen)
        #expect(player.toggleFullScreen() == false)
        let restored = try #require(display.query(xid))
        #expect(restored.x == before.x && restored.y == before.y && restored.width == before.width
                && restored.height == before.height,
                "restored to \(restored.width)×\(restored.height), was \(before.width)×\(before.height)")
        await player.close()
    } }

    @Test("headless there is no window: full screen says why, and the title is kept for nothing")
    func headlessHasNoWindow() async throws {
        let player = try Samples.headlessPlayer()
        #expect(player.toggleFullScreen() == nil)
        #expect(player.fullScreenUnavailableReason.contains("nothing is playing yet"))
        _ = try await player.load(Samples.countdown)
        #expect(player.videoWindowID == nil)
        #expect(player.toggleFullScreen() == nil)
        #expect(player.fullScreenUnavailableReason.contains("headless"))
        player.setWindowTitle("Nobody sees this")
        #expect(player.windowTitle == "Nobody sees this")
        await player.close()
    }
}
