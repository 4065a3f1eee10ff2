import Foundation
import Testing
@testable import TandemCore

@Suite("Session authority: timeline ordering and scheduling")
struct AuthorityTimelineTests {
    @Test func playStartsAtNowPlusLeadFromLinkReportsAndPreroll() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(300))
        h.send(.linkReport(oneWayDelay: .milliseconds(20), errorBound: 0), from: a)
        h.send(.linkReport(oneWayDelay: .milliseconds(80), errorBound: 0), from: b)
        let before = h.authority.timeline.generation
        let actions = h.request(.play, from: a)
        let timeline = h.authority.timeline
        #expect(timeline.isPlaying)
        #expect(timeline.generation == before + 1)
        #expect(timeline.anchorItemTime == 0)
        // Slowest: bob, 80 ms delay + 300 ms preroll, plus the 40 ms margin.
        #expect(timeline.anchorSessionTime == h.now + .milliseconds(420))
        #expect(timeline.originator == a)
        #expect(actions.timelines(to: a) == [timeline])
        #expect(actions.timelines(to: b) == [timeline])
        #expect(actions.notices(.played, to: b).first?.text == "alice played from 0:00")
    }

    /// On short links (every one-way delay under 10 ms) the margin only covers handing the command to the players:
    /// 8 ms instead of 40; one long link brings the full margin back. Neither is larger than `startMargin`.
    @Test func shortLinksStartWithTheSmallerMargin() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .zero, host: true)
        let b = h.joinReady("bob", preroll: .zero)
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0), from: a)
        h.send(.linkReport(oneWayDelay: .milliseconds(9), errorBound: 0), from: b)
        h.request(.play, from: a)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(9 + 8))
        // Stops keep 20 ms there: peers stop on arrival, and one reached after the stop has rendered past it.
        #expect(h.authority.stopPoint(now: h.now).sessionTime == h.now + .milliseconds(9 + 20))
        h.request(.pause(itemTime: .zero), from: a)
        h.send(.linkReport(oneWayDelay: .milliseconds(12), errorBound: 0), from: b)
        h.advance(ms: 1_000)
        h.request(.play, from: a)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(12 + 40))
        // A configured margin below the short-link one is kept everywhere.
        var configuration = AuthorityConfiguration()
        configuration.startMargin = .milliseconds(5)
        var small = AuthorityHarness(configuration: configuration)
        let c = small.joinReady("carol", preroll: .zero, host: true)
        small.send(.linkReport(oneWayDelay: .milliseconds(1), errorBound: 0), from: c)
        small.request(.play, from: c)
        #expect(small.authority.timeline.anchorSessionTime == small.now + .milliseconds(6))
    }

    /// Over long links the margin is the widest delay spread everyone reported combined in quadrature with the
    /// short-link margin, at most `startMargin`; while anyone's spread is unknown it is `startMargin`. Stops keep
    /// `startMargin` there.
    @Test func longLinksStartWithTheReportedSpread() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .zero, host: true)
        let b = h.joinReady("bob", preroll: .zero)
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0, returnDelaySpread: .milliseconds(1)), from: a)
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        h.request(.play, from: a)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(50 + 40), "bob's spread is unknown")
        #expect(h.authority.stopPoint(now: h.now).sessionTime == h.now + .milliseconds(50 + 40))
        h.request(.pause(itemTime: .zero), from: a)
        // A later report without the field (it is sent only when it changes) keeps the last one.
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, returnDelaySpread: .milliseconds(3)), from: b)
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        h.advance(ms: 1_000)
        h.request(.play, from: a)
        // √(3² + 8²) = 8.544 ms: the spread's and the hand-over's tails are independent.
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(50) + .nanoseconds(8_544_004))
        #expect(h.authority.stopPoint(now: h.now).sessionTime == h.now + .milliseconds(50 + 40))
        h.request(.pause(itemTime: .zero), from: a)
        // The widest spread counts, and the margin never passes `startMargin` (a hostile report is bounded too).
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0, returnDelaySpread: .milliseconds(20)), from: a)
        h.advance(ms: 1_000)
        h.request(.play, from: a)
        // √(20² + 8²) = 21.541 ms (added, they were 28).
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(50) + .nanoseconds(21_540_660))
        h.request(.pause(itemTime: .zero), from: a)
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0, returnDelaySpread: .seconds(-5)), from: a)
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, returnDelaySpread: .seconds(3_600)), from: b)
        h.advance(ms: 1_000)
        h.request(.play, from: a)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(50 + 40))
        // Switched off, long links take `startMargin` whatever was reported.
        var configuration = AuthorityConfiguration()
        configuration.marginFromDelaySpread = false
        var fixed = AuthorityHarness(configuration: configuration)
        let c = fixed.joinReady("carol", preroll: .zero, host: true)
        fixed.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, returnDelaySpread: .milliseconds(2)), from: c)
        fixed.request(.play, from: c)
        #expect(fixed.authority.timeline.anchorSessionTime == fixed.now + .milliseconds(50 + 40))
    }

    @Test func preparedParticipantsAddNoPreroll() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(300))
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0), from: b)
        h.request(.seek(itemTime: .seconds(60), play: false), from: a)
        let generation = h.authority.timeline.generation
        h.send(.prepared(generation: generation), from: b)
        h.advance(ms: 500)
        h.request(.play, from: a)
        // bob is prepared at 1:00 (only his delay counts); alice is not (her preroll counts).
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(140))
        #expect(h.authority.timeline.anchorItemTime == .seconds(60))
    }

    @Test func conflictingRequestsEndWithEveryoneOnTheLastGeneration() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let c = h.joinReady("carol")
        h.request(.play, from: a)
        h.advance(ms: 10_000)
        var all: [SessionAuthority.Action] = []
        all += h.request(.pause(itemTime: .seconds(10)), from: a)
        h.advance(ms: 3)
        all += h.request(.seek(itemTime: .seconds(90), play: false), from: b)
        h.advance(ms: 2)
        all += h.request(.rate(1.5), from: c)
        let last = h.authority.timeline
        for peer in [a, b, c] {
            let received = all.timelines(to: peer)
            #expect(received.count == 3)
            #expect(received.map(\.generation) == received.map(\.generation).sorted())
            #expect(Set(received.map(\.generation)).count == 3)
            #expect(received.last == last)
        }
        #expect(last.isPaused && last.anchorItemTime == .seconds(90) && last.rate == 1.5)
    }

    @Test func pauseSnapsEveryoneToTheOriginatorsItemTime() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 65_000)
        let actions = h.request(.pause(itemTime: .milliseconds(64_950)), from: b)
        let timeline = h.authority.timeline
        #expect(timeline.isPaused)
        #expect(timeline.anchorItemTime == .milliseconds(64_950))
        #expect(timeline.anchorSessionTime == h.now)
        #expect(timeline.originator == b)
        #expect(timeline.expectedItemTime(atSessionTime: h.now + .seconds(5))
                == .milliseconds(64_950))
        #expect(actions.notices(.paused, to: a).first?.text == "bob paused at 1:04")
        #expect(actions.notices(.paused, to: a).first?.participant == b)
    }

    @Test func seekWaitsForEveryoneToPrepareThenStartsTogether() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", preroll: .milliseconds(200), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(200))
        h.send(.linkReport(oneWayDelay: .milliseconds(25), errorBound: 0), from: b)
        h.request(.play, from: a)
        h.advance(ms: 30_000)
        let seek = h.request(.seek(itemTime: .seconds(600), play: true), from: b)
        let waiting = h.authority.timeline
        #expect(waiting.anchorItemTime == .seconds(600))
        #expect(waiting.waitingFor == [a: [.loading], b: [.loading]])
        #expect(seek.notices(.seeked, to: a).first?.text == "bob jumped to 10:00")

        h.advance(ms: 150)
        let first = h.send(.prepared(generation: waiting.generation), from: a)
        #expect(h.authority.timeline.waitingFor == [b: [.loading]])
        #expect(first.timelines(to: b).last?.waitingFor == [b: [.loading]])
        let stillWaiting = h.authority.timeline.generation

        h.advance(ms: 120)
        // bob answers for the first waiting generation; it is at the same position, so it counts.
        let second = h.send(.prepared(generation: waiting.generation), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying)
        #expect(playing.generation == stillWaiting + 1)
        #expect(playing.anchorItemTime == .seconds(600))
        // Both prepared: only bob's delay and the margin.
        #expect(playing.anchorSessionTime == h.now + .milliseconds(65))
        #expect(second.timelines(to: a) == [playing])
        #expect(!second.notices(.resumed, to: a).isEmpty)
    }

    @Test func seekOutsideTheItemIsClampedToIt() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true, info: AuthorityHarness.info(duration: .seconds(100)))
        let generation = h.authority.timeline.generation
        let early = h.request(.seek(itemTime: -1, play: false), from: a)
        #expect(early.refusals(to: a).isEmpty)
        #expect(h.authority.timeline.anchorItemTime == .zero)
        #expect(h.authority.timeline.generation == generation + 1)
        // Past the end: the announced end margin (1 s) before it, playing as asked.
        h.request(.seek(itemTime: .seconds(101), play: true), from: a)
        #expect(h.authority.timeline.anchorItemTime == .seconds(99))
        h.request(.seek(itemTime: .seconds(100), play: false), from: a)
        #expect(h.authority.timeline.anchorItemTime == .seconds(99))
        h.request(.seek(itemTime: .seconds(98), play: false), from: a)
        #expect(h.authority.timeline.anchorItemTime == .seconds(98))
    }

    @Test func rateChangeWhilePlayingPrerollsEveryoneAtTheNewRateThenStartsTogether() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(250))
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0), from: b)
        h.request(.play, from: a)
        let old = h.authority.timeline
        h.advance(ms: 20_000)
        let actions = h.request(.rate(1.5), from: b)
        // Everyone stops where the group is when the request has reached them, and prerolls there at 1.5×.
        let waiting = h.authority.timeline
        #expect(waiting.rate == 1.5)
        #expect(Set(waiting.waitingFor?.keys.map { $0 } ?? []) == [a, b])
        // Where the group will be once the request has reached the farthest peer, plus the start margin: peers
        // stop on arrival, short of that point, so nobody shows a frame twice.
        let stop = h.now + .milliseconds(30) + AuthorityConfiguration().startMargin
        #expect(waiting.anchorSessionTime == stop)
        #expect(waiting.anchorItemTime == old.expectedItemTime(atSessionTime: stop))
        #expect(actions.notices(.rateChanged, to: a).first?.text == "bob set the speed to 1.5×")
        h.advance(ms: 40)
        h.send(.prepared(generation: h.authority.timeline.generation), from: a)
        #expect(!h.authority.timeline.isPlaying)
        h.send(.prepared(generation: h.authority.timeline.generation), from: b)
        // Both prepared: the start needs no preroll, only the slowest one-way delay and the margin.
        let new = h.authority.timeline
        #expect(new.isPlaying && new.rate == 1.5)
        #expect(new.anchorItemTime == waiting.anchorItemTime)
        #expect(new.anchorSessionTime == h.now + .milliseconds(70))
        #expect(new.expectedItemTime(atSessionTime: new.anchorSessionTime + .seconds(2))
            == new.anchorItemTime + .seconds(3))

        for bad in [0, -1, Double.nan, Double.infinity] {
            let refused = h.request(.rate(bad), from: a)
            guard case .refused(_, .invalid?, .timeline?)? = refused.messages(to: a).first else {
                Issue.record("rate \(bad) was not refused")
                continue
            }
        }
        #expect(h.authority.timeline == new)
    }

    @Test func aPeerThatRenderedPastTheStopMovesTheResumePointForEveryone() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 20_000)
        h.request(.rate(1.5), from: a)
        let waiting = h.authority.timeline
        h.send(.prepared(generation: waiting.generation), from: a)
        // Bob heard of the change late (after alice was prepared, so the waiting list has a newer generation) and
        // had shown 80 ms more: both prepare again there, then start.
        #expect(h.authority.timeline.generation == waiting.generation + 1)
        h.advance(ms: 150)
        let past = waiting.anchorItemTime + .milliseconds(80)
        let actions = h.send(.renderedPast(generation: waiting.generation, itemTime: past), from: b)
        #expect(actions.notices(.waiting, to: a).isEmpty)
        let moved = h.authority.timeline
        #expect(moved.generation == waiting.generation + 2)
        #expect(moved.anchorItemTime == past && moved.rate == 1.5)
        #expect(Set(moved.waitingFor?.keys.map { $0 } ?? []) == [a, b])
        // Stale or behind the stop: ignored.
        h.send(.renderedPast(generation: waiting.generation, itemTime: past + .seconds(1)), from: b)
        h.send(.renderedPast(generation: moved.generation, itemTime: past - .milliseconds(10)), from: a)
        #expect(h.authority.timeline == moved)
        h.send(.prepared(generation: moved.generation), from: a)
        h.send(.prepared(generation: moved.generation), from: b)
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.anchorItemTime == past)
    }

    @Test func aReportOfFramesPastASeeksTargetLeavesTheSeekWhereItWent() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 20_000)
        // Alice jumps back to 0:04; bob, still playing the old line when it reaches him, is past 0:04 by 16 s.
        h.request(.seek(itemTime: .seconds(4), play: true), from: a)
        let waiting = h.authority.timeline
        #expect(waiting.anchorItemTime == .seconds(4))
        h.advance(ms: 100)
        h.send(.renderedPast(generation: waiting.generation, itemTime: .milliseconds(20_050)), from: b)
        #expect(h.authority.timeline == waiting)
        h.send(.prepared(generation: waiting.generation), from: a)
        h.send(.prepared(generation: waiting.generation), from: b)
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.anchorItemTime == .seconds(4))
    }

    @Test func aReportOfFramesPastAStopIsBoundByWhereTheLineIsByNow() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 20_000)
        let line = h.authority.timeline
        h.request(.rate(1.5), from: a)
        let waiting = h.authority.timeline
        h.advance(ms: 200)
        // Ten seconds past the stop, 200 ms after it was published: no peer can have shown that; the group stays.
        let reachable = line.expectedItemTime(atSessionTime: h.now + LineStop.allowance)
        h.send(.renderedPast(generation: waiting.generation, itemTime: waiting.anchorItemTime + .seconds(10)), from: b)
        h.send(.renderedPast(generation: waiting.generation, itemTime: reachable + .milliseconds(1)), from: b)
        #expect(h.authority.timeline == waiting)
        // As far as the line has gone (with the allowance): taken.
        h.send(.renderedPast(generation: waiting.generation, itemTime: reachable), from: b)
        #expect(h.authority.timeline.anchorItemTime == reachable && h.authority.timeline.rate == 1.5)
    }

    @Test func rateWhilePausedIsKeptForTheNextPlay() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        h.request(.rate(0.5), from: a)
        #expect(h.authority.timeline.isPaused && h.authority.timeline.rate == 0.5)
        h.request(.play, from: a)
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.rate == 0.5)
    }

    @Test func playWhilePlayingChangesNothing() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        let playing = h.authority.timeline
        let actions = h.request(.play, from: b)
        #expect(h.authority.timeline == playing)
        #expect(actions.timelines(to: b) == [playing])
        #expect(actions.timelines(to: a).isEmpty)
    }

    @Test func clockPingIsAnsweredWithSessionTime() {
        var h = AuthorityHarness()
        let (a, _) = h.join("alice")
        h.now = 123_456_789
        let actions = h.send(.clockPing(ClockPing(sequence: 7, t1: 42)), from: a)
        #expect(actions == [.send(.clockPong(ClockPong(sequence: 7, t1: 42, t2: 123_456_789, t3: 123_456_789)), to: a)])
    }
}
