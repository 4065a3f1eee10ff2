import Foundation
import Testing
import TandemCore
import TandemTesting

/// `join()` that means joining, app notices and the SharePlay-shaped journal, over the in-memory hub.
@Suite struct GroupSessionJoiningTests {
    @Test func aWaitingSessionSeesTheActivityThenJoinsAndLoadsLazily() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bobLink = try await hub.connect(name: "bob", waiting: true, lazyJournal: true)
            let bob = GroupSession<MovieNight>(link: bobLink)
            let aliceJournal = GroupSessionJournal(session: alice)
            let bobJournal = GroupSessionJournal(session: bob)
            for session in [alice, bob] { group.addTask { await session.run() } }
            group.addTask { await bobJournal.run() }

            #expect(bob.state == .waiting)
            #expect(!bob.isLocallyInitiated)
            #expect(bob.activity == MovieNight(movie: "Heat"))
            #expect(bob.activeParticipants.map(\.name) == ["alice"], "bob is listed once he joins")
            #expect(bobLink.welcome.timeline == nil)
            await #expect(throws: GroupSession<MovieNight>.SessionError.notJoined) { try await bob.showNotice("hi") }

            let bytes = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0) })
            try await aliceJournal.add(bytes)
            try await aliceJournal.add(MovieNight(movie: "Ronin"))
            #expect(bobJournal.currentAttachments.isEmpty)

            try await bob.joinNow()
            #expect(bob.state == .joined)
            #expect(await hub.participants.allSatisfy { $0.hasJoined })
            let listed = await collect(1, from: bobJournal.attachments.filter { $0.count == 2 }.asStream())
            let attachments = try #require(listed.first)
            #expect(attachments.allSatisfy { !$0.isLoaded }, "nothing is fetched until asked")
            #expect(try await attachments[0].load() == bytes)
            #expect(attachments[0].isLoaded && !attachments[1].isLoaded)
            #expect(attachments[1].holds(MovieNight.self) && !attachments[0].holds(MovieNight.self))
            #expect(try await attachments[1].load(MovieNight.self) == MovieNight(movie: "Ronin"))
            await #expect(throws: GroupSessionJournal.JournalError.self) { try await attachments[0].load(MovieNight.self) }
            // SharePlay's shape: bytes added as Data load as Data; a value does not.
            #expect(attachments[0].holds(Data.self) && !attachments[1].holds(Data.self))
            #expect(try await attachments[0].load(Data.self) == bytes)
            await #expect(throws: GroupSessionJournal.JournalError.self) { try await attachments[1].load(Data.self) }
            // Sessions are Identifiable by their id, as SharePlay's are.
            func identity<Value: Identifiable>(_ value: Value) -> Value.ID { value.id }
            #expect(identity(bob) == identity(alice) && identity(bob) == bobLink.welcome.sessionID)

            // Removed before it was loaded: a load says so instead of waiting.
            try await aliceJournal.add(Data([9]))
            let three = await collect(1, from: bobJournal.attachments.filter { $0.count == 3 }.asStream())
            let third = try #require(three.first?.last)
            try await aliceJournal.remove(aliceJournal.currentAttachments[2])
            _ = await collect(1, from: bobJournal.attachments.filter { $0.count == 2 }.asStream())
            await #expect(throws: GroupSessionJournal.JournalError.self) { _ = try await third.load() }
            group.cancelAll()
        }
    }

    @Test func appNoticesReachEveryone() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob", waiting: true))
            for session in [alice, bob] { group.addTask { await session.run() } }
            let aliceNotices = alice.notices
            let bobNotices = bob.notices
            bob.join()
            alice.join()
            _ = await collect(1, from: alice.activeParticipantsUpdates.filter { $0.count == 2 }.asStream())
            try await alice.showNotice("intermission\nover")
            for stream in [aliceNotices, bobNotices] {
                let got = await collect(1, from: stream.filter { $0.kind == .app }.asStream())
                #expect(got.first?.text == "intermission over" || got.first?.text == "intermissionover")
                #expect(got.first?.participant == alice.localParticipant.id)
            }
            await #expect(throws: GroupSession<MovieNight>.SessionError.emptyNotice) { try await alice.showNotice("\u{7}") }
            group.cancelAll()
        }
    }

    @Test func messagesInSharePlaysShape() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob"))
            let carol = GroupSession<MovieNight>(link: try await hub.connect(name: "carol"))
            for session in [alice, bob, carol] { group.addTask { await session.run() } }
            for session in [alice, bob, carol] { session.join() }
            _ = await collect(1, from: bob.activeParticipantsUpdates.filter { $0.count == 3 }.asStream())
            let atBob = GroupSessionMessenger(session: bob).messages(of: Chat.self)
            let atCarol = GroupSessionMessenger(session: carol).messages(of: Chat.self)
            let messenger = GroupSessionMessenger(session: alice)
            try await messenger.send(Chat(text: "for bob", number: 1), to: .only(bob.localParticipant))
            try await messenger.send(Chat(text: "for both", number: 2), to: .only([bob.localParticipant, carol.localParticipant]))
            let got = await collect(2, from: atBob)
            #expect(got.map(\.0.number) == [1, 2])
            #expect(got.allSatisfy { bob.participant(for: $0.1)?.name == "alice" }, "the sender resolves to a Participant")
            #expect(await collect(1, from: atCarol).map(\.0.number) == [2])
            group.cancelAll()
        }
    }
}
