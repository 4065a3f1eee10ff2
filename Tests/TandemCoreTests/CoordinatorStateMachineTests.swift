import Foundation
import Testing
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// Drives `PlaybackCoordinatorStateMachine` directly, input by input, with hand-picked times.
@Suite struct CoordinatorStateMachineTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    static let me = ParticipantID("me")
    static let bob = ParticipantID("bob")
    /// Local time is session time + 5 s here.
    static let mapping = ClockMapping(localAnchor: 0, sessionAnchor: SessionInstant(nanoseconds: -5 * s), rate: 1)
    static let media = MediaInfo(duration: 600 * s, isSeekable: true, hasVideo: true, hasAudio: true, contentID: "abc")

    static func envelope(_ item: String) -> ActivityEnvelope {
        ActivityEnvelope(activityIdentifier: "Movie", metadata: GroupActivityMetadata(title: item), payload: Data(),
                         itemID: item)
    }

    static func timeline(_ gen: UInt64, _ status: Timeline.Status, at session: Int64, item: Int64, rate: Double = 1,
                         by: ParticipantID? = nil) -> Timeline {
        Timeline(generation: gen, itemID: "movie", rate: rate, anchorSessionTime: SessionInstant(nanoseconds: session),
                 anchorItemTime: ItemTime(nanoseconds: item),
                 status: status, originator: by)
    }

    static func welcome(_ tl: Timeline?, participants: [ParticipantState] = []) -> ServerMessage {
        .welcome(SessionSnapshot(sessionID: "s", localParticipant: Participant(id: me, name: "me"),
                                 activity: envelope("movie"), timeline: tl, participants: participants, attachments: []))
    }

    static func engineCommands(_ actions: [Machine.Action]) -> [(UInt64, EngineCommand)] {
        actions.compactMap {
            if case .engine(let id, let c) = $0, !isMapping(c) { return (id, c) } else { return nil }
        }
    }

    static func isMapping(_ c: EngineCommand) -> Bool {
        if case .setClockMapping = c { return true } else { return false }
    }

    static func sent(_ actions: [Machine.Action]) -> [ClientMessage] {
        actions.compactMap { if case .send(let m) = $0 { return m } else { return nil } }
    }

    /// A machine that joined, synchronised its clock and loaded the item, paused at 0 (generation 1).
    static func loadedMachine(config: Machine.Configuration = .init()) -> Machine {
        var m = Machine(configuration: config)
        _ = m.tick(now: lt(5 * s), mapping: mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let actions = m.receive(welcome(timeline(1, .paused, at: 0, item: 0)), now: lt(5 * s))
        let load = engineCommands(actions).first!
        _ = m.engineCompleted(load.0, .loaded(media), now: lt(6 * s))
        return m
    }

    @Test func joiningLoadsTheActivityItemAndReportsReadinessAndPreparation() {
        var m = Machine()
        _ = m.tick(now: lt(5 * s), mapping: Self.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let actions = m.receive(Self.welcome(Self.timeline(1, .paused, at: 0, item: 0)), now: lt(5 * s))
        let commands = Self.engineCommands(actions)
        #expect(commands.count == 1)
        #expect(commands.first?.1 == .load(itemID: "movie"))
        #expect(Self.sent(actions).contains(.readiness(.loading(progress: nil))))
        #expect(m.localSuspensionReasons == [.loading])

        let loaded = m.engineCompleted(commands[0].0, .loaded(Self.media), now: lt(6 * s))
        let sent = Self.sent(loaded)
        #expect(sent.contains(.readiness(.ready(Self.media))))
        // Prerolled at 0 after loading, which is where the paused timeline stands.
        #expect(sent.contains(.prepared(generation: 1)))
        #expect(m.localSuspensionReasons.isEmpty)
    }

    @Test func aFuturePlayingGenerationIsPreparedAndScheduledAtItsSessionTime() {
        var m = Self.loadedMachine()
        // Local 7 s is session 2 s; the group starts at session 3 s from item 10 s.
        let actions = m.receive(.timeline(Self.timeline(2, .playing, at: 3 * s, item: 10 * s)), now: lt(7 * s))
        let commands = Self.engineCommands(actions).map(\.1)
        #expect(commands == [.prepare(itemTime: it(10 * s), rate: 1),
                             .play(from: it(10 * s), atSessionTime: st(3 * s), rate: 1)])
        #expect(m.expectedItemTime(atSessionTime: SessionInstant(nanoseconds: 4 * s)) == ItemTime(nanoseconds: 11 * s))
    }

    @Test func aLateJoinerPrerollsAtTheProjectedPositionAndJoinsTheRunningTimeline() {
        var config = Machine.Configuration()
        config.prerollEstimate = sp(200 * ms)
        config.joinMargin = sp(100 * ms)
        var m = Machine(configuration: config)
        _ = m.tick(now: lt(5 * s), mapping: Self.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        // The group has been playing since session 0 s from item 100 s at rate 2; we arrive at session 10 s.
        let actions = m.receive(Self.welcome(Self.timeline(5, .playing, at: 0, item: 100 * s, rate: 2)),
                                now: lt(15 * s))
        let load = Self.engineCommands(actions)[0]
        let after = m.engineCompleted(load.0, .loaded(Self.media), now: lt(15 * s))
        let commands = Self.engineCommands(after).map(\.1)
        let start = 10 * s + 300 * ms
        let item = 100 * s + 2 * (start - 0)
        #expect(commands == [.prepare(itemTime: it(item), rate: 2), .play(from: it(item), atSessionTime: st(start), rate: 2)])
    }

    @Test func localPauseStopsAtOnceAndAStaleTimelineDoesNotRestartIt() {
        var m = Self.playingMachine()
        let paused = m.pause(currentItemTime: it(4 * s), now: lt(12 * s))
        #expect(Self.engineCommands(paused).map(\.1) == [.pause])
        let requests = Self.sent(paused).compactMap { m -> TimelineRequest.Command? in
            if case .timelineRequest(let r) = m { return r.command } else { return nil }
        }
        #expect(requests == [.pause(itemTime: ItemTime(nanoseconds: 4 * s))])
        // Someone else's rate change ordered before our pause must not start the engine again meanwhile.
        let stale = m.receive(.timeline(Self.timeline(3, .playing, at: 8 * s, item: 5 * s, rate: 1.5,
                                                      by: Self.bob)), now: lt(12 * s + 10 * ms))
        #expect(Self.engineCommands(stale).isEmpty)
        // Our pause generation snaps us to our own item time and we report being prepared there.
        let ours = m.receive(.timeline(Self.timeline(4, .paused, at: 7 * s, item: 4 * s, by: Self.me)),
                             now: lt(12 * s + 20 * ms))
        let prep = Self.engineCommands(ours)
        #expect(prep.map(\.1) == [.prepare(itemTime: it(4 * s), rate: 1)])
        let done = m.engineCompleted(prep[0].0, .prepared(itemTime: it(4 * s)), now: lt(12 * s + 30 * ms))
        #expect(Self.sent(done) == [.prepared(generation: 4)])
    }

    @Test func olderGenerationsAreIgnored() {
        var m = Self.loadedMachine()
        _ = m.receive(.timeline(Self.timeline(7, .paused, at: 0, item: 30 * s)), now: lt(7 * s))
        let actions = m.receive(.timeline(Self.timeline(6, .playing, at: 0, item: 0)), now: lt(7 * s))
        #expect(actions.isEmpty)
        #expect(m.timeline?.generation == 7)
    }

    @Test func aStallBeginsAndEndsAStallRecoverySuspension() {
        var m = Self.loadedMachine()
        let playing = m.receive(.timeline(Self.timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        #expect(!Self.engineCommands(playing).isEmpty)
        let stalled = m.engineEvent(.stalled, now: lt(10 * s))
        #expect(Self.sent(stalled).contains { if case .suspension(.begin(_, .stallRecovery)) = $0 { true } else { false } })
        #expect(Self.engineCommands(stalled).map(\.1) == [.pause])
        let recovered = m.engineEvent(.recovered, now: lt(11 * s))
        #expect(Self.sent(recovered).contains { if case .suspension(.end(_, nil)) = $0 { true } else { false } })
        #expect(m.localSuspensionReasons.isEmpty)
        // Still playing on the group's timeline: it rejoins on its own.
        #expect(Self.engineCommands(recovered).map(\.1).contains { if case .play = $0 { true } else { false } })
    }

    @Test func afterAStallTheGroupWaitedForItPrerollsAtTheStopBeforeEndingTheSuspension() {
        var m = Self.loadedMachine()
        _ = m.receive(.timeline(Self.timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        _ = m.engineEvent(.stalled, now: lt(10 * s))
        // The group stops for us at item 4.5 s.
        _ = m.receive(.timeline(Self.timeline(3, .waiting(for: [Self.me: [.stallRecovery]]), at: 5 * s, item: 4_500 * ms)),
                      now: lt(10 * s + 50 * ms))
        let recovered = m.engineEvent(.recovered, now: lt(12 * s))
        // First the preroll at the stop; the suspension stays open meanwhile, so the group keeps waiting.
        let prepare = Self.engineCommands(recovered)
        #expect(prepare.map(\.1) == [.prepare(itemTime: it(4_500 * ms), rate: 1)])
        #expect(!Self.sent(recovered).contains { if case .suspension(.end) = $0 { true } else { false } })
        #expect(m.localSuspensionReasons == [.stallRecovery])
        // Prepared: say so, then end the suspension — in that order, so the group restarts without a preroll budget.
        let done = m.engineCompleted(prepare[0].0, .prepared(itemTime: it(4_500 * ms)), now: lt(12 * s + 40 * ms))
        let messages = Self.sent(done)
        let preparedAt = messages.firstIndex { $0 == .prepared(generation: 3) }
        let endedAt = messages.firstIndex { if case .suspension(.end) = $0 { true } else { false } }
        #expect(preparedAt != nil && endedAt != nil && preparedAt! < endedAt!, "\(messages)")
        #expect(m.localSuspensionReasons.isEmpty)
    }

    @Test func reasonsOutsideTheWaitingSetStayLocal() {
        var m = Self.loadedMachine()
        let (id, begin) = m.beginSuspension(for: .interstitial, now: lt(7 * s))
        #expect(Self.sent(begin).isEmpty)
        #expect(m.localSuspensionReasons == [.interstitial])
        let end = m.endSuspension(id, now: lt(8 * s))
        #expect(Self.sent(end).isEmpty)
        let (id2, begin2) = m.beginSuspension(for: .userChangingTime, now: lt(9 * s))
        #expect(Self.sent(begin2) == [.suspension(.begin(id: id2.rawValue, reason: .userChangingTime))])
        let end2 = m.endSuspension(id2, proposingNewTime: it(42 * s), now: lt(10 * s))
        #expect(Self.sent(end2) == [.suspension(.end(id: id2.rawValue, proposedItemTime: ItemTime(nanoseconds: 42 * s)))])
    }

    @Test func theDriftWatchdogResynchronisesOnlyAfterPersistentDrift() {
        var m = Self.loadedMachine()
        let playing = m.receive(.timeline(Self.timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        for (id, c) in Self.engineCommands(playing) {
            if case .play = c { _ = m.engineCompleted(id, .playing, now: lt(7 * s)) }
            else { _ = m.engineCompleted(id, .prepared(itemTime: 0), now: lt(7 * s)) }
        }
        // Session 10 s expects item 7 s. A 10 ms error is tolerated; 30 ms is not, once it lasts a second.
        var local = 15 * s
        for _ in 0..<100 {
            let a = m.tick(now: lt(local), mapping: Self.mapping, clockQuality: nil,
                           engineItemTime: it(local - 8 * s + 10 * ms))
            #expect(Self.engineCommands(a).isEmpty)
            local += 20 * ms
        }
        var resync: [EngineCommand] = []
        var elapsed: Int64 = 0
        while resync.isEmpty && elapsed < 3 * s {
            let a = m.tick(now: lt(local), mapping: Self.mapping, clockQuality: nil,
                           engineItemTime: it(local - 8 * s - 30 * ms))
            resync = Self.engineCommands(a).map(\.1)
            local += 20 * ms
            elapsed += 20 * ms
        }
        #expect(m.resyncCount == 1)
        #expect(elapsed >= 1 * s && elapsed < 1_200 * ms)
        #expect(resync.count == 2)
        if case .play(let item, let at, 1) = resync.last {
            #expect(item.nanoseconds == at.nanoseconds - 3 * s)   // the timeline's own position at the new start
        } else {
            Issue.record("expected a play command, got \(resync)")
        }
    }

    @Test func aParticipantWithDifferentMediaIsFlaggedOnce() {
        var m = Self.loadedMachine()
        var other = Self.media
        other.contentID = "zzz"
        let states = [ParticipantState(participant: Participant(id: Self.bob, name: "bob"), readiness: .ready(other))]
        let first = m.receive(.participants(states), now: lt(7 * s))
        let notices = first.compactMap { a -> Notice? in
            if case .event(.notice(let n)) = a { return n } else { return nil }
        }
        #expect(notices.map(\.kind) == [.differentMedia])
        #expect(notices.first?.participant == Self.bob)
        #expect(m.participantsWithDifferentMedia == [Self.bob])
        let again = m.receive(.participants(states), now: lt(8 * s))
        #expect(!again.contains { if case .event(.notice) = $0 { true } else { false } })

        var longer = Self.media
        longer.contentID = nil
        longer.duration = Self.media.duration! + 5 * s
        let carol = ParticipantID("carol")
        _ = m.receive(.participants(states + [ParticipantState(participant: Participant(id: carol, name: "carol"),
                                                                readiness: .ready(longer))]), now: lt(9 * s))
        #expect(m.participantsWithDifferentMedia == [Self.bob, carol])
    }

    @Test func aFailedLoadIsReportedAndNotRetriedUntilTheItemChanges() {
        var m = Machine()
        _ = m.tick(now: lt(5 * s), mapping: Self.mapping, clockQuality: nil, engineItemTime: nil)
        let load = Self.engineCommands(m.receive(Self.welcome(Self.timeline(1, .paused, at: 0, item: 0)), now: lt(5 * s)))[0]
        let failed = m.engineCompleted(load.0, .failed(.noSuchFile(path: "/m/movie.webm")), now: lt(6 * s))
        #expect(Self.sent(failed) == [.readiness(.failed("no such file: /m/movie.webm — check the path"))])
        #expect(failed.contains(.event(.engineFailed(.noSuchFile(path: "/m/movie.webm")))))
        #expect(m.localSuspensionReasons.isEmpty)
        let later = m.tick(now: lt(7 * s), mapping: Self.mapping, clockQuality: nil, engineItemTime: nil)
        #expect(Self.engineCommands(later).isEmpty)
        let next = m.receive(.activity(Self.envelope("episode-2")), now: lt(8 * s))
        #expect(Self.engineCommands(next).map(\.1) == [.load(itemID: "episode-2")])
    }

    /// A machine playing generation 2: from item 0 at session 3 s, rate 1 (local = session + 5 s).
    static func playingMachine() -> Machine {
        var m = loadedMachine()
        let playing = m.receive(.timeline(timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        for (id, c) in engineCommands(playing) {
            _ = m.engineCompleted(id, c == .play(from: 0, atSessionTime: st(3 * s), rate: 1) ? .playing : .prepared(itemTime: 0),
                                  now: lt(7 * s))
        }
        return m
    }

    @Test func aStopThatArrivesAfterItsPointIsReportedSoTheGroupResumesPastWhatWasShown() {
        // A rate change stops the line at session 20 s (item 17 s); it reaches us at session 20.05 s, when we have
        // shown up to item 17.05 s (plus the time the stop takes to act).
        var m = Self.playingMachine()
        let late = m.receive(.timeline(Self.timeline(3, .waiting(for: [:]), at: 20 * s, item: 17 * s, rate: 1.5)),
                             now: lt(25 * s + 50 * ms))
        let stopAllowance = Machine.Configuration().stopAllowance
        #expect(Self.sent(late) == [.renderedPast(generation: 3, itemTime: ItemTime(nanoseconds: 17 * s + 50 * ms) + stopAllowance)])
        #expect(Self.engineCommands(late).map(\.1) == [.prepare(itemTime: it(17 * s), rate: 1.5)])

        // In time (session 19.9 s): nothing to report.
        var onTime = Self.playingMachine()
        let early = onTime.receive(.timeline(Self.timeline(3, .waiting(for: [:]), at: 20 * s, item: 17 * s, rate: 1.5)),
                                   now: lt(24 * s + 900 * ms))
        #expect(Self.sent(early).isEmpty)

        // A seek (an item time of its own) is never a stop on our line, however late it arrives.
        var seeking = Self.playingMachine()
        let seek = seeking.receive(.timeline(Self.timeline(3, .waiting(for: [:]), at: 20 * s, item: 100 * s)),
                                   now: lt(25 * s + 50 * ms))
        #expect(Self.sent(seek).isEmpty)
        #expect(Self.engineCommands(seek).map(\.1) == [.prepare(itemTime: it(100 * s), rate: 1)])
    }
}

// Shorthands for the tests' nanosecond counts on each axis.
func lt(_ ns: Int64) -> LocalInstant { LocalInstant(nanoseconds: ns) }
func it(_ ns: Int64) -> ItemTime { ItemTime(nanoseconds: ns) }
func st(_ ns: Int64) -> SessionInstant { SessionInstant(nanoseconds: ns) }
func sp(_ ns: Int64) -> TimeSpan { TimeSpan(nanoseconds: ns) }
