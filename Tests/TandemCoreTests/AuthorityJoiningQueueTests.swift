import Foundation
import Testing
@testable import TandemCore

/// The shared queue and participants that have entered without taking part (`waiting`), on the manual clock:
/// the queue reaches only those who joined, one that has not may not change it or report an end, and the end of
/// an item does not wait for it.
@Suite("Authority: the queue before and after taking part")
struct AuthorityJoiningQueueTests {
    @Test("queue changes reach joined participants only; taking part sends the queue, as a welcome would")
    func queueReachesOnlyJoined() throws {
        var (h, host, bob) = AuthorityQueueTests.session()
        let (carol, entered) = AuthorityJoiningTests.enter(&h, "carol")
        #expect(try #require(entered.welcome(to: carol)).queue == nil)

        let added = h.send(.queue(.add([AuthorityQueueTests.item("d")], at: nil)), from: host)
        #expect(AuthorityQueueTests.queues(added, to: bob).last?.entries.map(\.itemID) == ["movie", "b", "c", "d"])
        #expect(AuthorityQueueTests.queues(added, to: carol).isEmpty)
        #expect(added.messages(to: carol).isEmpty)

        // A transition changes the activity, which carol sees, but not the queue, which she does not.
        let moved = h.send(.queue(.transition(to: .next, startingAt: .zero, play: nil)), from: bob)
        #expect(AuthorityQueueTests.queues(moved, to: bob).last?.currentIndex == 1)
        #expect(AuthorityQueueTests.queues(moved, to: carol).isEmpty)
        #expect(moved.messages(to: carol).contains { if case .activity = $0 { return true } else { return false } })

        let joined = h.send(.takePart, from: carol)
        #expect(AuthorityQueueTests.queues(joined, to: carol) == [h.authority.queue])
        #expect(h.authority.queue.currentIndex == 1 && h.authority.queue.entries.count == 4)
        #expect(joined.timelines(to: carol) == [h.authority.timeline])
        // From now on the queue's changes reach her.
        let removed = h.send(.queue(.remove(id: "q4")), from: host)
        #expect(AuthorityQueueTests.queues(removed, to: carol).last == h.authority.queue)
    }

    @Test("one that has not joined may neither change the queue nor report the end of an item")
    func queueTrafficBeforeJoiningIsRefused() {
        var configuration = AuthorityConfiguration()
        configuration.everyoneMayChangeActivity = true  // refused for not having joined, not for not being host
        var (h, host, bob) = AuthorityQueueTests.session(configuration)
        let (carol, _) = AuthorityJoiningTests.enter(&h, "carol")
        h.request(.play, from: host)
        h.advance(ms: 60_000)
        let before = h.authority.queue
        let generation = h.authority.timeline.generation
        let attempts: [ClientMessage] = [
            .queue(.add([AuthorityQueueTests.item("d")], at: nil)),
            .queue(.remove(id: "q2")),
            .queue(.move(id: "q3", to: 0)),
            .queue(.transition(to: .next, startingAt: .zero, play: true)),
            .reachedEnd(generation: generation),
        ]
        for message in attempts {
            let actions = h.send(message, from: carol)
            #expect(actions.refusals(to: carol).count == 1, "\(message) was not refused")
            #expect(actions.messages(to: host).isEmpty && actions.messages(to: bob).isEmpty, "\(message) reached others")
        }
        #expect(h.authority.queue == before)
        #expect(h.authority.endReports.isEmpty, "a report from one that has not joined is not counted")
        #expect(h.authority.timeline.generation == generation && h.authority.timeline.itemID == "movie")
    }

    @Test("the end of an item does not wait for one that has not joined")
    func endOfItemIgnoresNotJoined() throws {
        var (h, host, bob) = AuthorityQueueTests.session()
        let (carol, _) = AuthorityJoiningTests.enter(&h, "carol")
        h.request(.play, from: host)
        let playing = h.authority.timeline.generation
        h.advance(ms: 60_000)
        #expect(h.send(.reachedEnd(generation: playing), from: host).timelines(to: host).isEmpty)
        #expect(!h.authority.notYetAtEnd.contains(carol))
        // Bob's report completes it at once, without the grace: carol is not waited for.
        let advanced = h.send(.reachedEnd(generation: playing), from: bob)
        let next = try #require(advanced.timelines(to: host).last)
        #expect(next.itemID == "b")
        #expect(advanced.notices(.activityChanged, to: bob).first?.text == "everyone reached the end of Movie; item 2 of 3: B")
        #expect(advanced.timelines(to: carol).isEmpty && AuthorityQueueTests.queues(advanced, to: carol).isEmpty)
    }
}
