import Foundation
import Testing
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// Where a late peer joins is decided in one place: an engine that cannot make a start refuses it
/// (`startMissed`), and the state machine plans a later one on the same line, allowing more time after each miss.
@Suite struct CoordinatorMissedStartTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    static func plays(_ actions: [Machine.Action]) -> [(id: UInt64, item: Int64, session: Int64)] {
        T.engineCommands(actions).compactMap {
            if case .play(let x, let t, _) = $0.1 { return ($0.0, x.nanoseconds, t.nanoseconds) } else { return nil }
        }
    }

    static func engineFailures(_ actions: [Machine.Action]) -> [PlaybackError] {
        actions.compactMap { if case .event(.engineFailed(let e)) = $0 { e } else { nil } }
    }

    @Test func aMissedStartIsPlannedAgainFurtherAlongTheSameLineWithMoreTimeEachMiss() throws {
        var config = Machine.Configuration()
        config.prerollEstimate = sp(200 * ms)
        config.joinMargin = sp(100 * ms)
        var m = Machine(configuration: config)
        _ = m.tick(now: lt(5 * s), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        // The group has played since session 0 from item 100 s; we arrive at local 15 s (session 10 s).
        let welcome = m.receive(T.welcome(T.timeline(5, .playing, at: 0, item: 100 * s)), now: lt(15 * s))
        let loaded = m.engineCompleted(T.engineCommands(welcome)[0].0, .loaded(T.media), now: lt(15 * s))
        var play = try #require(Self.plays(loaded).first)
        var prepare = try #require(T.engineCommands(loaded).first)
        #expect(play.session == 10 * s + 300 * ms)
        var now = 15 * s
        var leads: [Int64] = []
        for miss in 1...5 {
            // The engine prerolled, and was ready only after the start it was given.
            now += 600 * ms
            if case .prepare(let x, _) = prepare.1 { _ = m.engineCompleted(prepare.0, .prepared(itemTime: x), now: lt(now - 300 * ms)) }
            let after = m.engineCompleted(play.id, .failed(.startMissed(lateBy: .milliseconds(300))), now: lt(now))
            let next = try #require(Self.plays(after).first, "miss \(miss) plans another start")
            let sessionNow = now - 5 * s
            leads.append(next.session - sessionNow)
            // Always on the group's line: item = 100 s + (session − 0).
            #expect(next.item == 100 * s + next.session)
            #expect(T.engineCommands(after).map(\.1).first == .prepare(itemTime: it(next.item), rate: 1))
            prepare = try #require(T.engineCommands(after).first)
            // Quiet for the first misses; a peer that keeps missing is reported (and keeps trying).
            #expect(Self.engineFailures(after).isEmpty == (miss < 4), "miss \(miss)")
            play = next
        }
        // One more preroll per miss: 200 × (n + 1) + 100 ms.
        #expect(leads == [500, 700, 900, 1_100, 1_300].map { $0 * ms })
        // Once it plays, the next late join is back to one preroll.
        _ = m.engineCompleted(play.id, .playing, now: lt(now + 1 * s))
        #expect(m.missedStarts == 0)
    }

    /// An engine that runs behind completes a start the machine has already replaced: that one missing must not
    /// plan yet another (it would queue behind the newer one, which would then miss in turn, for ever).
    @Test func aMissedStartAlreadyReplacedByANewerOneIsLeftAlone() throws {
        var config = Machine.Configuration()
        config.prerollEstimate = sp(200 * ms)
        config.joinMargin = sp(100 * ms)
        var m = Machine(configuration: config)
        _ = m.tick(now: lt(5 * s), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let welcome = m.receive(T.welcome(T.timeline(5, .playing, at: 0, item: 100 * s)), now: lt(15 * s))
        let first = try #require(Self.plays(m.engineCompleted(T.engineCommands(welcome)[0].0, .loaded(T.media),
                                                               now: lt(15 * s))).first)
        // A new line (the group restarted elsewhere) replaces that start before the engine got to it.
        let restart = m.receive(.timeline(T.timeline(6, .playing, at: 11 * s, item: 50 * s)), now: lt(15 * s + 20 * ms))
        let second = try #require(Self.plays(restart).first)
        #expect(second.id != first.id)
        // The first one misses: nothing new for the engine, and the newer start still counts.
        let stale = m.engineCompleted(first.id, .failed(.startMissed(lateBy: .milliseconds(400))), now: lt(15 * s + 300 * ms))
        #expect(T.engineCommands(stale).isEmpty, "\(stale)")
        #expect(Self.engineFailures(stale).isEmpty)
        #expect(m.missedStarts == 0)
        // The newer one missing plans another along its line.
        let missed = m.engineCompleted(second.id, .failed(.startMissed(lateBy: .milliseconds(100))), now: lt(15 * s + 600 * ms))
        let third = try #require(Self.plays(missed).first)
        #expect(third.item == 50 * s + (third.session - 11 * s))
        #expect(m.missedStarts == 1)
    }

    /// A start after a prepare round has a short margin on short links; one that reaches a peer prerolled where it
    /// starts a little after its time is still made on its line (the engine leaves out what is past), not planned
    /// again as a lone join a preroll later. Further past than `lateStartAllowance`, it is.
    @Test(arguments: [(10 * ms, true), (29 * ms, true), (31 * ms, false), (200 * ms, false)])
    func aStartALittleLateIsMadeOnItsLineByAPrerolledPeer(late: Int64, onItsLine: Bool) throws {
        var m = Machine(configuration: Machine.Configuration())
        _ = m.tick(now: lt(5 * s), mapping: T.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let welcome = m.receive(T.welcome(T.timeline(5, .paused, at: 0, item: 100 * s)), now: lt(15 * s))
        let loaded = m.engineCompleted(T.engineCommands(welcome)[0].0, .loaded(T.media), now: lt(15 * s))
        let prepare = try #require(T.engineCommands(loaded).first { $0.1 == .prepare(itemTime: it(100 * s), rate: 1) })
        _ = m.engineCompleted(prepare.0, .prepared(itemTime: it(100 * s)), now: lt(15 * s + 50 * ms))
        // The group starts at session 12 s from item 100 s; the start reaches this peer `late` after that.
        let start = m.receive(.timeline(T.timeline(6, .playing, at: 12 * s, item: 100 * s)), now: lt(17 * s + late))
        let play = try #require(Self.plays(start).first)
        if onItsLine {
            #expect(play.session == 12 * s && play.item == 100 * s)
            #expect(!T.engineCommands(start).contains { if case .prepare = $0.1 { true } else { false } })
        } else {
            #expect(play.session > 12 * s + late && play.item == 100 * s + (play.session - 12 * s))
        }
    }

    @Test func aFailureOtherThanAMissedStartIsReportedAtOnce() throws {
        var m = T.loadedMachine()
        let playing = m.receive(.timeline(T.timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        let play = try #require(Self.plays(playing).first)
        let failed = m.engineCompleted(play.id, .failed(.engineFailure("boom")), now: lt(7 * s + 10 * ms))
        #expect(Self.engineFailures(failed) == [.engineFailure("boom")])
        #expect(m.missedStarts == 0)
    }
}
