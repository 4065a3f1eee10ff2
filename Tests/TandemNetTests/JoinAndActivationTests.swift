import Foundation
import TandemCore
import Testing
@testable import TandemNet

/// What the app in these tests shares.
struct Screening: GroupActivity, Hashable {
    var film: String
    var metadata: GroupActivityMetadata {
        GroupActivityMetadata(title: film, fallbackURL: URL(string: "https://example.org/\(film)"), type: .watchTogether)
    }
}

@Suite("Joining, activation, app notices and lazy attachments over loopback", .serialized)
struct JoinAndActivationTests {
    @Test("a participant that has not joined gets the activity and participants only, even if it misbehaves")
    func nothingSharedBeforeJoining() async throws {
        let server = try await startTestServer()
        defer { Task { await server.shutdown() } }
        let invite = try server.createSession(activity: try Screening(film: "Heat").envelope())
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions(asHost: true))
        let annJournal = GroupSessionJournal(link: ann)
        try await annJournal.add(Data("poster".utf8))
        var waiting = clientOptions()
        waiting.waitsToJoin = true
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: waiting)
        #expect(bob.welcome.activity?.itemID == "Heat")
        #expect(bob.welcome.timeline == nil)
        #expect(bob.welcome.attachments.isEmpty)
        #expect(bob.welcome.participants.map(\.participant.name).sorted() == ["ann", "bob"])
        let bobMessages = bob.serverMessages()
        let annMessages = ann.serverMessages()

        // Bob misbehaves: it sends what only a joined participant may, without joining.
        try await bob.send(.appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable, sequence: 1,
                                                          payload: Data([1, 2, 3]))))
        try await bob.send(.notice(text: "not joined"))
        try await bob.send(.journal(.fetch(id: annJournal.currentAttachments[0].id)))
        try await ann.sendAppMessage(Data("for the joined".utf8))
        try await ann.send(.notice(text: "ann's notice"))
        let shared: @Sendable (ServerMessage) -> Bool = { message in
            switch message {
            case .timeline, .appMessage, .journal, .notice: return true
            default: return false
            }
        }
        #expect(await firstMessage(in: bobMessages, within: 1, where: shared) == nil)
        #expect(await firstMessage(in: annMessages, within: 0.5) {
            if case .appMessage = $0 { true } else if case .notice(let n) = $0 { n.text == "not joined" } else { false }
        } == nil)

        // Joining opens the flow: the timeline and the journal arrive.
        let afterJoin = bob.serverMessages()
        try await bob.send(.takePart)
        #expect(await firstMessage(in: afterJoin, within: 3) { if case .timeline = $0 { true } else { false } } != nil)
        try await ann.sendAppMessage(Data("now you".utf8))
        let got = await collectAppMessages(afterJoin, count: 1, within: 3, opening: bob)
        #expect(got.first?.payload == Data("now you".utf8))
        await bob.close()
        await ann.close()
    }

    @Test("activate on a relay, find the session through an invite inbox, join, show a notice, load lazily")
    func activationAndSessionSource() async throws {
        let server = try await startTestServer(remoteCreation: true)
        defer { Task { await server.shutdown() } }
        let relay = ActivationServer.relay(host: "127.0.0.1", port: server.port)
        let activation = try await Screening(film: "Ronin").activate(on: relay, name: "ann", options: clientOptions())
        let ann = activation.session
        #expect(ann.isLocallyInitiated)
        #expect(ann.state == .joined)
        #expect(ann.activity == Screening(film: "Ronin"))

        let inbox = InviteInbox()
        var bad = activation.invite
        bad.secret = "wrong"
        inbox.deliver(bad)
        inbox.deliver(activation.invite)
        var sessions = Screening.sessions(invites: inbox, name: "bob", options: clientOptions()).makeAsyncIterator()
        let bob = try #require(await sessions.next())
        #expect(!bob.isLocallyInitiated)
        #expect(bob.state == .waiting)
        #expect(bob.id == ann.id)
        #expect(bob.activity == Screening(film: "Ronin"))
        #expect(bob.link.welcome.timeline == nil)

        let annJournal = GroupSessionJournal(session: ann)
        let bobJournal = GroupSessionJournal(session: bob)
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                for session in [ann, bob] { group.addTask { await session.run() } }
                group.addTask { await annJournal.run() }
                group.addTask { await bobJournal.run() }
            }
        }
        defer { runs.cancel() }
        let poster = Data(repeating: 7, count: 100_000)
        try await annJournal.add(poster)
        let annNotices = ann.notices
        let bobNotices = bob.notices
        try await bob.joinNow()
        let listed = await firstElement(in: bobJournal.attachments, within: 5) { !$0.isEmpty }
        let attachment = try #require(listed?.first)
        #expect(!attachment.isLoaded, "the bytes are not fetched until asked")
        #expect(try await attachment.load() == poster)
        #expect(attachment.isLoaded)

        try await bob.showNotice("popcorn\u{1B}[2J ready")
        for stream in [annNotices, bobNotices] {
            let notice = await firstElement(in: stream, within: 5) { $0.kind == .app }
            #expect(notice?.text == "popcorn[2J ready")
            #expect(notice?.participant == bob.localParticipant.id)
        }

        // Leaving and activating again gives a new session.
        await ann.leave()
        let again = try await Screening(film: "Ronin").activate(on: relay, name: "ann", options: clientOptions())
        #expect(again.session.id != ann.id)
        #expect(again.invite.session != activation.invite.session)
        #expect(again.session.isLocallyInitiated)
        await again.session.leave()
        await bob.leave()
    }
}
