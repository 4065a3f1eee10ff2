import Foundation
import Testing
@testable import TandemCore

@Suite("Session authority: suspensions, waiting, limits and timeouts")
struct AuthorityWaitingTests {
    @Test func nobodyStartsUntilTheSlowLoaderIsReadyThenAllStartTogether() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(100))
        let (c, _) = h.join("carol", preroll: .milliseconds(400))
        h.send(.readiness(.loading(progress: 0.1)), from: c)
        let play = h.request(.play, from: a)
        #expect(h.authority.timeline.waitingFor == [c: [.loading]])
        #expect(play.notices(.waiting, to: b).first?.text == "alice pressed play; waiting for carol (loading)")
        #expect(play.wakeUps == [h.now + .seconds(30)])

        h.advance(ms: 5_000)
        let ready = h.send(.readiness(.ready(AuthorityHarness.info())), from: c)
        let timeline = h.authority.timeline
        #expect(timeline.isPlaying)
        #expect(timeline.anchorItemTime == 0)
        // The preroll estimate (400 ms) and the short-link margin: every one-way delay here is under 10 ms.
        #expect(timeline.anchorSessionTime == h.now + .milliseconds(408))
        for peer in [a, b, c] { #expect(ready.timelines(to: peer) == [timeline]) }
        #expect(ready.notices(.resumed, to: a).count == 1)
    }

    @Test func explicitSuspensionsHoldTheStartAndNonTriggeringOnesDoNot() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.send(.suspension(.begin(id: 1, reason: .interstitial)), from: b)
        h.request(.play, from: a)
        #expect(h.authority.timeline.isPlaying)  // interstitial does not trigger waiting by default
        h.request(.pause(itemTime: 0), from: a)
        h.send(.suspension(.begin(id: 2, reason: .userActionRequired)), from: b)
        h.request(.play, from: a)
        #expect(h.authority.timeline.waitingFor == [b: [.userActionRequired]])
        #expect(h.authority.participants.first { $0.participant.id == b }?.suspensions == [.interstitial, .userActionRequired])
        h.send(.suspension(.end(id: 2, proposedItemTime: nil)), from: b)
        #expect(h.authority.timeline.isPlaying)
    }

    @Test func stallDuringPlayPausesAtACommonTimeAndResumesTogether() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(100))
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        h.request(.play, from: a)
        let playing = h.authority.timeline
        h.advance(ms: 60_000)
        let stall = h.send(.suspension(.begin(id: 9, reason: .stallRecovery)), from: b)
        let waiting = h.authority.timeline
        let stopAt = h.now + .milliseconds(90)
        #expect(waiting.waitingFor == [b: [.stallRecovery]])
        #expect(waiting.anchorSessionTime == stopAt)
        #expect(waiting.anchorItemTime == playing.expectedItemTime(atSessionTime: stopAt))
        #expect(stall.notices(.waiting, to: a).first?.text.hasSuffix("waiting for bob (buffering)") == true)
        #expect(stall.wakeUps == [h.now + .seconds(10)])

        h.advance(ms: 3_000)
        h.send(.suspension(.end(id: 9, proposedItemTime: nil)), from: b)
        let resumed = h.authority.timeline
        #expect(resumed.isPlaying)
        #expect(resumed.anchorItemTime == waiting.anchorItemTime)
        #expect(resumed.anchorSessionTime == h.now + .milliseconds(190))
    }

    @Test func endingASuspensionCanProposeTheResumeTime() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 10_000)
        h.send(.suspension(.begin(id: 1, reason: .userChangingTime)), from: b)
        #expect(h.authority.timeline.waitingFor == [b: [.userChangingTime]])
        h.advance(ms: 2_000)
        h.send(.suspension(.end(id: 1, proposedItemTime: .seconds(300))), from: b)
        #expect(h.authority.timeline.isPlaying)
        #expect(h.authority.timeline.anchorItemTime == .seconds(300))
    }

    @Test func beyondThePerReasonLimitTheGroupDoesNotWait() {
        var config = AuthorityConfiguration()
        config.participantLimitPerReason = [.stallRecovery: 1]
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let c = h.joinReady("carol")
        h.request(.play, from: a)
        h.advance(ms: 5_000)
        h.send(.suspension(.begin(id: 1, reason: .stallRecovery)), from: b)
        #expect(h.authority.timeline.waitingFor == [b: [.stallRecovery]])
        let second = h.send(.suspension(.begin(id: 1, reason: .stallRecovery)), from: c)
        // Two participants buffering, limit one: the group goes on.
        #expect(h.authority.timeline.isPlaying)
        #expect(second.notices(.limitExceeded, to: a).map(\.text)
            == ["2 participants are buffering (limit 1); the group goes on without waiting for them"])
        #expect(second.notices(.resumed, to: a).count == 1)
        let playing = h.authority.timeline
        // carol recovers; bob, still buffering, keeps catching up alone rather than pausing everyone now.
        h.advance(ms: 1_000)
        h.send(.suspension(.end(id: 1, proposedItemTime: nil)), from: c)
        #expect(h.authority.timeline == playing)
        // Once bob has recovered too, a later stall of his counts again.
        h.send(.suspension(.end(id: 1, proposedItemTime: nil)), from: b)
        h.advance(ms: 1_000)
        h.send(.suspension(.begin(id: 2, reason: .stallRecovery)), from: b)
        #expect(h.authority.timeline.waitingFor == [b: [.stallRecovery]])
    }

    @Test func withTheLimitExceededAStallDoesNotPauseTheGroup() {
        var config = AuthorityConfiguration()
        config.participantLimitPerReason = [.stallRecovery: 0]
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        let playing = h.authority.timeline
        h.advance(ms: 5_000)
        h.send(.suspension(.begin(id: 1, reason: .stallRecovery)), from: b)
        #expect(h.authority.timeline == playing)
    }

    @Test func firstLoadTimeoutStartsWithoutTheSlowPeerWhoCatchesUpAlone() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let (b, _) = h.join("bob", preroll: .seconds(2))
        h.send(.readiness(.loading(progress: nil)), from: b)
        let play = h.request(.play, from: a)
        #expect(play.wakeUps == [h.now + .seconds(30)])
        h.advance(ms: 29_999)
        #expect(h.fireTimer().timelines(to: a).isEmpty)
        h.advance(ms: 1)
        let fired = h.fireTimer()
        let timeline = h.authority.timeline
        #expect(timeline.isPlaying)
        // bob is excused: neither his preroll nor his loading holds anyone back.
        #expect(timeline.anchorSessionTime == h.now + .milliseconds(8))   // the short-link margin
        let timedOut = fired.notices(.waitingTimedOut, to: a)
        #expect(timedOut.count == 1)
        #expect(timedOut.first?.participant == b)
        #expect(timedOut.first?.text == "going on without bob (still loading after 30 s); they will catch up")
        // bob becomes ready later and catches up without changing anything.
        h.advance(ms: 4_000)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: b)
        #expect(h.authority.timeline == timeline)
        // Once caught up he counts again: a later stall of his pauses the group.
        h.send(.suspension(.begin(id: 5, reason: .stallRecovery)), from: b)
        #expect(h.authority.timeline.waitingFor == [b: [.stallRecovery]])
    }

    @Test func rebufferTimeoutIsShorter() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 1_000)
        let stall = h.send(.suspension(.begin(id: 1, reason: .stallRecovery)), from: b)
        #expect(stall.wakeUps == [h.now + .seconds(10)])
        h.advance(ms: 10_000)
        let fired = h.fireTimer()
        #expect(h.authority.timeline.isPlaying)
        #expect(fired.notices(.waitingTimedOut, to: a).first?.text.contains("buffering after 10 s") == true)
        // Still stalled and excused: a new play/pause cycle does not wait for bob again.
        h.request(.pause(itemTime: .seconds(20)), from: a)
        h.request(.play, from: a)
        #expect(h.authority.timeline.isPlaying)
    }

    @Test func aWaitedForPeerLeavingLetsTheGroupGoOn() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let (c, _) = h.join("carol")
        h.send(.readiness(.loading(progress: 0.5)), from: c)
        h.request(.play, from: a)
        #expect(h.authority.timeline.waitingFor == [c: [.loading]])
        let leave = h.send(.leave, from: c)
        #expect(h.authority.timeline.isPlaying)
        #expect(leave.closes[c]?.code == .left)
        #expect(leave.notices(.left, to: b).first?.text == "carol left")
        #expect(leave.messages(to: b).contains(.participants(h.authority.participants)))
        #expect(h.authority.participants.map(\.participant.id) == [a, b])
    }

    @Test func aWaitedForPeerLosingItsConnectionReleasesItsSuspensionsAtOnce() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 2_000)
        h.send(.suspension(.begin(id: 1, reason: .stallRecovery)), from: b)
        #expect(h.authority.timeline.waitingFor != nil)
        let lost = h.authority.connectionLost(b, now: h.now)
        #expect(h.authority.timeline.isPlaying)
        #expect(lost.notices(.left, to: a).first?.text == "bob lost connection")
        #expect(lost.messages(to: b).isEmpty)
    }

    @Test func lateJoinerJoinsTheRunningTimelineWithoutPausingAnyone() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        h.request(.play, from: a)
        let playing = h.authority.timeline
        h.advance(ms: 120_000)
        let (late, joinActions) = h.join("dave", preroll: .seconds(1))
        #expect(h.authority.timeline == playing)
        guard case .welcome(let snapshot)? = joinActions.messages(to: late).first else {
            Issue.record("no welcome first")
            return
        }
        #expect(snapshot.timeline == playing)
        h.send(.readiness(.loading(progress: nil)), from: late)
        h.send(.suspension(.begin(id: 1, reason: .loading)), from: late)
        #expect(h.authority.timeline == playing)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: late)
        h.send(.suspension(.end(id: 1, proposedItemTime: nil)), from: late)
        #expect(h.authority.timeline == playing)
    }

    @Test func lateJoinerPausesTheGroupWhenThePolicySaysSo() {
        var config = AuthorityConfiguration()
        config.lateJoinersPauseGroup = true
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        h.request(.play, from: a)
        h.advance(ms: 120_000)
        let (late, _) = h.join("dave")
        #expect(h.authority.timeline.waitingFor == [late: [.loading]])
        let stopTime = h.authority.timeline.anchorItemTime
        #expect((stopTime - .seconds(120)).magnitude < .milliseconds(100))
        h.advance(ms: 3_000)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: late)
        #expect(h.authority.timeline.isPlaying)
        #expect(h.authority.timeline.anchorItemTime == stopTime)
    }

    @Test func failedParticipantsAreNotWaitedFor() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let (b, _) = h.join("bob")
        let failed = h.send(.readiness(.failed("no such file: movie.webm")), from: b)
        #expect(failed.notices(.info, to: a).first?.text == "bob could not load the item: no such file: movie.webm")
        h.request(.play, from: a)
        #expect(h.authority.timeline.isPlaying)
    }

    @Test func activityChangeWhilePlayingWaitsForEveryoneToLoadTheNewItem() {
        // bob is not the host: this configuration lets everyone change the activity.
        var h = AuthorityHarness(configuration: AuthorityConfiguration().withHostRolesForEveryone)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 30_000)
        let episode2 = ActivityEnvelope(activityIdentifier: "WatchTogether",
                                        metadata: GroupActivityMetadata(title: "Episode 2", type: .watchTogether),
                                        payload: Data("{}".utf8), itemID: "episode2")
        let change = h.send(.setActivity(episode2), from: b)
        #expect(change.messages(to: a).first == .activity(episode2))
        #expect(change.notices(.activityChanged, to: a).first?.text == "bob changed the activity to Episode 2")
        let waiting = h.authority.timeline
        #expect(waiting.itemID == "episode2" && waiting.anchorItemTime == 0)
        #expect(waiting.waitingFor == [a: [.loading], b: [.loading]])
        #expect(h.authority.participants.allSatisfy { $0.readiness == .loading(progress: nil) })
        #expect(h.authority.activity == episode2)

        h.advance(ms: 800)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: a)
        #expect(h.authority.timeline.waitingFor == [b: [.loading]])
        h.advance(ms: 700)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying && playing.itemID == "episode2" && playing.anchorItemTime == 0)
        #expect(playing.anchorSessionTime == h.now + .milliseconds(8))   // the short-link margin
    }

    @Test func activityChangeWhilePausedStaysPaused() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        var other = AuthorityHarness.movie
        other.itemID = "other"
        h.send(.setActivity(other), from: a)
        #expect(h.authority.timeline.isPaused && h.authority.timeline.itemID == "other")
        // A play now waits for the reload.
        h.request(.play, from: a)
        #expect(h.authority.timeline.waitingFor == [a: [.loading]])
    }

    @Test func differentMediaIsFlaggedToEveryoneOnce() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true, info: AuthorityHarness.info(duration: .seconds(5400)))
        let (b, _) = h.join("bob")
        let within = h.send(.readiness(.ready(AuthorityHarness.info(duration: .seconds(5401)))), from: b)
        #expect(within.notices(.differentMedia, to: a).isEmpty)
        let (c, _) = h.join("carol")
        let off = h.send(.readiness(.ready(AuthorityHarness.info(duration: .seconds(5340)))), from: c)
        for peer in [a, b, c] {
            #expect(off.notices(.differentMedia, to: peer).first?.participant == c)
        }
        #expect(off.notices(.differentMedia, to: a).first?.text
            == "carol seems to have a different file than alice: duration 1:29:00 vs 1:30:00")
        let again = h.send(.readiness(.ready(AuthorityHarness.info(duration: .seconds(5340)))), from: c)
        #expect(again.notices(.differentMedia, to: a).isEmpty)
        let (d, _) = h.join("dave")
        let content = h.send(.readiness(.ready(AuthorityHarness.info(contentID: "xyz"))), from: d)
        #expect(content.notices(.differentMedia, to: a).first?.text.contains("different content") == true)
    }

    @Test func theHostsMediaIsTheReferenceEvenWhenItLoadsLast() {
        var h = AuthorityHarness()
        let (host, _) = h.join("alice", host: true)
        let b = h.joinReady("bob", info: AuthorityHarness.info(duration: .seconds(100)))
        let flagged = h.send(.readiness(.ready(AuthorityHarness.info(duration: .seconds(5400)))), from: host)
        #expect(flagged.notices(.differentMedia, to: host).map(\.participant) == [b])
    }
}
