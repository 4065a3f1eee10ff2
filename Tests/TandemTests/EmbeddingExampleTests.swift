import Foundation
import Testing
import Tandem
import TandemPeer

// docs/EMBEDDING.md's example, run for real: an embedded server, two participants with headless GStreamer
// players, the group starting together, an app message and an attachment.

/// What the app shares.
struct MovieNight: GroupActivity {
    var movie: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: movie, type: .watchTogether) }
}

/// An app message.
struct Reaction: Codable, Sendable, Equatable {
    var emoji: String
}

@Suite("Embedding the library (the docs/EMBEDDING.md example)", .serialized)
struct EmbeddingExampleTests {
    static let movie = try! Samples.path("countdown.webm")

    /// One participant: a connection, a player and a coordinator, as an app would wire them.
    static func participant(_ invite: Invite, name: String, host: Bool = false) async throws
        -> (GroupSession<MovieNight>, PlaybackCoordinator, GStreamerPlayer) {
        var options = TandemClient.Options()
        options.asHost = host
        let connection = try await TandemClient.connect(invite: invite, name: name, options: options)
        let player = try GStreamerPlayer(configuration: .headless)
        let coordinator = PlaybackCoordinator(engine: player, link: connection, clock: SystemMonotonicClock(),
                                              locate: { _ in movie })
        let session = GroupSession<MovieNight>(link: connection)
        session.join()
        return (session, coordinator, player)
    }

    @Test func twoParticipantsPlayTogetherAndExchangeMessagesAndAttachments() async throws {
        // The host runs a server and creates a session for the activity.
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let invite = try server.createSession(activity: try MovieNight(movie: "Countdown").envelope())

        let (annSession, ann, annPlayer) = try await Self.participant(invite, name: "ann", host: true)
        let (bobSession, bob, bobPlayer) = try await Self.participant(invite, name: "bob")
        #expect(bobSession.activity?.movie == "Countdown")
        // Journals are made right after joining, so that they see the attachments already there.
        let journal = GroupSessionJournal(session: annSession)
        let bobJournal = GroupSessionJournal(session: bobSession)
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await ann.run() }
                group.addTask { await bob.run() }
                group.addTask { await annSession.run() }
                group.addTask { await bobSession.run() }
                group.addTask { await bobJournal.run() }
            }
        }

        // Nobody starts until both players have loaded; then both start at the same session time.
        await ann.play()
        var playing = false
        for _ in 0..<300 where !playing {
            try await Task.sleep(for: .milliseconds(100))
            playing = await bob.timeline?.isPlaying == true && (bobPlayer.currentItemTime()?.nanoseconds ?? 0) > 500_000_000
        }
        #expect(playing)
        let start = await ann.timeline
        #expect(start == (await bob.timeline))
        let a = annPlayer.currentItemTime()?.nanoseconds ?? 0, b = bobPlayer.currentItemTime()?.nanoseconds ?? 0
        #expect(abs(a - b) < 50_000_000, "ann at \(a), bob at \(b)")

        // App messages, with their source stamped by the server.
        let messenger = GroupSessionMessenger(session: annSession)
        let bobMessenger = GroupSessionMessenger(session: bobSession)
        let reactions = bobMessenger.messages(of: Reaction.self)
        let received = Task { () -> (Reaction, ParticipantID)? in
            for await (reaction, context) in reactions { return (reaction, context.source) }
            return nil
        }
        try await messenger.send(Reaction(emoji: "🍿"))
        let got = await received.value
        #expect(got?.0 == Reaction(emoji: "🍿"))
        #expect(got?.1 == annSession.localParticipant.id)

        // Attachments reach everyone (and later joiners).
        _ = try await journal.add(Data("poster bytes".utf8))
        var attachment: GroupSessionJournal.Attachment?
        for _ in 0..<100 where attachment == nil {
            try await Task.sleep(for: .milliseconds(50))
            attachment = bobJournal.currentAttachments.first
        }
        #expect(try await attachment?.load() == Data("poster bytes".utf8))

        // Pausing stops everyone at ann's position; ending invalidates both sessions.
        await ann.pause()
        try await annSession.end()
        await runs.value
        #expect(bobSession.state != .joined)
        await server.shutdown()
    }
}
