import Foundation
import Synchronization
import Tandem
import Testing
import TandemPeer

/// What a presenter said, in order: lines, warnings and JSON events by name.
final class RecordingOutput: PeerOutput {
    private let recorded = Mutex<[String]>([])

    func say(_ text: String) { recorded.withLock { $0.append("say: \(text)") } }
    func emit(_ event: some PeerEvent) { recorded.withLock { $0.append("event: \(type(of: event).name)") } }
    func warn(_ text: String) { recorded.withLock { $0.append("warn: \(text)") } }
    var isTypingChat: Bool { false }

    var lines: [String] { recorded.withLock { $0 } }

    /// Waits up to `seconds` for a line containing `text`.
    func waitFor(_ text: String, seconds: Double = 20) async -> Bool {
        for _ in 0..<Int(seconds * 20) {
            if lines.contains(where: { $0.contains(text) }) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

/// The presenter between a real session (embedded server, headless players) and a recording output: what people
/// are told, and what their commands do.
@Suite("A participant's presenter", .serialized)
struct PresenterTests {
    /// A session on an embedded server for the bundled countdown, and ann, its host, connected to it.
    static func hostedCountdown() async throws -> (server: SessionServer, invite: Invite, path: String, ann: LocalPeer) {
        let path = try Samples.path("countdown.webm")
        let probe = try await MediaProbe.probe(path)
        let activity = MediaActivity(probe: probe, path: path, title: "Countdown", subtitle: nil, type: nil, fallbackURL: nil)
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let invite = try server.createSession(activity: try activity.envelope)
        var hostOptions = TandemClient.Options()
        hostOptions.asHost = true
        let ann = try await LocalPeer.connect(invite: invite, name: "ann", file: path,
                                              player: try GStreamerPlayer(configuration: .headless), options: hostOptions)
        return (server, invite, path, ann)
    }

    @Test("notices, participants and the queue are narrated; a joiner cannot end the session; leaving ends the run")
    func narratesAndCarriesOut() async throws {
        let (server, invite, path, ann) = try await Self.hostedCountdown()
        defer { Task { await server.shutdown() } }
        let bob = try await LocalPeer.connect(invite: invite, name: "bob", file: path,
                                              player: try GStreamerPlayer(configuration: .headless))
        let annOut = RecordingOutput(), bobOut = RecordingOutput()
        let annPresenter = PeerPresenter(peer: ann, output: annOut)
        let bobPresenter = PeerPresenter(peer: bob, output: bobOut)
        let annRun = Task { await annPresenter.run(header: ["Hosting Countdown"]) }
        let bobRun = Task { await bobPresenter.run(header: ["Joining Countdown"]) }

        #expect(await bobOut.waitFor("say: Joining Countdown"))
        #expect(await bobOut.waitFor("event: participants"))
        for _ in 0..<200 where annPresenter.nameOf(bob.id) == nil { try await Task.sleep(for: .milliseconds(50)) }
        #expect(annPresenter.nameOf(bob.id) == "bob")

        // An app notice from ann reaches bob as a line.
        #expect(await annPresenter.handle(.notice("popcorn break")) == false)
        #expect(await bobOut.waitFor("popcorn break"))
        // The queue is listed as lines and an event.
        #expect(await bobPresenter.handle(.queueList) == false)
        #expect(await bobOut.waitFor("event: queue"))
        // Only the host ends the session for everyone: bob is told so and stays.
        #expect(await bobPresenter.handle(.end) == false)
        #expect(await bobOut.waitFor("warn: only the host can end the session"))
        // The window's chat key from a script says where to type.
        #expect(await bobPresenter.handle(.openChatPrompt) == false)
        #expect(await bobOut.waitFor("say: chat: press c in the terminal"))

        // bob leaves: his run ends as `left`; ann ends the session: hers ends as `endedHere`.
        #expect(await bobPresenter.handle(.leave))
        #expect(await bobRun.value == .left)
        #expect(bobOut.lines.contains("event: left"))
        #expect(await annPresenter.handle(.end))
        #expect(await annRun.value == .endedHere)
    }

    @Test("a joiner the host's first track proposal missed asks for it once loaded, and is answered")
    func missedProposalIsAskedFor() async throws {
        let (server, invite, path, ann) = try await Self.hostedCountdown()
        defer { Task { await server.shutdown() } }
        let annOut = RecordingOutput(), bobOut = RecordingOutput()
        let annPresenter = PeerPresenter(peer: ann, output: annOut, tracks: TrackSharing(share: true, chosen: [.audio]))
        let annRun = Task { await annPresenter.run(header: ["Hosting Countdown"]) }
        let bob = try await LocalPeer.connect(invite: invite, name: "bob", file: path,
                                              player: try GStreamerPlayer(configuration: .headless))
        // Ann proposes her audio track to bob as he joins; he is not listening yet, so that one is lost to him.
        for _ in 0..<200 where annPresenter.nameOf(bob.id) == nil { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .seconds(2))
        let bobPresenter = PeerPresenter(peer: bob, output: bobOut, proposals: bob.trackProposals())
        let bobRun = Task { await bobPresenter.run(header: ["Joining Countdown"]) }
        #expect(await bobOut.waitFor("ann proposes audio track 1"), "\(bobOut.lines)")
        #expect(bobOut.lines.filter { $0 == "event: trackProposal" }.count == 1)

        #expect(await bobPresenter.handle(.leave))
        #expect(await bobRun.value == .left)
        #expect(await annPresenter.handle(.end))
        #expect(await annRun.value == .endedHere)
    }
}
