import Foundation
import Testing
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// A second welcome (the link reconnected): the peer resynchronises with the fresh snapshot and reports again
/// what the authority forgot with the lost connection.
@Suite struct CoordinatorReconnectTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    static func events(_ actions: [Machine.Action]) -> [CoordinatorEvent] {
        actions.compactMap { if case .event(let e) = $0 { return e } else { return nil } }
    }

    @Test func aReconnectReportsReadinessSuspensionsAndPreparationAgain() {
        var m = T.loadedMachine()
        let (suspension, begun) = m.beginSuspension(for: .userChangingTime, now: lt(7 * s))
        #expect(T.sent(begun) == [.suspension(.begin(id: suspension.rawValue, reason: .userChangingTime))])

        // Same activity, same generation: no activity event, but readiness and the suspension go out again.
        let again = m.receive(T.welcome(T.timeline(1, .paused, at: 0, item: 0)), now: lt(9 * s))
        let sent = T.sent(again)
        #expect(sent.contains(.readiness(.ready(T.media))))
        #expect(sent.contains(.suspension(.begin(id: suspension.rawValue, reason: .userChangingTime))))
        #expect(!Self.events(again).contains { if case .activityChanged = $0 { true } else { false } })
        #expect(T.engineCommands(again).isEmpty)

        // Once the suspension ends, the preroll at the (unchanged) stop is acknowledged again.
        let ended = m.endSuspension(suspension, now: lt(10 * s))
        #expect(T.sent(ended).contains(.prepared(generation: 1)))
    }

    @Test func aReconnectWithoutSuspensionsAcknowledgesThePrerollAtOnce() {
        var m = T.loadedMachine()
        let again = m.receive(T.welcome(T.timeline(1, .paused, at: 0, item: 0)), now: lt(9 * s))
        #expect(T.sent(again) == [.readiness(.ready(T.media)), .prepared(generation: 1)])
    }

    @Test func aReconnectAfterTheGroupMovedOnPrerollsAtTheNewStop() {
        var m = T.loadedMachine()
        // While the link was down the host paused at 42 s (generation 3).
        let again = m.receive(T.welcome(T.timeline(3, .paused, at: 4 * s, item: 42 * s)), now: lt(12 * s))
        let commands = T.engineCommands(again)
        #expect(commands.map(\.1) == [.prepare(itemTime: it(42 * s), rate: 1)])
        #expect(!T.sent(again).contains(.prepared(generation: 3)))
        let prepared = m.engineCompleted(commands[0].0, .prepared(itemTime: it(42 * s)), now: lt(12 * s + 100 * ms))
        #expect(T.sent(prepared) == [.prepared(generation: 3)])
    }

    @Test func aReconnectIntoARunningTimelineJoinsItAtTheProjectedPosition() {
        var m = T.loadedMachine()
        // Playing since session 0 from item 0 (generation 2), in step.
        let playing = m.receive(.timeline(T.timeline(2, .playing, at: 1 * s, item: 0)), now: lt(5 * s))
        #expect(T.engineCommands(playing).map(\.1).last == .play(from: 0, atSessionTime: st(1 * s), rate: 1))
        // The engine did all it was told (a join planned behind unfinished commands would allow for them).
        for (id, command) in T.engineCommands(playing) {
            if case .prepare(let x, _) = command { _ = m.engineCompleted(id, .prepared(itemTime: x), now: lt(5 * s + 100 * ms)) }
            if case .play = command { _ = m.engineCompleted(id, .playing, now: lt(5 * s + 100 * ms)) }
        }
        // Back after a gap: someone seeked to 100 s at session 8 s (generation 4); now is session 10 s.
        let again = m.receive(T.welcome(T.timeline(4, .playing, at: 8 * s, item: 100 * s)), now: lt(15 * s))
        let commands = T.engineCommands(again).map(\.1)
        let start = 10 * s + (m.configuration.prerollEstimate + m.configuration.joinMargin).nanoseconds
        let item = 100 * s + (start - 8 * s)
        #expect(commands == [.prepare(itemTime: it(item), rate: 1), .play(from: it(item), atSessionTime: st(start), rate: 1)])
        #expect(T.sent(again).contains(.readiness(.ready(T.media))))
    }
}
