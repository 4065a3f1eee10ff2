import Foundation
import Testing
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// The peer's side of scheduled starts: it reports how long its prerolls take, and a start the group scheduled
/// for it that it cannot make becomes a `missedStart` suspension, held until it stands where the group waits.
@Suite struct CoordinatorScheduledStartTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    static func suspensionsBegun(_ actions: [Machine.Action]) -> [(UInt64, SuspensionReason)] {
        T.sent(actions).compactMap { if case .suspension(.begin(let id, let reason)) = $0 { (id, reason) } else { nil } }
    }

    static func suspensionsEnded(_ actions: [Machine.Action]) -> [UInt64] {
        T.sent(actions).compactMap { if case .suspension(.end(let id, _)) = $0 { id } else { nil } }
    }

    static func reportedPreroll(_ actions: [Machine.Action]) -> TimeSpan?? {
        for case .linkReport(_, _, _, let preroll, _, _, _) in T.sent(actions) { return .some(preroll) }
        return nil
    }

    @Test func aScheduledStartThatArrivesTooLateIsReportedAndHeldUntilPreparedWhereTheGroupWaits() throws {
        var m = T.playingMachine()
        // A seek to 100 s scheduled at session 20 s reaches us 10 ms before it (local = session + 5 s).
        let late = m.receive(.timeline(T.timeline(3, .playing, at: 20 * s, item: 100 * s)), now: lt(24_990 * ms))
        let begun = try #require(Self.suspensionsBegun(late).first)
        #expect(begun.1 == .missedStart)
        #expect(m.localSuspensionReasons == [.missedStart])
        // Meanwhile it joins the line alone (an authority that goes on without it still finds it in step).
        #expect(T.engineCommands(late).map(\.1).first.map { if case .prepare = $0 { true } else { false } } == true)

        // The group stops at the start's item time; we preroll there, say so, and only then end the suspension.
        let waiting = m.receive(.timeline(T.timeline(4, .waiting(for: [:]), at: 20 * s, item: 100 * s)),
                                now: lt(25_020 * ms))
        let prepare = try #require(T.engineCommands(waiting).last)
        #expect(prepare.1 == .prepare(itemTime: it(100 * s), rate: 1))
        #expect(Self.suspensionsEnded(waiting).isEmpty)
        let ready = m.engineCompleted(prepare.0, .prepared(itemTime: it(100 * s)), now: lt(25_060 * ms))
        let sent = T.sent(ready)
        let preparedIndex = try #require(sent.firstIndex(of: .prepared(generation: 4)))
        let endIndex = try #require(sent.firstIndex(of: .suspension(.end(id: begun.0, proposedItemTime: nil))))
        #expect(preparedIndex < endIndex, "the group hears \"prepared\" before the suspension ends")
        #expect(m.localSuspensionReasons.isEmpty)
    }

    /// The restart that ends a wait where the group stood is not a scheduled start: everyone prepared there. A peer
    /// that gets it late (a retransmission) joins alone without stopping the group again — on a lossy link a stop and
    /// a restart that both travel slowly would otherwise repeat. It plans its join behind what its engine has not
    /// finished: one more preroll per command ahead of it.
    @Test func aRestartAfterAWaitThatArrivesLateIsJoinedAloneBehindTheEnginesQueue() throws {
        var m = T.playingMachine()
        // The group waits at 100 s (session 20 s); our prepare there is under way when the restart arrives, 10 ms
        // before its start (local = session + 5 s).
        let waiting = m.receive(.timeline(T.timeline(3, .waiting(for: [:]), at: 20 * s, item: 100 * s)), now: lt(24_800 * ms))
        let prepare = try #require(T.engineCommands(waiting).last)
        #expect(prepare.1 == .prepare(itemTime: it(100 * s), rate: 1))
        let late = m.receive(.timeline(T.timeline(4, .playing, at: 20 * s + 100 * ms, item: 100 * s)), now: lt(25_090 * ms))
        #expect(Self.suspensionsBegun(late).isEmpty, "the group is not stopped again")
        #expect(m.localSuspensionReasons.isEmpty)
        let join = try #require(CoordinatorMissedStartTests.plays(late).first)
        // One preroll for the join, one for the prepare still running, and the margin.
        let expected = 20_090 * ms + 2 * m.configuration.prerollEstimate.nanoseconds + m.configuration.joinMargin.nanoseconds
        #expect(join.session == expected)
        #expect(join.item == 100 * s + (join.session - (20 * s + 100 * ms)))
    }

    @Test func aScheduledStartTheEngineMissesIsReportedAndEndsOnceThePeerPlaysInStep() throws {
        var m = T.playingMachine()
        // In time by the estimate: the engine prerolls and is given the start…
        let seek = m.receive(.timeline(T.timeline(3, .playing, at: 20 * s, item: 100 * s)), now: lt(24 * s))
        let play = try #require(CoordinatorMissedStartTests.plays(seek).first)
        #expect(Self.suspensionsBegun(seek).isEmpty)
        // …but is ready only after it.
        let missed = m.engineCompleted(play.id, .failed(.startMissed(lateBy: .milliseconds(30))), now: lt(25_030 * ms))
        let begun = try #require(Self.suspensionsBegun(missed).first)
        #expect(begun.1 == .missedStart)
        let rejoin = try #require(CoordinatorMissedStartTests.plays(missed).first)
        // An authority that does not wait for us (we are excused): playing in step ends the suspension.
        let playing = m.engineCompleted(rejoin.id, .playing, now: lt(25_500 * ms))
        #expect(Self.suspensionsEnded(playing) == [begun.0])
        #expect(m.localSuspensionReasons.isEmpty)
    }

    @Test func aLateJoinerThatMissesItsFirstStartJoinsAloneWithoutHoldingTheGroup() throws {
        var config = Machine.Configuration()
        config.prerollEstimate = sp(200 * ms)
        var m = Machine(configuration: config)
        _ = m.tick(now: lt(5 * s), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let welcome = m.receive(T.welcome(T.timeline(5, .playing, at: 0, item: 100 * s)), now: lt(15 * s))
        let loaded = m.engineCompleted(T.engineCommands(welcome)[0].0, .loaded(T.media), now: lt(15 * s))
        let play = try #require(CoordinatorMissedStartTests.plays(loaded).first)
        let missed = m.engineCompleted(play.id, .failed(.startMissed(lateBy: .milliseconds(30))), now: lt(16 * s))
        #expect(Self.suspensionsBegun(missed).isEmpty)
        #expect(!CoordinatorMissedStartTests.plays(missed).isEmpty)
    }

    @Test func measuredPrerollTimesAreReportedWhenTheyChange() throws {
        var m = T.loadedMachine()
        // Before any measured preroll: nothing to add to the join's estimate.
        let first = m.tick(now: lt(7 * s), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        #expect(Self.reportedPreroll(first) == .some(nil))
        // A pause elsewhere: we preroll at 50 s, which takes 40 ms from the timeline's arrival.
        let paused = m.receive(.timeline(T.timeline(2, .paused, at: 2 * s, item: 50 * s)), now: lt(7_100 * ms))
        let prepare = try #require(T.engineCommands(paused).first)
        _ = m.engineCompleted(prepare.0, .prepared(itemTime: it(50 * s)), now: lt(7_140 * ms))
        let report = m.tick(now: lt(8_100 * ms), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)),
                            engineItemTime: nil)
        // The slowest recent one, a tenth more, and the engine's hand-over (5 ms).
        #expect(Self.reportedPreroll(report) == .some(sp(49 * ms)))
        let again = m.tick(now: lt(9_200 * ms), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)),
                           engineItemTime: nil)
        #expect(Self.reportedPreroll(again) == .some(nil), "unchanged: not sent again")
    }

    static func reportedSpread(_ actions: [Machine.Action]) -> TimeSpan?? {
        for case .linkReport(_, _, _, _, let spread, _, _) in T.sent(actions) { return .some(spread) }
        return nil
    }

    /// The way back's delay spread the link measures goes into the next link report when it moved by a millisecond
    /// or more since the authority last heard it, and again after a reconnect's welcome.
    @Test func theReturnDelaySpreadIsReportedWhenItChanges() {
        var m = T.loadedMachine()
        let quality = (errorBound: sp(500_000), roundTrip: sp(100 * ms))
        func tick(at seconds: Int64) -> [Machine.Action] {
            m.tick(now: lt(seconds * s), mapping: T.mapping, clockQuality: quality, engineItemTime: nil)
        }
        #expect(Self.reportedSpread(tick(at: 7)) == .some(nil), "not measured yet")
        m.returnDelaySpread = sp(22 * ms)
        #expect(Self.reportedSpread(tick(at: 8)) == .some(sp(22 * ms)))
        m.returnDelaySpread = sp(22 * ms + 900_000)
        #expect(Self.reportedSpread(tick(at: 9)) == .some(nil), "moved by less than a millisecond")
        m.returnDelaySpread = sp(30 * ms)
        #expect(Self.reportedSpread(tick(at: 10)) == .some(sp(30 * ms)))
        #expect(Self.reportedSpread(tick(at: 11)) == .some(nil))
        _ = m.receive(T.welcome(T.timeline(1, .paused, at: 0, item: 0)), now: lt(11_500 * ms))
        #expect(Self.reportedSpread(tick(at: 12)) == .some(sp(30 * ms)), "a new connection hears it again")
    }
}
