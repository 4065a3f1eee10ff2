import Testing
import Tandem
import TandemPeer
@testable import TandemBench

/// Keys pressed in the video window, through a real player in a real session: a key press travels up from the
/// sink as a window sends it, comes out of the player's key stream, and acts as the same key in the terminal.
@Suite("Video-window keys in a session", .serialized)
struct WindowKeysSessionTests {
    @Test("space in ann's video window starts the group; 9 lowers only ann's volume; s says there are no subtitles; f says there is no window")
    func windowKeysActLikeTerminalKeys() async throws {
        let ensemble = try await Ensemble.start(file: try Samples.path("countdown.webm"), title: "keys")
        var windowed = GStreamerPlayer.Configuration.headless
        windowed.overlay = true
        let ann = try await ensemble.add(.init(name: "ann", player: windowed))
        let bob = try await ensemble.add(.init(name: "bob"))
        let annPeer = try #require(ann.peer as? LocalPeer)
        let bobPeer = try #require(bob.peer as? LocalPeer)
        var keys = ann.player.windowKeys.makeAsyncIterator()
        try await Task.sleep(for: .seconds(1))

        #expect(ann.player.injectWindowKey("space"))
        let space = try #require(await keys.next().flatMap(UserCommand.windowKey))
        #expect(space == .togglePlayPause)
        #expect(await annPeer.perform(space) == nil)
        // Everyone plays: bob's coordinator has the playing generation, and both sinks render.
        var playing = false
        for _ in 0..<50 where !playing {
            try await Task.sleep(for: .milliseconds(100))
            playing = await bobPeer.coordinator.timeline?.isPlaying ?? false
        }
        #expect(playing, "bob never saw the group play")

        #expect(ann.player.injectWindowKey("9"))
        let volumeDown = try #require(await keys.next().flatMap(UserCommand.windowKey))
        let said = Locked<[String]>([])
        #expect(await annPeer.perform(volumeDown, feedback: { text in said.withLock { $0.append(text) } }) == nil)
        #expect(abs(ann.player.volume - 0.9) < 1e-6)
        #expect(bob.player.volume == 1, "a volume change stays with who made it")
        #expect(said.withLock { $0 } == ["volume 90%"])

        #expect(ann.player.injectWindowKey("s"))
        let subtitles = try #require(await keys.next().flatMap(UserCommand.windowKey))
        #expect(await annPeer.perform(subtitles)?.contains("--sub FILE") == true)

        // f: a headless player has no window to make full screen, and says so.
        #expect(ann.player.injectWindowKey("f"))
        let fullScreen = try #require(await keys.next().flatMap(UserCommand.windowKey))
        #expect(fullScreen == .toggleFullscreen)
        let answer = await annPeer.perform(fullScreen)
        #expect(answer?.contains("headless") == true, "\(answer ?? "nil")")
        await ensemble.finish()
    }
}
