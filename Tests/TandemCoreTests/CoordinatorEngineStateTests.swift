import Foundation
import Testing
import TandemTesting
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// The coordinator's engine bookkeeping, state by state (`LoadedItem`, `ItemLoad`, `Preroll`, `StartState`,
/// `StallRecovery`): which outcomes move them, which are ignored, and what a failure leaves for the next reconcile.
@Suite struct CoordinatorEngineStateTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    /// A machine that joined at local 5 s (session 0 s), synchronised and loaded "movie", paused at 0.
    static func loaded(_ clock: ManualClock) -> Machine {
        var m = Machine()
        _ = m.tick(now: clock.now, mapping: T.mapping, clockQuality: nil, engineItemTime: nil)
        let load = T.engineCommands(m.receive(T.welcome(T.timeline(1, .paused, at: 0, item: 0)), now: clock.now))[0]
        clock.advance(by: 1 * s)
        _ = m.engineCompleted(load.0, .loaded(T.media), now: clock.now)
        return m
    }

    static func loads(_ actions: [Machine.Action]) -> [(UInt64, String)] {
        T.engineCommands(actions).compactMap { if case .load(let item) = $0.1 { ($0.0, item) } else { nil } }
    }

    static func tick(_ m: inout Machine, _ clock: ManualClock) -> [Machine.Action] {
        m.tick(now: clock.now, mapping: T.mapping, clockQuality: nil, engineItemTime: nil)
    }

    @Test func eachCommandAndItsOutcomeMoveTheStates() throws {
        let clock = ManualClock(5 * s)
        var m = Machine()
        _ = Self.tick(&m, clock)
        let load = try #require(Self.loads(m.receive(T.welcome(T.timeline(1, .paused, at: 0, item: 0)),
                                                     now: clock.now)).first)
        #expect(load.1 == "movie")
        guard case .loading("movie", load.0, _, nil) = m.load else { Issue.record("\(m.load)"); return }
        #expect(m.loaded == .none)
        #expect(m.preroll == .none)
        #expect(m.start == .none)
        #expect(m.target == .idle)

        clock.advance(by: 1 * s)
        _ = m.engineCompleted(load.0, .loaded(T.media), now: clock.now)
        #expect(m.load == .none)
        #expect(m.loaded == .loaded(itemID: "movie", info: T.media))
        #expect(m.loadedItemID == "movie")
        #expect(m.mediaInfo == T.media)
        // A load leaves the engine prerolled at zero for rate 1.
        #expect(m.preroll == .prepared(itemTime: .zero, rate: 1))

        // Local 7 s is session 2 s; the group starts at session 3 s from item 10 s.
        clock.set(7 * s)
        let playing = T.engineCommands(m.receive(.timeline(T.timeline(2, .playing, at: 3 * s, item: 10 * s)),
                                                 now: clock.now))
        #expect(playing.map(\.1) == [.prepare(itemTime: it(10 * s), rate: 1),
                                     .play(from: it(10 * s), atSessionTime: st(3 * s), rate: 1)])
        try #require(playing.count == 2)
        // The play followed the prepare, so the prepare is no longer the latest command.
        #expect(m.preroll == .none)
        #expect(m.start == .starting(command: playing[1].0))
        #expect(m.lastCommandID == playing[1].0)
        clock.advance(by: 100 * ms)
        _ = m.engineCompleted(playing[0].0, .prepared(itemTime: it(10 * s)), now: clock.now)
        #expect(m.preroll == .none)
        clock.advance(by: 900 * ms)
        _ = m.engineCompleted(playing[1].0, .playing, now: clock.now)
        #expect(m.start == .started(at: lt(8 * s)))

        // The group pauses at item 14 s: a prepare there, which its outcome confirms and the group hears of.
        clock.advance(by: 4 * s)
        let pause = T.engineCommands(m.receive(.timeline(T.timeline(3, .paused, at: 7 * s, item: 14 * s)),
                                               now: clock.now))
        #expect(pause.map(\.1) == [.prepare(itemTime: it(14 * s), rate: 1)])
        try #require(pause.count == 1)
        #expect(m.preroll == .preparing(command: pause[0].0, itemTime: it(14 * s), rate: 1))
        #expect(m.start == .started(at: lt(8 * s)))
        clock.advance(by: 50 * ms)
        let prepared = m.engineCompleted(pause[0].0, .prepared(itemTime: it(14 * s)), now: clock.now)
        #expect(m.preroll == .prepared(itemTime: it(14 * s), rate: 1))
        #expect(T.sent(prepared) == [.prepared(generation: 3)])
    }

    @Test func theOldItemStaysLoadedWhileAnotherLoadsAndAfterItFails() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        clock.advance(by: 1 * s)
        let next = m.receive(.activity(T.envelope("episode-2")), now: clock.now)
        let load = try #require(Self.loads(next).first)
        #expect(load.1 == "episode-2")
        #expect(m.loadedItemID == "movie" && m.mediaInfo == T.media)
        #expect(m.load.item == "episode-2")
        #expect(m.localSuspensionReasons == [.loading])

        clock.advance(by: 1 * s)
        let failed = m.engineCompleted(load.0, .failed(.noSuchFile(path: "/m/episode-2.webm")), now: clock.now)
        #expect(T.sent(failed) == [.readiness(.failed("no such file: /m/episode-2.webm — check the path"))])
        #expect(m.load == .failed(item: "episode-2"))
        #expect(m.loaded == .loaded(itemID: "movie", info: T.media))
        #expect(m.localSuspensionReasons.isEmpty)
        // Not asked for again on its own.
        clock.advance(by: 1 * s)
        #expect(T.engineCommands(Self.tick(&m, clock)).isEmpty)
    }

    @Test func aFailedItemIsNotAskedForAgainUntilAnotherItemHasLoaded() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        let first = try #require(Self.loads(m.receive(.activity(T.envelope("episode-2")), now: clock.now)).first)
        _ = m.engineCompleted(first.0, .failed(.engineFailure("no decoder")), now: clock.now)

        // Back to the item still loaded: ready at once, nothing to load; then the failed one again: still refused.
        clock.advance(by: 1 * s)
        let back = m.receive(.activity(T.envelope("movie")), now: clock.now)
        #expect(T.sent(back).contains(.readiness(.ready(T.media))))
        #expect(Self.loads(back).isEmpty)
        #expect(Self.loads(m.receive(.activity(T.envelope("episode-2")), now: clock.now)).isEmpty)
        #expect(m.load == .failed(item: "episode-2"))

        // Another item loads; while it does, the failed item is still remembered.
        clock.advance(by: 1 * s)
        let third = try #require(Self.loads(m.receive(.activity(T.envelope("episode-3")), now: clock.now)).first)
        #expect(third.1 == "episode-3")
        #expect(m.load.failedItem == "episode-2")
        #expect(Self.loads(m.receive(.activity(T.envelope("episode-2")), now: clock.now)).isEmpty)
        #expect(m.load.item == "episode-3")
        // Once it has loaded, the failed item is asked for again.
        clock.advance(by: 1 * s)
        let done = m.engineCompleted(third.0, .loaded(T.media), now: clock.now)
        #expect(m.loadedItemID == "episode-3")
        #expect(Self.loads(done).map(\.1) == ["episode-2"])
        #expect(m.load.failedItem == nil)
    }

    @Test func onlyTheLatestLoadsOutcomeCounts() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        let two = try #require(Self.loads(m.receive(.activity(T.envelope("episode-2")), now: clock.now)).first)
        clock.advance(by: 100 * ms)
        let three = try #require(Self.loads(m.receive(.activity(T.envelope("episode-3")), now: clock.now)).first)
        // The replaced load keeps the one loading suspension.
        #expect(m.localSuspensionReasons == [.loading])

        clock.advance(by: 100 * ms)
        let stale = m.engineCompleted(two.0, .loaded(T.media), now: clock.now)
        #expect(stale.isEmpty)
        #expect(m.loadedItemID == "movie")
        #expect(m.load.item == "episode-3")
        let staleFailure = m.engineCompleted(two.0, .failed(.engineFailure("gone")), now: clock.now)
        #expect(T.sent(staleFailure).isEmpty)
        #expect(m.load.item == "episode-3" && m.load.failedItem == nil)

        clock.advance(by: 100 * ms)
        let done = m.engineCompleted(three.0, .loaded(T.media), now: clock.now)
        #expect(T.sent(done).contains(.readiness(.ready(T.media))))
        #expect(m.loadedItemID == "episode-3")
        #expect(m.localSuspensionReasons.isEmpty)
    }

    @Test func anOlderCommandsOutcomeIsIgnored() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        // Two pauses in a row: the second prepare replaces the first.
        clock.set(7 * s)
        let p1 = try #require(T.engineCommands(m.receive(.timeline(T.timeline(2, .paused, at: 0, item: 30 * s)),
                                                         now: clock.now)).first)
        let p2 = try #require(T.engineCommands(m.receive(.timeline(T.timeline(3, .paused, at: 0, item: 40 * s)),
                                                         now: clock.now)).first)
        #expect(p2.1 == .prepare(itemTime: it(40 * s), rate: 1))
        clock.advance(by: 50 * ms)
        #expect(m.engineCompleted(p1.0, .prepared(itemTime: it(30 * s)), now: clock.now).isEmpty)
        #expect(m.preroll == .preparing(command: p2.0, itemTime: it(40 * s), rate: 1))
        clock.advance(by: 50 * ms)
        #expect(T.sent(m.engineCompleted(p2.0, .prepared(itemTime: it(40 * s)), now: clock.now))
                == [.prepared(generation: 3)])

        // A start replaced by a line switch: only the latest start's outcome counts.
        clock.advance(by: 1 * s)   // local 8.1 s, session 3.1 s
        let start = T.engineCommands(m.receive(.timeline(T.timeline(4, .playing, at: 4 * s, item: 40 * s)),
                                               now: clock.now))
        let q1 = try #require(start.last)
        let switched = T.engineCommands(m.receive(.timeline(T.timeline(5, .playing, at: 6 * s, item: 42 * s, rate: 2)),
                                                  now: clock.now))
        #expect(switched.map(\.1) == [.play(from: it(42 * s), atSessionTime: st(6 * s), rate: 2)])
        try #require(switched.count == 1)
        #expect(m.start == .starting(command: switched[0].0))
        clock.advance(by: 900 * ms)
        _ = m.engineCompleted(q1.0, .playing, now: clock.now)
        #expect(m.start == .starting(command: switched[0].0))
        clock.advance(by: 2 * s)
        _ = m.engineCompleted(switched[0].0, .playing, now: clock.now)
        #expect(m.start == .started(at: clock.now))
    }

    @Test func aFailedPlayIsForgottenAndRetriedOnTheNextReconcile() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        clock.set(7 * s)
        // Not from zero, where loading left the engine prerolled: a prepare, then the play.
        let playing = T.engineCommands(m.receive(.timeline(T.timeline(2, .playing, at: 3 * s, item: 10 * s)),
                                                 now: clock.now))
        try #require(playing.count == 2, "\(playing)")
        clock.advance(by: 10 * ms)
        _ = m.engineCompleted(playing[0].0, .prepared(itemTime: it(10 * s)), now: clock.now)
        clock.advance(by: 10 * ms)
        let failed = m.engineCompleted(playing[1].0, .failed(.engineFailure("boom")), now: clock.now)
        #expect(failed.contains(.event(.engineFailed(.engineFailure("boom")))))
        #expect(T.engineCommands(failed).isEmpty)
        #expect(m.target == .idle)
        #expect(m.start == .none)
        #expect(m.preroll == .none)

        clock.advance(by: 30 * ms)
        let retry = T.engineCommands(Self.tick(&m, clock)).map(\.1)
        #expect(retry == [.prepare(itemTime: it(10 * s), rate: 1),
                          .play(from: it(10 * s), atSessionTime: st(3 * s), rate: 1)])
    }

    @Test func aFailedPrepareIsForgottenAndRetriedOnTheNextReconcile() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        clock.set(7 * s)
        let prepare = try #require(T.engineCommands(m.receive(.timeline(T.timeline(2, .paused, at: 0, item: 30 * s)),
                                                              now: clock.now)).first)
        clock.advance(by: 20 * ms)
        let failed = m.engineCompleted(prepare.0, .failed(.engineFailure("seek failed")), now: clock.now)
        #expect(T.engineCommands(failed).isEmpty && T.sent(failed).isEmpty)
        #expect(m.preroll == .none)
        #expect(m.target == .idle)

        clock.advance(by: 30 * ms)
        let again = try #require(T.engineCommands(Self.tick(&m, clock)).first)
        #expect(again.1 == .prepare(itemTime: it(30 * s), rate: 1))
        clock.advance(by: 20 * ms)
        #expect(T.sent(m.engineCompleted(again.0, .prepared(itemTime: it(30 * s)), now: clock.now))
                == [.prepared(generation: 2)])
    }

    @Test func aMissedStartCountsTheMissAndWaitsForTheStartPlannedInstead() throws {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        clock.set(7 * s)
        // Not from zero, where loading left the engine prerolled: a prepare, then the play.
        let playing = T.engineCommands(m.receive(.timeline(T.timeline(2, .playing, at: 3 * s, item: 10 * s)),
                                                 now: clock.now))
        try #require(playing.count == 2, "\(playing)")
        _ = m.engineCompleted(playing[0].0, .prepared(itemTime: it(10 * s)), now: clock.now)
        // Local 7.8 s is session 2.8 s: too late for 3 s; the next start allows two prerolls plus the margin.
        clock.set(7_800 * ms)
        let missed = m.engineCompleted(playing[1].0, .failed(.startMissed(lateBy: .milliseconds(100))), now: clock.now)
        let replanned = T.engineCommands(missed)
        #expect(replanned.map(\.1) == [.prepare(itemTime: it(10_500 * ms), rate: 1),
                                       .play(from: it(10_500 * ms), atSessionTime: st(3_500 * ms), rate: 1)])
        #expect(m.missedStarts == 1)
        try #require(replanned.count == 2)
        #expect(m.start == .starting(command: replanned[1].0))
        clock.advance(by: 900 * ms)
        _ = m.engineCompleted(replanned[1].0, .playing, now: clock.now)
        #expect(m.missedStarts == 0)
        #expect(m.start == .started(at: clock.now))
    }

    /// A playing peer that stalled at 10 s, was told to recover at item 4.5 s (generation 3), and recovered at
    /// 12 s: the machine, its clock and the recovery's prepare command.
    static func recoveringFromStall() throws -> (Machine, ManualClock, (UInt64, EngineCommand)) {
        let clock = ManualClock(5 * s)
        var m = Self.loaded(clock)
        clock.set(7 * s)
        _ = m.receive(.timeline(T.timeline(2, .playing, at: 3 * s, item: 0)), now: clock.now)
        clock.set(10 * s)
        _ = m.engineEvent(.stalled, now: clock.now)
        clock.advance(by: 50 * ms)
        _ = m.receive(.timeline(T.timeline(3, .waiting(for: [T.me: [.stallRecovery]]), at: 5 * s, item: 4_500 * ms)),
                      now: clock.now)
        clock.set(12 * s)
        let prepare = try #require(T.engineCommands(m.engineEvent(.recovered, now: clock.now)).first)
        return (m, clock, prepare)
    }

    @Test func aFailedStallRecoveryPrepareEndsTheSuspensionWithoutAnAcknowledgement() throws {
        let (recovering, clock, prepare) = try Self.recoveringFromStall()
        var m = recovering
        guard case .prerolling(prepare.0, _, 3) = m.recovery else { Issue.record("\(m.recovery)"); return }
        #expect(m.localSuspensionReasons == [.stallRecovery])

        clock.advance(by: 40 * ms)
        let failed = m.engineCompleted(prepare.0, .failed(.engineFailure("seek failed")), now: clock.now)
        let sent = T.sent(failed)
        #expect(sent.contains { if case .suspension(.end) = $0 { true } else { false } })
        #expect(!sent.contains(.prepared(generation: 3)))
        #expect(m.recovery == .none)
        #expect(m.localSuspensionReasons.isEmpty)
        // The next reconcile prerolls at the stop again and acknowledges it the usual way.
        clock.advance(by: 20 * ms)
        let again = try #require(T.engineCommands(Self.tick(&m, clock)).first)
        #expect(again.1 == .prepare(itemTime: it(4_500 * ms), rate: 1))
        #expect(T.sent(m.engineCompleted(again.0, .prepared(itemTime: it(4_500 * ms)), now: clock.now))
                == [.prepared(generation: 3)])
    }

    @Test func aSecondStallDuringTheFirstRecoveryLeavesNoSuspensionOpen() throws {
        let (recovering, clock, first) = try Self.recoveringFromStall()
        var m = recovering
        guard case .prerolling(first.0, _, 3) = m.recovery else { Issue.record("\(m.recovery)"); return }

        // The engine stalls again before that preroll is done: the new stall's suspension opens before the first
        // one closes, so the group keeps waiting throughout.
        clock.advance(by: 30 * ms)
        let again = T.sent(m.engineEvent(.stalled, now: clock.now))
        let began = again.firstIndex { if case .suspension(.begin) = $0 { true } else { false } }
        let ended = again.firstIndex { if case .suspension(.end) = $0 { true } else { false } }
        #expect(began != nil && ended != nil && began! < ended!, "\(again)")
        #expect(m.recovery == .none)
        #expect(m.localSuspensionReasons == [.stallRecovery])
        // The superseded preroll completing changes nothing.
        _ = m.engineCompleted(first.0, .prepared(itemTime: it(4_500 * ms)), now: clock.now)
        #expect(m.localSuspensionReasons == [.stallRecovery])

        // Recovered again: prerolls at the stop, acknowledges, and no suspension is left open.
        clock.advance(by: 200 * ms)
        let second = try #require(T.engineCommands(m.engineEvent(.recovered, now: clock.now)).first)
        #expect(second.1 == .prepare(itemTime: it(4_500 * ms), rate: 1))
        let done = T.sent(m.engineCompleted(second.0, .prepared(itemTime: it(4_500 * ms)), now: clock.now))
        #expect(done.contains(.prepared(generation: 3)), "\(done)")
        #expect(m.recovery == .none)
        #expect(m.localSuspensionReasons.isEmpty)
    }
}
