import Foundation
import Testing
@testable import TandemCore

/// The session's queue in the authority, on a manual session clock: editing and its bounds, transitions that wait
/// for every load, and going on at the end of an item.
@Suite("Authority: the shared queue")
struct AuthorityQueueTests {
    static func item(_ name: String, title: String? = nil, fallback: String? = nil) -> QueueEntry {
        let metadata = GroupActivityMetadata(title: title ?? name.capitalized, fallbackURL: fallback.flatMap(URL.init(string:)),
                                             type: .watchTogether)
        return QueueEntry(activity: ActivityEnvelope(activityIdentifier: "WatchTogether", metadata: metadata,
                                                     payload: Data("{}".utf8), itemID: name),
                          contentID: "fp-\(name)")
    }

    static func queues(_ actions: [SessionAuthority.Action], to id: ParticipantID) -> [SessionQueue] {
        actions.messages(to: id).compactMap { if case .queue(let q) = $0 { return q } else { return nil } }
    }

    /// A host and bob, both ready on the movie, and a queue of movie, b, c.
    static func session(_ configuration: AuthorityConfiguration = .init()) -> (AuthorityHarness, ParticipantID, ParticipantID) {
        var h = AuthorityHarness(configuration: configuration)
        let host = h.joinReady("ann", host: true)
        let bob = h.joinReady("bob")
        h.send(.queue(.add([item("b"), item("c")], at: nil)), from: host)
        return (h, host, bob)
    }

    @Test("the activity is the queue's first entry; the host adds (ids are the authority's), others are refused")
    func editing() throws {
        var h = AuthorityHarness()
        let host = h.joinReady("ann", host: true)
        let bob = h.joinReady("bob")
        #expect(h.authority.queue.entries.map(\.itemID) == ["movie"])
        #expect(h.authority.queue.currentIndex == 0)

        var proposed = Self.item("b")
        proposed.id = "chosen-by-the-peer"
        let added = h.send(.queue(.add([proposed, Self.item("c")], at: nil)), from: host)
        let queue = try #require(Self.queues(added, to: bob).last)
        #expect(queue.entries.map(\.itemID) == ["movie", "b", "c"])
        #expect(queue.entries.map(\.id) == ["q1", "q2", "q3"])
        #expect(queue.currentIndex == 0)
        #expect(added.notices(.info, to: bob).first?.text == "ann added 2 items to the queue")

        // Editing is the host's; the session goes on unchanged for everyone.
        let refused = h.send(.queue(.add([Self.item("d")], at: nil)), from: bob)
        #expect(refused.refusals(to: bob) == ["only the host can add to the queue"])
        #expect(Self.queues(refused, to: host).isEmpty)
        #expect(h.send(.queue(.remove(id: "q2")), from: bob).refusals(to: bob) == ["only the host can remove from the queue"])

        // Moving keeps the playing entry current; removing it is refused, removing another is not.
        let moved = h.send(.queue(.move(id: "q3", to: 0)), from: host)
        #expect(Self.queues(moved, to: bob).last?.entries.map(\.id) == ["q3", "q1", "q2"])
        #expect(h.authority.queue.currentIndex == 1)
        #expect(h.send(.queue(.remove(id: "q1")), from: host).refusals(to: host).first?.contains("while it plays") == true)
        h.send(.queue(.remove(id: "q3")), from: host)
        #expect(h.authority.queue.entries.map(\.id) == ["q1", "q2"])
        #expect(h.authority.queue.currentIndex == 0)
        #expect(h.send(.queue(.remove(id: "nope")), from: host).refusals(to: host).first?.contains("no queue item nope") == true)

        // Everyone may navigate, as they may play and seek; past either end is refused with a reason.
        #expect(h.send(.queue(.transition(to: .previous, startingAt: .zero, play: nil)), from: bob).refusals(to: bob)
                == ["already at the first item of the queue"])
        h.send(.queue(.transition(to: .next, startingAt: .zero, play: nil)), from: bob)
        #expect(h.send(.queue(.transition(to: .next, startingAt: .zero, play: nil)), from: bob).refusals(to: bob)
                == ["already at the last item of the queue"])

        // A late joiner's welcome carries the queue.
        let (carol, joined) = h.join("carol")
        #expect(joined.welcome(to: carol)?.queue == h.authority.queue)
    }

    @Test("bounds: entries, encoded size and identifiers are refused with what to do; nothing is taken")
    func bounds() {
        var configuration = AuthorityConfiguration()
        configuration.queue.maxEntries = 3
        configuration.queue.maxBytes = 2048
        var h = AuthorityHarness(configuration: configuration)
        let host = h.joinReady("ann", host: true)

        let tooMany = h.send(.queue(.add([Self.item("b"), Self.item("c"), Self.item("d")], at: nil)), from: host)
        #expect(tooMany.refusals(to: host) == ["the queue would hold 4 items; the limit is 3 — remove some first"])
        #expect(h.authority.queue.entries.count == 1)

        var big = Self.item("big")
        big.activity.payload = Data(repeating: 0x41, count: 4000)
        let tooBig = h.send(.queue(.add([big], at: nil)), from: host)
        #expect(tooBig.refusals(to: host).first?.contains("the limit is 2 KiB") == true)

        var longID = Self.item("x")
        longID.activity.itemID = String(repeating: "x", count: TextBounds.maxIdentifierBytes + 1)
        #expect(h.send(.queue(.add([longID], at: nil)), from: host).refusals(to: host).first?.contains("item id") == true)
        var longFingerprint = Self.item("y")
        longFingerprint.contentID = String(repeating: "f", count: TextBounds.maxIdentifierBytes + 1)
        #expect(h.send(.queue(.add([longFingerprint], at: nil)), from: host).refusals(to: host).first?
            .contains("content fingerprint") == true)
        #expect(h.send(.queue(.add([], at: nil)), from: host).refusals(to: host) == ["nothing to add to the queue"])
        #expect(h.authority.queue.entries.count == 1)

        // Titles are cut like any activity's; within the bounds, entries are taken.
        var titled = Self.item("z")
        titled.activity.metadata.title = String(repeating: "t", count: 1000)
        h.send(.queue(.add([titled, Self.item("w")], at: nil)), from: host)
        #expect(h.authority.queue.entries.count == 3)
        #expect(h.authority.queue.entries[1].title.utf8.count == TextBounds.maxTitleBytes)
        // The next ids continue after the refused requests: none were taken by them.
        #expect(h.authority.queue.entries.map(\.id) == ["q1", "q2", "q3"])
    }

    @Test("a transition waits for every participant's load (a slow loader included), then starts everyone together")
    func transitionWaitsForLoads() throws {
        var (h, host, bob) = Self.session()
        h.request(.play, from: host)
        #expect(h.authority.timeline.isPlaying)

        h.advance(ms: 1000)
        let moved = h.send(.queue(.transition(to: .next, startingAt: .zero, play: nil)), from: bob)
        #expect(moved.messages(to: host).contains(.activity(h.authority.queue.entries[1].activity)))
        let waiting = try #require(moved.timelines(to: host).last)
        #expect(waiting.itemID == "b")
        #expect(waiting.waitingFor == [host: [.loading], bob: [.loading]])
        #expect(moved.notices(.activityChanged, to: host).first?.text == "bob went to item 2 of 3: B")
        #expect(Self.queues(moved, to: host).last?.currentIndex == 1)

        // Ann loads quickly; bob is slow: nobody starts meanwhile.
        h.advance(ms: 100)
        let annReady = h.send(.readiness(.ready(AuthorityHarness.info(contentID: "fp-b"))), from: host)
        #expect(annReady.timelines(to: host).allSatisfy { !$0.isPlaying })
        #expect(h.authority.timeline.waitingFor == [bob: [.loading]])
        h.advance(ms: 4000)
        #expect(h.fireTimer().timelines(to: host).allSatisfy { !$0.isPlaying })

        let bobReady = h.send(.readiness(.ready(AuthorityHarness.info(contentID: "fp-b"))), from: bob)
        let start = try #require(bobReady.timelines(to: host).last)
        #expect(start.isPlaying && start.itemID == "b" && start.anchorItemTime == .zero)
        #expect(start.anchorSessionTime > h.now)
        #expect(bobReady.timelines(to: bob).last == start)
    }

    @Test("a transition proposes its initial timing: a start time away from 0 waits for prerolls there; play: false stays paused")
    func initialTiming() throws {
        var (h, host, bob) = Self.session()
        let paused = h.send(.queue(.transition(to: .entry(id: "q3"), startingAt: ItemTime(nanoseconds: TimeSpan.seconds(30).nanoseconds),
                                               play: false)), from: host)
        let line = try #require(paused.timelines(to: bob).last)
        #expect(line.isPaused && line.itemID == "c" && line.anchorItemTime.nanoseconds == TimeSpan.seconds(30).nanoseconds)

        h.send(.queue(.transition(to: .entry(id: "q2"), startingAt: ItemTime(nanoseconds: TimeSpan.seconds(12).nanoseconds), play: true)),
               from: host)
        for id in [host, bob] { h.send(.readiness(.ready(AuthorityHarness.info())), from: id) }
        // Loaded is not enough away from 0: the group waits until both have prerolled at 12 s.
        #expect(h.authority.timeline.waitingFor == [host: [.loading], bob: [.loading]])
        let generation = h.authority.timeline.generation
        h.send(.prepared(generation: generation), from: host)
        let started = h.send(.prepared(generation: generation), from: bob)
        let start = try #require(started.timelines(to: host).last)
        #expect(start.isPlaying && start.itemID == "b" && start.anchorItemTime.nanoseconds == TimeSpan.seconds(12).nanoseconds)
        #expect(h.send(.queue(.transition(to: .next, startingAt: ItemTime(nanoseconds: -1), play: nil)), from: bob)
            .refusals(to: bob).first?.contains("before its start") == true)
    }

    @Test("a participant that cannot load the next item is excused, as for any failed load")
    func failedLoad() throws {
        var (h, host, bob) = Self.session()
        h.request(.play, from: host)
        h.send(.queue(.transition(to: .next, startingAt: .zero, play: nil)), from: host)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: host)
        let failed = h.send(.readiness(.failed("no such file: b.webm")), from: bob)
        #expect(failed.timelines(to: host).last?.isPlaying == true)
        #expect(failed.notices(.info, to: host).first?.text.contains("bob could not load the item") == true)
    }

    @Test("the end of an item: the group goes on once everyone reached it, or after the grace; the last item pauses at its end")
    func endOfItem() throws {
        var (h, host, bob) = Self.session()
        h.request(.play, from: host)
        let playing = h.authority.timeline.generation

        // Ann's player ends first: the group waits for bob.
        h.advance(ms: 60_000)
        #expect(h.send(.reachedEnd(generation: playing), from: host).timelines(to: host).isEmpty)
        #expect(h.authority.timeline.itemID == "movie")
        // A report for a generation of another item, or a repeated one, changes nothing.
        #expect(h.send(.reachedEnd(generation: 0), from: bob).timelines(to: host).isEmpty)
        // Bob reaches it too: everyone loads the next item; the group plays it once all have.
        h.advance(ms: 200)
        let advanced = h.send(.reachedEnd(generation: playing), from: bob)
        let next = try #require(advanced.timelines(to: host).last)
        #expect(next.itemID == "b" && next.waitingFor != nil)
        #expect(advanced.notices(.activityChanged, to: bob).first?.text == "everyone reached the end of Movie; item 2 of 3: B")
        for id in [host, bob] { h.send(.readiness(.ready(AuthorityHarness.info())), from: id) }
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.itemID == "b")

        // Only ann reaches the end of b: after the grace the group goes on without bob.
        h.advance(ms: 60_000)
        let reported = h.send(.reachedEnd(generation: h.authority.timeline.generation), from: host)
        let grace = configurationGrace(h)
        #expect(reported.wakeUps.contains(h.now + grace))
        h.advance(ms: grace.milliseconds - 1)
        #expect(h.fireTimer().timelines(to: host).isEmpty)
        h.advance(ms: 1)
        let timedOut = h.fireTimer()
        #expect(timedOut.timelines(to: host).last?.itemID == "c")
        #expect(timedOut.notices(.activityChanged, to: host).first?.text.hasPrefix("going on without bob") == true)
        for id in [host, bob] { h.send(.readiness(.ready(AuthorityHarness.info(duration: TimeSpan.seconds(90)))), from: id) }
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.itemID == "c")

        // The end of the last item: the group pauses at its end, and stays on it.
        h.advance(ms: 95_000)
        let generation = h.authority.timeline.generation
        h.send(.reachedEnd(generation: generation), from: host)
        let over = h.send(.reachedEnd(generation: generation), from: bob)
        let end = try #require(over.timelines(to: bob).last)
        #expect(end.isPaused && end.itemID == "c" && end.anchorItemTime.nanoseconds == TimeSpan.seconds(90).nanoseconds)
        #expect(over.notices(.paused, to: bob).first?.text.contains("the queue is over") == true)
        #expect(h.authority.queue.currentIndex == 2)
    }

    @Test("a participant leaving is not waited for at the end; a seek away from the end forgets the reports")
    func endOfItemLeaversAndSeeks() throws {
        var (h, host, bob) = Self.session()
        let (carol, _) = h.join("carol")
        h.send(.readiness(.ready(AuthorityHarness.info())), from: carol)
        h.request(.play, from: host)
        let playing = h.authority.timeline.generation
        h.send(.reachedEnd(generation: playing), from: host)
        h.send(.reachedEnd(generation: playing), from: bob)
        // Carol seeks back: the reports are forgotten, and the group plays on.
        h.request(.seek(itemTime: .seconds(10), play: true), from: carol)
        #expect(h.authority.endReports.isEmpty)
        for id in [host, bob, carol] { h.send(.prepared(generation: h.authority.timeline.generation), from: id) }
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.itemID == "movie")
        // At the end again, carol leaves before reaching it: the others go on without waiting for the grace.
        let again = h.authority.timeline.generation
        h.send(.reachedEnd(generation: again), from: host)
        h.send(.reachedEnd(generation: again), from: bob)
        let left = h.send(.leave, from: carol)
        #expect(left.timelines(to: host).last?.itemID == "b")
    }

    func configurationGrace(_ h: AuthorityHarness) -> TimeSpan { h.authority.configuration.queue.endOfItemGrace }
}

extension AuthorityQueueTests {
    @Test("an activity set outside the queue takes the current entry's place; a full queue refuses one it cannot hold")
    func setActivityReplacesTheCurrentEntry() {
        var configuration = AuthorityConfiguration()
        configuration.queue.maxBytes = 1024
        var h = AuthorityHarness(configuration: configuration)
        let host = h.joinReady("ann", host: true)
        let other = Self.item("other").activity
        let set = h.send(.setActivity(other), from: host)
        #expect(Self.queues(set, to: host).last?.entries.map(\.itemID) == ["other"])
        #expect(h.authority.activity == other)
        var huge = Self.item("huge").activity
        huge.payload = Data(repeating: 0x41, count: 2000)
        #expect(h.send(.setActivity(huge), from: host).refusals(to: host).first?.contains("no room") == true)
        #expect(h.authority.activity == other)

        // A session created without an activity starts with the first entry added, paused.
        var bare = AuthorityHarness(activity: nil)
        let ann = bare.joinReady("ann", host: true)
        let added = bare.send(.queue(.add([Self.item("b")], at: nil)), from: ann)
        #expect(bare.authority.activity?.itemID == "b")
        #expect(bare.authority.queue.currentIndex == 0)
        #expect(added.timelines(to: ann).last?.isPaused == true)
    }
}

extension AuthorityQueueTests {
    @Test("a session of one item is left alone at its end, as without a queue")
    func oneItem() {
        var h = AuthorityHarness()
        let host = h.joinReady("ann", host: true)
        let bob = h.joinReady("bob")
        h.request(.play, from: host)
        let generation = h.authority.timeline.generation
        h.advance(ms: 60_000)
        h.send(.reachedEnd(generation: generation), from: host)
        let both = h.send(.reachedEnd(generation: generation), from: bob)
        #expect(both.timelines(to: host).isEmpty)
        #expect(both.wakeUps.isEmpty)
        #expect(h.authority.timeline.isPlaying)
    }
}

extension AuthorityQueueTests {
    @Test("a queue filled to its bounds stays within them: what it adds to a welcome is at most its byte bound")
    func fullQueue() throws {
        var h = AuthorityHarness()
        let host = h.joinReady("ann", host: true)
        let limit = h.authority.configuration.queue
        var refusals: [String] = []
        var number = 0
        // Entries of ~4 KB each until the byte bound refuses one; then small ones until the count bound does.
        while refusals.isEmpty {
            var entry = Self.item("big\(number)")
            entry.activity.payload = Data(repeating: 0x42, count: 3000)
            number += 1
            refusals = h.send(.queue(.add([entry], at: nil)), from: host).refusals(to: host)
        }
        #expect(refusals.first?.contains("the limit is 256 KiB") == true)
        let size = try JSONEncoder().encode(h.authority.queue.entries).count
        #expect(size <= limit.maxBytes)
        #expect(try JSONEncoder().encode(ServerMessage.queue(h.authority.queue)).count <= limit.maxBytes + 64)
        // The count bound, with small entries once the big ones are gone.
        while h.authority.queue.entries.count > 1 {
            h.send(.queue(.remove(id: h.authority.queue.entries.last!.id)), from: host)
        }
        for index in 1..<limit.maxEntries { h.send(.queue(.add([Self.item("s\(index)")], at: nil)), from: host) }
        #expect(h.authority.queue.entries.count == limit.maxEntries)
        #expect(h.send(.queue(.add([Self.item("one-more")], at: nil)), from: host).refusals(to: host)
            == ["the queue would hold 101 items; the limit is 100 — remove some first"])
        let (_, joined) = h.join("late")
        let welcome = try #require(joined.welcome(to: ParticipantID("p2")))
        #expect(welcome.queue?.entries.count == limit.maxEntries)
    }
}
