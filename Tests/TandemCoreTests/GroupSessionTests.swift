import Foundation
import Testing
import TandemCore
import TandemTesting

struct MovieNight: GroupActivity, Hashable {
    var movie: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: movie, type: .watchTogether) }
}

@Suite struct GroupSessionTests {
    @Test func joiningAndLeavingAreObservable() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        // The sessions run in a task group the test owns, as an app runs them.
        try await withThrowingDiscardingTaskGroup { group in
            // Links that enter waiting (as `sessions(invites:)` makes them): the session is `.waiting` until `join()`.
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true, waiting: true))
            group.addTask { await alice.run() }
            #expect(alice.state == .waiting)
            #expect(alice.activity == MovieNight(movie: "Heat"))
            #expect(alice.activeParticipants.isEmpty, "she is listed once she joins")
            let states = alice.states
            let people = alice.activeParticipantsUpdates
            alice.join()
            #expect(await collect(2, from: states) == [.waiting, .joined])
            let listed = alice.activeParticipantsUpdates.filter { !$0.isEmpty }.asStream()
            #expect(await collect(1, from: listed).first?.map(\.name) == ["alice"])

            // Subscribed before bob arrives, so that bob's notices are all seen, in order. (Subscribing after the
            // participants update of his join, as this test once did, raced his `joined` notice, which follows that
            // update: the notice could arrive after the subscription and be taken for the `left` one.)
            // Not alice's own `joined`, which can come after the subscription under load (seen once).
            let aliceID = alice.localParticipant.id
            let notices = alice.notices.filter {
                ($0.kind == .joined || $0.kind == .left) && $0.participant != aliceID
            }.asStream()
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob", waiting: true))
            group.addTask { await bob.run() }
            bob.join()
            let names = await collect(1, from: people.filter { $0.count == 2 }.asStream()).last.map { Set($0.map(\.name)) }
            #expect(names == ["alice", "bob"])
            #expect(bob.localParticipant.name == "bob")

            // Alice can list bob before his own session has taken in its welcome: wait for his `.joined`, so that
            // the states below start from it (they began at `.waiting` once, under load).
            #expect(await collect(1, from: bob.states.filter { $0 == .joined }.asStream()) == [.joined])
            let bobStates = bob.states
            await bob.leave()
            #expect(bob.state == .invalidated(reason: InvalidationReason(code: .left, message: "you left the session")))
            #expect(await collect(3, from: bobStates).count == 2)   // joined, invalidated, then the stream ends
            let aboutBob = await collect(2, from: notices)
            #expect(aboutBob.map(\.kind) == [.joined, .left])
            #expect(aboutBob.allSatisfy { $0.participant == bob.localParticipant.id })
            // The participants update comes before the notice: once bob's `left` is seen, he is gone.
            #expect(alice.activeParticipants.map(\.name) == ["alice"])
            #expect(alice.state == .joined)
            group.cancelAll()
        }
    }

    @Test func aNewActivityReachesEveryone() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        // The sessions run in a task group the test owns, as an app runs them.
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob"))
            for session in [alice, bob] { group.addTask { await session.run() } }
            let bobActivities = bob.activityEnvelopes
            try await alice.setActivity(MovieNight(movie: "Ronin"))
            #expect(alice.activity == MovieNight(movie: "Ronin"))
            let seen = await collect(2, from: bobActivities)
            #expect(seen.last?.itemID == "Ronin")
            #expect(bob.activity == MovieNight(movie: "Ronin"))
            #expect(await hub.timeline.itemID == "Ronin")
            group.cancelAll()
        }
    }

    @Test func endInvalidatesEveryoneWithAReason() async throws {
        // bob is not the host: this configuration lets everyone end the session.
        let hub = InMemorySessionHub(activity: nil, configuration: AuthorityConfiguration().withHostRolesForEveryone)
        // The sessions run in a task group the test owns, as an app runs them.
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob"))
            let carol = GroupSession<MovieNight>(link: try await hub.connect(name: "carol"))
            for session in [alice, bob, carol] { group.addTask { await session.run() } }
            let streams = [alice.states, bob.states, carol.states]
            try await bob.end()
            for stream in streams {
                let states = await collect(2, from: stream)
                guard case .invalidated(let reason)? = states.last else {
                    Issue.record("not invalidated: \(states)"); continue
                }
                #expect(reason.code == .ended)
                #expect(reason.message.contains("bob"))
            }
            await #expect(throws: GroupSession<MovieNight>.SessionError.self) { try await alice.end() }
            group.cancelAll()
        }
    }

    @Test func sessionsOfAnActivityTypeArriveAsAStream() async throws {
        struct Quiz: GroupActivity {
            var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "quiz", type: .playTogether) }
        }
        let movieHub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        let quizHub = InMemorySessionHub(activity: try Quiz().envelope())
        let links: [any SessionLink] = [try await quizHub.connect(name: "a"), try await movieHub.connect(name: "b")]
        let (stream, continuation) = AsyncStream.makeStream(of: (any SessionLink).self)
        for link in links { continuation.yield(link) }
        continuation.finish()
        var found: [GroupSession<MovieNight>] = []
        for await session in MovieNight.sessions(from: stream) { found.append(session) }
        #expect(found.count == 1)
        #expect(found.first?.activity == MovieNight(movie: "Heat"))
        #expect(found.first?.localParticipant.name == "b")
    }
}
