import Foundation
import Synchronization
import Testing
import TandemCore
import TandemTesting

/// What the authority refuses reaches the caller: thrown before sending where the session's announced rules decide
/// it, on `refusals` where only the authority can; `join()` means the same on every link and needs no `run()`.
@Suite struct GroupSessionRefusalTests {
    @Test("a participant that is not the host: end, activity and queue edits throw notHost with the authority's words, and nothing changes for anyone")
    func notTheHostThrows() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob"))
            for session in [alice, bob] { group.addTask { await session.run() } }
            #expect(alice.isLocalHost && !bob.isLocalHost)
            #expect(bob.link.welcome.rules == SessionRules(), "welcome")
            #expect(AuthorityConfiguration().rules == SessionRules(), "configuration")
            #expect(bob.rules == SessionRules(), "the welcome announces the default rules: the host's roles are the host's")

            func refusal(_ call: () async throws -> Void) async -> Refusal? {
                do { try await call() } catch GroupSessionError.refused(let refusal) { return refusal } catch {
                    Issue.record("threw \(error), not a refusal")
                }
                return nil
            }
            let end = await refusal { try await bob.end() }
            #expect(end?.code == .notHost && end?.request == .end)
            #expect(end?.reason == "only the host can end the session for everyone; leave with q instead")
            let change = await refusal { try await bob.setActivity(MovieNight(movie: "Ronin")) }
            #expect(change == Refusal(.notHost, request: .setActivity, "only the host can change the activity"))
            #expect(bob.activity == MovieNight(movie: "Heat"), "a refused change leaves the local copy as the group's")
            let add = await refusal { try await bob.addToQueue(MovieNight(movie: "Ronin")) }
            #expect(add?.code == .notHost && add?.request == .queue)
            let remove = await refusal { try await bob.removeFromQueue(entryID: "q1") }
            #expect(remove?.reason == "only the host can remove from the queue")
            // The same rule, the same words, where the authority decides it (a client that does not check first).
            let refusals = bob.refusals
            try await bob.link.send(.end)
            let fromAuthority = await collect(1, from: refusals).first
            #expect(fromAuthority == end, "the authority's refusal names the request and its code")
            #expect(await hub.timeline.itemID == "Heat")
            #expect(alice.state == .joined && bob.state == .joined)
            group.cancelAll()
        }
    }

    @Test("what only the authority can refuse arrives on refusals; a refused activity change puts the group's activity back")
    func authorityRefusalsArriveOnTheStream() async throws {
        var configuration = AuthorityConfiguration()
        configuration.maxActivitySize = 2_000
        configuration.appMessagesPerSecond = 1
        configuration.appMessageBurst = 1
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope(), configuration: configuration)
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            group.addTask { await alice.run() }
            let refusals = alice.refusals
            let activities = alice.activityEnvelopes
            try await alice.setActivity(MovieNight(movie: String(repeating: "x", count: 3_000)))
            let refused = try #require(await collect(1, from: refusals).first)
            #expect(refused.code == .tooLarge && refused.request == .setActivity)
            #expect(refused.reason.contains("the limit is"))
            // current, the proposal, then the group's again
            let seen = await collect(3, from: activities)
            #expect(seen.last?.itemID == "Heat")
            #expect(alice.activity == MovieNight(movie: "Heat"))
            #expect(await hub.timeline.itemID == "Heat")

            // Notices beyond the rate: the authority's refusal, with its code.
            try await alice.showNotice("one")
            try await alice.showNotice("two")
            let rated = try #require(await collect(1, from: refusals).first)
            #expect(rated.code == .rateLimited && rated.request == .notice)
            #expect(alice.state == .joined)
            group.cancelAll()
        }
    }

    @Test("join() means the same on every link: a link that joined as it connected starts joined; a waiting one joins with join(), even when nobody runs the session")
    func joinOnEveryLink() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
        #expect(alice.state == .joined, "the authority counts her in from the start, and so does her session")
        alice.join()
        #expect(alice.state == .joined)

        // Nobody calls run(): join() follows the session itself.
        let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob", waiting: true))
        #expect(bob.state == .waiting)
        await #expect(throws: GroupSessionError.notJoined) { try await bob.end() }
        bob.join()
        #expect(bob.state == .joined)
        let deadline = ContinuousClock.now + .seconds(10)
        while await !hub.participants.allSatisfy(\.hasJoined), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await hub.participants.map(\.hasJoined) == [true, true])
        // ...and keeps following it: bob sees alice's next activity.
        let activities = bob.activityEnvelopes
        try await alice.setActivity(MovieNight(movie: "Ronin"))
        let seen = await collect(2, from: activities)
        #expect(seen.last?.itemID == "Ronin")
        // An owner's run() after join() started one waits for the end rather than following twice.
        let ownerRun = Task { await bob.run() }
        await bob.leave()
        await ownerRun.value
    }

    @Test("refusals travel with their code and request; an authority's refusal without them decodes as .other")
    func refusalsOnTheWire() throws {
        let refusal = Refusal(.notHost, request: .end, "only the host can end the session for everyone")
        let json = try JSONEncoder().encode(ServerMessage.refused(refusal))
        #expect(try JSONDecoder().decode(ServerMessage.self, from: json).refusal == refusal)
        let old = Data(#"{"refused":{"reason":"too many messages"}}"#.utf8)
        let decoded = try JSONDecoder().decode(ServerMessage.self, from: old)
        #expect(decoded.refusal == Refusal(.other, request: nil, "too many messages"))
        let newer = Data(#"{"refused":{"reason":"r","code":"somethingNew","request":"dance"}}"#.utf8)
        #expect(try JSONDecoder().decode(ServerMessage.self, from: newer).refusal?.code.rawValue == "somethingNew")
    }

    @Test("showNotice(GroupSessionEvent) shows who did what, with its URL, on this participant's notices only, as SharePlay does")
    func eventsShowLocally() async throws {
        let hub = InMemorySessionHub(activity: try MovieNight(movie: "Heat").envelope())
        try await withThrowingDiscardingTaskGroup { group in
            let alice = GroupSession<MovieNight>(link: try await hub.connect(name: "alice", isHost: true))
            let bob = GroupSession<MovieNight>(link: try await hub.connect(name: "bob"))
            for session in [alice, bob] { group.addTask { await session.run() } }
            let bobNotices = bob.notices.filter { $0.kind != .joined }.asStream()
            let aliceNotices = alice.notices.filter { $0.kind != .joined }.asStream()
            let link = try #require(URL(string: "movienight://scene/12"))
            bob.showNotice(GroupSessionEvent(originator: alice.localParticipant, action: .pause, url: link))
            bob.showNotice(GroupSessionEvent(originator: bob.localParticipant, action: .init(rawValue: "added a poster"), url: nil))
            let shown = await collect(2, from: bobNotices)
            #expect(shown.map(\.kind) == [.paused, .app])
            #expect(shown.map(\.text) == ["alice paused", "bob added a poster"])
            #expect(shown.first?.participant == alice.localParticipant.id && shown.first?.url == link)
            // Nothing went to alice: the first notice she sees is bob's next one for everyone.
            try await bob.showNotice("hello")
            #expect(await collect(1, from: aliceNotices).first?.text == "hello")
            group.cancelAll()
        }
    }
}
