import Foundation
import Testing
@testable import TandemCore

/// Entering without taking part, `takePart`, app notices and lazy journal loading, on the manual clock.
@Suite struct AuthorityJoiningTests {
    /// Enters `name` without taking part (`waiting`), optionally loading the journal lazily.
    static func enter(_ h: inout AuthorityHarness, _ name: String, lazy: Bool = false)
        -> (ParticipantID, [SessionAuthority.Action]) {
        switch h.authority.join(name: name, prerollEstimate: 0, wantsHost: false, newReconnectToken: "t-\(name)",
                                waiting: true, lazyJournal: lazy, now: h.now) {
        case .joined(let id, let actions): return (id, actions)
        case .refused(let reason): fatalError("refused: \(reason)")
        }
    }

    @Test func beforeJoiningOnlyTheActivityAndParticipantsArrive() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        h.send(.journal(.begin(AttachmentInfo(id: "poster", owner: ann, name: "p", size: 2, sha256: ""))), from: ann)
        h.send(.journal(.chunk(id: "poster", offset: 0, bytes: Data([1, 2]))), from: ann)
        h.send(.journal(.commit(id: "poster")), from: ann)
        let (bob, entered) = Self.enter(&h, "bob")

        let welcome = try #require(entered.welcome(to: bob))
        #expect(welcome.activity == AuthorityHarness.movie)
        #expect(welcome.timeline == nil)
        #expect(welcome.attachments.isEmpty)
        #expect(welcome.participants.first { $0.participant.id == bob }?.hasJoined == false)
        // Nothing but the welcome and the participant list reaches bob.
        for message in entered.messages(to: bob) {
            switch message {
            case .welcome, .participants: break
            default: Issue.record("bob got \(message) before joining")
            }
        }
        #expect(entered.notices(to: ann).isEmpty, "nobody is told of someone who only looks")

        // Everything bob would do while not joined is refused, and nothing it sends reaches anyone.
        let misbehaving: [ClientMessage] = [
            .appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable, sequence: 1, payload: Data([1]))),
            .timelineRequest(TimelineRequest(requestID: 1, command: .play, basedOnGeneration: 1, requestedAtSessionTime: h.now)),
            .journal(.fetch(id: "poster")), .notice(text: "hi"), .readiness(.loading(progress: nil)),
            .setActivity(AuthorityHarness.movie),
        ]
        for message in misbehaving {
            let actions = h.send(message, from: bob)
            #expect(actions.messages(to: ann).isEmpty, "\(message) reached ann")
            #expect(actions.refusals(to: bob).count == 1, "\(message) was not refused")
        }
        #expect(h.authority.timeline.generation == 1)

        // Others' traffic passes bob by: a play (which does not wait for bob), messages, notices.
        let play = h.request(.play, from: ann)
        #expect(play.messages(to: bob).isEmpty)
        #expect(h.authority.timeline.isPlaying, "the group does not wait for someone who has not joined")
        let message = h.send(.appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable, sequence: 1,
                                                            payload: Data([7]))), from: ann)
        #expect(message.messages(to: bob).isEmpty)

        // An activity change reaches bob.
        var next = AuthorityHarness.movie
        next.itemID = "sequel"
        let change = h.send(.setActivity(next), from: ann)
        #expect(change.messages(to: bob).contains(.activity(next)))
        #expect(change.timelines(to: bob).isEmpty)
    }

    @Test func takingPartSendsTheTimelineAndTheJournalAndTellsEveryone() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        h.send(.journal(.begin(AttachmentInfo(id: "poster", owner: ann, name: "p", size: 2, sha256: ""))), from: ann)
        h.send(.journal(.chunk(id: "poster", offset: 0, bytes: Data([1, 2]))), from: ann)
        h.send(.journal(.commit(id: "poster")), from: ann)
        let (bob, _) = Self.enter(&h, "bob")
        let joined = h.send(.takePart, from: bob)
        #expect(joined.timelines(to: bob) == [h.authority.timeline])
        #expect(joined.messages(to: bob).contains(.journal(.commit(id: "poster"))))
        #expect(joined.notices(.joined, to: ann).count == 1)
        #expect(h.authority.participants.allSatisfy { $0.hasJoined })
        #expect(h.send(.takePart, from: bob).isEmpty, "a repeated join means nothing")
        // Now bob's requests count.
        let message = h.send(.appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable, sequence: 1,
                                                            payload: Data([7]))), from: bob)
        #expect(message.messages(to: ann).count == 1)
    }

    @Test func appNoticesAreBoundedRateLimitedAndReachEveryone() {
        var config = AuthorityConfiguration()
        config.appMessageBurst = 3
        config.appMessagesPerSecond = 1
        var h = AuthorityHarness(configuration: config)
        let ann = h.joinReady("ann", host: true)
        let bob = h.joinReady("bob")
        let (carol, _) = Self.enter(&h, "carol")
        let long = String(repeating: "é", count: 2_000) + "\u{7}"
        let shown = h.send(.notice(text: long), from: bob)
        let notices = shown.notices(.app, to: ann) + shown.notices(.app, to: bob)
        #expect(notices.count == 2, "the sender sees its notice too")
        #expect(notices.allSatisfy { $0.participant == bob && $0.text.utf8.count <= TextBounds.maxNoticeBytes })
        #expect(!notices[0].text.contains("\u{7}"))
        #expect(shown.messages(to: carol).isEmpty)
        h.send(.notice(text: "two"), from: bob)
        h.send(.notice(text: "three"), from: bob)
        let over = h.send(.notice(text: "four"), from: bob)
        #expect(over.notices(to: ann).isEmpty)
        #expect(over.refusals(to: bob).count == 1)
        h.advance(ms: 1_100)
        #expect(h.send(.notice(text: "later"), from: bob).notices(.app, to: ann).count == 1)
    }

    @Test func lazyParticipantsGetAnnouncementsAndBytesOnlyWhenTheyFetch() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        let (bob, _) = Self.enter(&h, "bob", lazy: true)
        h.send(.takePart, from: bob)
        let info = AttachmentInfo(id: "poster", owner: ann, name: "p", size: 4, sha256: "")
        #expect(h.send(.journal(.begin(info)), from: ann).messages(to: bob).isEmpty)
        #expect(h.send(.journal(.chunk(id: "poster", offset: 0, bytes: Data([1, 2, 3, 4]))), from: ann)
            .messages(to: bob).isEmpty)
        let commit = h.send(.journal(.commit(id: "poster")), from: ann)
        #expect(commit.messages(to: bob) == [.journal(.available(info))])

        let fetched = h.send(.journal(.fetch(id: "poster")), from: bob)
        #expect(fetched.messages(to: bob) == [
            .journal(.begin(info)), .journal(.chunk(id: "poster", offset: 0, bytes: Data([1, 2, 3, 4]))),
            .journal(.commit(id: "poster")),
        ])
        #expect(fetched.messages(to: ann).isEmpty)
        let missing = h.send(.journal(.fetch(id: "nothing")), from: bob)
        guard case .journal(.failed(id: "nothing", _))? = missing.messages(to: bob).first else {
            Issue.record("a fetch of nothing: \(missing)"); return
        }
        // Fetches count against the sender's message rate: past the burst they fail, to the asker alone.
        var fetchedAgain = 0
        for _ in 0..<(h.authority.configuration.appMessageBurst + 5) {
            let actions = h.send(.journal(.fetch(id: "poster")), from: bob)
            if actions.messages(to: bob).contains(.journal(.commit(id: "poster"))) { fetchedAgain += 1 }
            #expect(actions.messages(to: ann).isEmpty)
        }
        #expect(fetchedAgain < h.authority.configuration.appMessageBurst + 5)
        #expect(fetchedAgain >= h.authority.configuration.appMessageBurst - 2)
        // A lazy late joiner sees announcements only.
        let (carol, _) = Self.enter(&h, "carol", lazy: true)
        #expect(h.send(.takePart, from: carol).messages(to: carol).filter {
            if case .journal = $0 { true } else { false }
        } == [.journal(.available(info))])
    }
}
