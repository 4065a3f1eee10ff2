import Foundation
import Testing
@testable import TandemCore

/// Seeks and rate changes start on a schedule every peer can make (the largest one-way delay plus each peer's
/// reported preroll time, plus the margin), without a prepare round; a peer that cannot make it makes the group
/// wait and everyone starts again together.
@Suite struct OptimisticStartTests {
    static let margin = AuthorityConfiguration().startMargin

    /// Alice (host, 80 ms preroll, on the server's machine) and bob (120 ms preroll, 30 ms away), playing from 0.
    static func playingPair(configuration: AuthorityConfiguration = .withScheduledStarts)
        -> (AuthorityHarness, ParticipantID, ParticipantID) {
        var h = AuthorityHarness(configuration: configuration)
        let a = h.joinReady("alice", preroll: .milliseconds(80), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(120))
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0), from: b)
        h.request(.play, from: a)
        h.advance(ms: 30_000)
        return (h, a, b)
    }

    @Test func aSeekWhilePlayingStartsAtOnceWithoutAPrepareRound() {
        var (h, a, b) = Self.playingPair()
        let seek = h.request(.seek(itemTime: .seconds(600), play: true), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying)
        #expect(playing.anchorItemTime == .seconds(600))
        // The slowest peer: bob's 30 ms delay and 120 ms preroll (alice's 0 + 80 ms is less), plus the margin.
        #expect(playing.anchorSessionTime == h.now + .milliseconds(150) + Self.margin)
        #expect(seek.timelines(to: a) == [playing] && seek.timelines(to: b) == [playing])
        #expect(seek.notices(.seeked, to: a).first?.text == "bob jumped to 10:00")
        // Nobody's "prepared" is needed: the start stands when they arrive.
        h.advance(ms: 100)
        #expect(h.send(.prepared(generation: playing.generation), from: a).timelines(to: a).isEmpty)
        #expect(h.authority.timeline == playing)
    }

    @Test func prerollEstimatesFollowWhatPeersReport() {
        var (h, _, b) = Self.playingPair()
        // Bob's prerolls turn out faster than his join said; alice's 80 ms is now the slowest.
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, prerollEstimate: .milliseconds(20)), from: b)
        h.request(.seek(itemTime: .seconds(60), play: true), from: b)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(80) + Self.margin)
        #expect(h.authority.participants.first { $0.participant.id == b }?.prerollEstimate == .milliseconds(20))
        // Later they get slower again; a report without an estimate changes nothing.
        h.advance(ms: 5_000)
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, prerollEstimate: .milliseconds(90)), from: b)
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0), from: b)
        h.request(.seek(itemTime: .seconds(120), play: true), from: b)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(120) + Self.margin)
        // An absurd figure is bounded, so one peer cannot hold the group for minutes.
        h.advance(ms: 5_000)
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, prerollEstimate: .seconds(3_600)), from: b)
        h.request(.seek(itemTime: .seconds(200), play: true), from: b)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(30) + .seconds(10) + Self.margin)
    }

    @Test func aPeerThatMissesTheStartMakesTheGroupWaitAndEveryoneRestartsTogether() {
        var (h, a, b) = Self.playingPair()
        h.request(.seek(itemTime: .seconds(600), play: true), from: a)
        let start = h.authority.timeline
        #expect(start.isPlaying)
        // Bob's preroll takes longer than he said: he says so 40 ms later, before the start (190 ms away).
        h.advance(ms: 40)
        let missed = h.send(.suspension(.begin(id: 7, reason: .missedStart)), from: b)
        let waiting = h.authority.timeline
        // Nobody has begun: the group stays at the start's item time and waits for everyone's "prepared" there.
        #expect(waiting.anchorItemTime == .seconds(600))
        #expect(waiting.anchorSessionTime == start.anchorSessionTime)
        #expect(waiting.waitingFor == [a: [.loading], b: [.missedStart, .loading]])
        #expect(missed.timelines(to: a) == [waiting] && missed.timelines(to: b) == [waiting])
        #expect(missed.notices(.waiting, to: a).first?.text.contains("bob (catching up with the start") == true)

        h.advance(ms: 20)
        h.send(.prepared(generation: waiting.generation), from: a)
        #expect(!h.authority.timeline.isPlaying)
        h.advance(ms: 200)
        h.send(.prepared(generation: waiting.generation), from: b)
        #expect(!h.authority.timeline.isPlaying, "bob still holds his suspension")
        let restart = h.send(.suspension(.end(id: 7, proposedItemTime: nil)), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying && playing.anchorItemTime == .seconds(600))
        // Both prepared: bob's delay and the margin only.
        #expect(playing.anchorSessionTime == h.now + .milliseconds(30) + Self.margin)
        #expect(restart.timelines(to: a) == [playing] && restart.timelines(to: b) == [playing])
    }

    @Test func aMissReportedAfterTheStartStopsTheGroupAheadOfEveryone() {
        var (h, a, b) = Self.playingPair()
        h.request(.seek(itemTime: .seconds(600), play: true), from: a)
        let start = h.authority.timeline
        // The start was at +190 ms; bob's word comes at +300 ms: alice has rendered since, so the group stops a
        // little ahead, where every peer can stop short of it, and resumes there once bob is back.
        h.advance(ms: 300)
        h.send(.suspension(.begin(id: 7, reason: .missedStart)), from: b)
        let waiting = h.authority.timeline
        let stop = h.now + .milliseconds(30) + Self.margin
        #expect(waiting.anchorSessionTime == stop)
        #expect(waiting.anchorItemTime == start.expectedItemTime(atSessionTime: stop))
        #expect(waiting.waitingFor == [b: [.missedStart]])
        h.advance(ms: 100)
        h.send(.prepared(generation: waiting.generation), from: b)
        h.send(.suspension(.end(id: 7, proposedItemTime: nil)), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying && playing.anchorItemTime == waiting.anchorItemTime)
    }

    @Test func aPeerStillLoadingBlocksTheStart() {
        var h = AuthorityHarness(configuration: .withScheduledStarts)
        let a = h.joinReady("alice", preroll: .milliseconds(80), host: true)
        let (c, _) = h.join("carol")
        h.send(.readiness(.loading(progress: 0.5)), from: c)
        h.request(.seek(itemTime: .seconds(60), play: true), from: a)
        // As without a schedule: nobody starts while someone is loading, and everyone prepares at the seek.
        #expect(h.authority.timeline.waitingFor == [a: [.loading], c: [.loading]])
        h.send(.prepared(generation: h.authority.timeline.generation), from: a)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: c)
        #expect(!h.authority.timeline.isPlaying)
        h.send(.prepared(generation: h.authority.timeline.generation), from: c)
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.anchorItemTime == .seconds(60))
    }

    @Test func aRateChangeSomeoneCannotMakeInPlaceStartsOnTheNewLineAtOnce() {
        var (h, a, b) = Self.playingPair()
        let old = h.authority.timeline
        let change = h.request(.rate(1.5), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying && playing.rate == 1.5)
        // Where the group will be once the slowest can have prerolled there: nobody has shown it yet.
        let start = h.now + .milliseconds(150) + Self.margin
        #expect(playing.anchorSessionTime == start)
        #expect(playing.anchorItemTime == old.expectedItemTime(atSessionTime: start))
        #expect(change.timelines(to: a) == [playing])
        #expect(change.notices(.rateChanged, to: a).first?.text == "bob set the speed to 1.5×")
    }

    @Test func onShortLinksASeekKeepsThePrepareRound() {
        // Everyone within 10 ms: two more legs cost less than an estimate's headroom.
        var h = AuthorityHarness(configuration: .withScheduledStarts)
        let a = h.joinReady("alice", preroll: .milliseconds(80), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(120))
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0), from: b)
        h.request(.play, from: a)
        h.advance(ms: 30_000)
        h.request(.seek(itemTime: .seconds(600), play: true), from: b)
        #expect(h.authority.timeline.waitingFor == [a: [.loading], b: [.loading]])
    }

    @Test func withoutOptimisticStartsASeekStillWaitsForEveryonesPrepared() {
        var configuration = AuthorityConfiguration()
        configuration.optimisticStarts = false
        var (h, a, b) = Self.playingPair(configuration: configuration)
        h.request(.seek(itemTime: .seconds(600), play: true), from: b)
        #expect(h.authority.timeline.waitingFor == [a: [.loading], b: [.loading]])
        h.request(.rate(1.5), from: b)
        #expect(h.authority.timeline.waitingFor == [a: [.loading], b: [.loading]])
    }
}
