import Foundation
import Testing
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// The user's intents, decided by the coordinator's state machine with its own state and the limits the authority
/// announced: toggling, where a pause lands, seek steps, rate steps, and what is refused before sending.
@Suite struct CoordinatorIntentTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias Fixture = CoordinatorStateMachineTests

    /// The timeline requests among `actions`.
    static func requests(_ actions: [Machine.Action]) -> [TimelineRequest.Command] {
        Fixture.sent(actions).compactMap { if case .timelineRequest(let r) = $0 { r.command } else { nil } }
    }

    static func refusals(_ actions: [Machine.Action]) -> [Refusal] {
        actions.compactMap { if case .refused(let r) = $0 { r } else { nil } }
    }

    /// A loaded machine (paused at 0, a 600 s item) that has received `timeline` (generation 2).
    static func machine(_ status: Timeline.Status, item: Int64 = 10 * s, rate: Double = 1) -> Machine {
        var m = Fixture.loadedMachine()
        _ = m.receive(.timeline(Fixture.timeline(2, status, at: 0, item: item, rate: rate)), now: lt(5 * s))
        return m
    }

    /// A refusal `body` throws, or nil (recorded) when it does not throw.
    static func refusal(_ body: () throws(Refusal) -> [Machine.Action]) -> Refusal? {
        do {
            let actions = try body()
            Issue.record("not refused: \(actions)")
        } catch { return error }
        return nil
    }

    @Test("toggle: a paused group plays; a playing or waiting one pauses where this player is; again at once plays, while the pause is on its way")
    func toggle() {
        var paused = Self.machine(.paused)
        #expect(Self.requests(paused.togglePlayPause(engineItemTime: nil, now: lt(7 * s))) == [.play])

        var playing = Self.machine(.playing)
        let pause = playing.togglePlayPause(engineItemTime: .seconds(12.5), now: lt(7 * s))
        #expect(Self.requests(pause) == [.pause(itemTime: .seconds(12.5))])
        // The group's timeline still says playing, but this player's pause is on its way: the next press plays.
        #expect(playing.isPaused(now: lt(7 * s + 100 * ms)))
        #expect(Self.requests(playing.togglePlayPause(engineItemTime: .seconds(12.6), now: lt(7 * s + 100 * ms)))
            == [.play])

        var waiting = Self.machine(.waiting(for: [Fixture.bob: [.loading]]))
        #expect(Self.requests(waiting.togglePlayPause(engineItemTime: nil, now: lt(7 * s)))
            == [.pause(itemTime: .seconds(10))], "a waiting group stops where it waits")

        // Before any timeline: play, as the peer always did.
        var fresh = Machine()
        #expect(Self.requests(fresh.togglePlayPause(engineItemTime: nil, now: lt(1 * s))) == [.play])
    }

    @Test("a pause without the engine's position lands on the group's line now (local 7 s is session 2 s: item 12 s)")
    func pauseWithoutAPosition() {
        var playing = Self.machine(.playing)
        #expect(playing.position(engineItemTime: nil, now: lt(7 * s)) == .seconds(12))
        #expect(Self.requests(playing.pause(engineItemTime: nil, now: lt(7 * s))) == [.pause(itemTime: .seconds(12))])
        #expect(Self.machine(.paused, item: 30 * s).position(engineItemTime: nil, now: lt(7 * s)) == .seconds(30))
        #expect(Machine().position(engineItemTime: nil, now: lt(7 * s)) == .zero)
    }

    @Test("seek steps move from this player's position and stop at 0 and at the end margin before the end")
    func seekStepsAreClamped() {
        var m = Self.machine(.paused)
        #expect(Self.requests(m.seek(.forward, engineItemTime: .seconds(100), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(110), play: false)])
        #expect(Self.requests(m.seek(.farBack, engineItemTime: .seconds(100), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(40), play: false)])
        #expect(Self.requests(m.seek(.farBack, engineItemTime: .seconds(5), now: lt(7 * s)))
            == [.seek(itemTime: .zero, play: false)], "not before the start")
        #expect(Self.requests(m.seek(.forward, engineItemTime: .seconds(595), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(599), play: false)], "1 s before the end of the 600 s item")
        #expect(Self.requests(m.seek(by: .seconds(-3), engineItemTime: .seconds(599.5), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(596.5), play: false)])
        // A playing group keeps playing after a step.
        var playing = Self.machine(.playing)
        #expect(Self.requests(playing.seek(.farForward, engineItemTime: .seconds(20), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(80), play: true)])
    }

    @Test("a seek to a time is refused before 0 and at or past the end of the loaded item, in words; 0 and the last moment are fine")
    func seekToATime() {
        var m = Self.machine(.paused)
        let late = Self.refusal { () throws(Refusal) in try m.seek(to: .seconds(600), now: lt(7 * s)) }
        #expect(late == Refusal(.invalid, request: .timeline, "cannot seek to 600.0 s: the item lasts 600.0 s"))
        let early = Self.refusal { () throws(Refusal) in try m.seek(to: .seconds(-1), now: lt(7 * s)) }
        #expect(early?.reason == "cannot seek before the start — use a time of 0 or more seconds")
        #expect(Self.requests((try? m.seek(to: .zero, now: lt(7 * s))) ?? []) == [.seek(itemTime: .zero, play: false)])
        #expect(Self.requests((try? m.seek(to: .seconds(599.9), now: lt(7 * s))) ?? [])
            == [.seek(itemTime: .seconds(599.9), play: false)])
    }

    @Test("rate steps move between the steps and stop at both ends; a rate outside the range is refused before sending")
    func rateSteps() {
        var m = Self.machine(.playing)
        #expect(Self.requests((try? m.stepRate(up: true, now: lt(7 * s))) ?? []) == [.rate(1.25)])
        #expect(Self.requests((try? m.stepRate(up: false, now: lt(7 * s))) ?? []) == [.rate(0.75)])

        var fastest = Self.machine(.playing, rate: 2)
        let up = Self.refusal { () throws(Refusal) in try fastest.stepRate(up: true, now: lt(7 * s)) }
        #expect(up == Refusal(.invalid, request: .timeline, "already at the fastest rate (2×)"))
        #expect(Self.requests((try? fastest.stepRate(up: false, now: lt(7 * s))) ?? []) == [.rate(1.5)])
        var slowest = Self.machine(.playing, rate: 0.5)
        let down = Self.refusal { () throws(Refusal) in try slowest.stepRate(up: false, now: lt(7 * s)) }
        #expect(down?.reason == "already at the slowest rate (0.5×)")
        // A rate between steps (set by a number) steps to the next one each way.
        var between = Self.machine(.playing, rate: 1.1)
        #expect(Self.requests((try? between.stepRate(up: true, now: lt(7 * s))) ?? []) == [.rate(1.25)])
        #expect(Self.requests((try? between.stepRate(up: false, now: lt(7 * s))) ?? []) == [.rate(1)])

        for bad in [4.01, 0.2, 0, -1, .nan, .infinity] {
            let refused = Self.refusal { () throws(Refusal) in try m.setRate(bad, now: lt(7 * s)) }
            #expect(refused?.code == .invalid && refused?.request == .timeline, "rate \(bad)")
        }
        let five = Self.refusal { () throws(Refusal) in try m.setRate(5, now: lt(7 * s)) }
        #expect(five?.reason == "rate 5 is out of range — use a rate from 0.25 to 4 (1 is normal speed)")
        #expect(Self.requests((try? m.setRate(4, now: lt(7 * s))) ?? []) == [.rate(4)])
        #expect(Self.requests((try? m.setRate(0.25, now: lt(7 * s))) ?? []) == [.rate(0.25)])
    }

    @Test("the limits the welcome announces are the ones the intents use; a welcome without them means the defaults")
    func limitsFromTheWelcome() {
        let limits = PlaybackLimits(minimumRate: 0.5, maximumRate: 2, rateSteps: [0.5, 1, 2], smallSeekStep: .seconds(5),
                                    largeSeekStep: .seconds(30), endMargin: .seconds(3))
        var m = Machine()
        _ = m.tick(now: lt(5 * s), mapping: Fixture.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let welcome = SessionSnapshot(sessionID: "s", localParticipant: Participant(id: Fixture.me, name: "me"),
                                      activity: Fixture.envelope("movie"), timeline: Fixture.timeline(1, .paused, at: 0, item: 0),
                                      participants: [], attachments: [], playbackLimits: limits)
        let load = Fixture.engineCommands(m.receive(.welcome(welcome), now: lt(5 * s))).first!
        _ = m.engineCompleted(load.0, .loaded(Fixture.media), now: lt(6 * s))
        #expect(m.limits == limits)
        #expect(Self.requests(m.seek(.forward, engineItemTime: .seconds(100), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(105), play: false)])
        #expect(Self.requests(m.seek(.farForward, engineItemTime: .seconds(590), now: lt(7 * s)))
            == [.seek(itemTime: .seconds(597), play: false)])
        #expect(Self.requests((try? m.stepRate(up: true, now: lt(7 * s))) ?? []) == [.rate(2)])
        let three = Self.refusal { () throws(Refusal) in try m.setRate(3, now: lt(7 * s)) }
        #expect(three?.reason == "rate 3 is out of range — use a rate from 0.5 to 2 (1 is normal speed)")

        // A client of an older authority: no limits in the welcome, the defaults.
        #expect(Fixture.loadedMachine().limits == PlaybackLimits())
    }

    @Test("the authority's refusals of this coordinator's requests reach the caller; the session's own are left to the session")
    func serverRefusals() {
        var m = Self.machine(.playing)
        let refusal = Refusal(.invalid, request: .timeline, "rate 3 is out of range — use a rate from 0.5 to 2 (1 is normal speed)")
        #expect(Self.refusals(m.receive(.refused(refusal), now: lt(7 * s))) == [refusal])
        let suspension = Refusal(.limit, request: .suspension, "too many suspensions")
        #expect(Self.refusals(m.receive(.refused(suspension), now: lt(7 * s))) == [suspension])
        #expect(Self.refusals(m.receive(.refused(.onlyTheHost("reorder the queue", request: .queue)), now: lt(7 * s))).isEmpty)
        #expect(Self.refusals(m.receive(.refused(reason: "no code", code: nil, request: nil), now: lt(7 * s))).isEmpty)
        // An older authority's rejection: the event as before, and the same refusal for callers of the new kind.
        let rejected = m.receive(.rejected(requestID: 7, reason: "cannot seek to 700 s"), now: lt(7 * s))
        #expect(rejected.contains(.event(.requestRejected(requestID: 7, reason: "cannot seek to 700 s"))))
        #expect(Self.refusals(rejected) == [Refusal(.invalid, request: .timeline, "cannot seek to 700 s")])
    }
}
