import Foundation
import Testing
@testable import TandemCore

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// A rate change while playing, when every player changes rate in place (`MediaInfo.changesRateInPlace`): the
/// authority continues the line at once instead of stopping the group for a prepare round, and each coordinator
/// hands its engine a switch at the anchor without a prepare. Anyone who cannot makes it the stop and start again.
@Suite struct InPlaceRateChangeTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias Support = CoordinatorStateMachineTests

    static let inPlace = MediaInfo(duration: .seconds(5400), isSeekable: true, hasVideo: true, hasAudio: true,
                                   contentID: "abc", changesRateInPlace: true)

    // MARK: The authority

    @Test func everyoneInPlaceContinuesTheLineAtTheStopPointWithoutWaiting() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true, info: Self.inPlace)
        let b = h.joinReady("bob", preroll: .milliseconds(250), info: Self.inPlace)
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0), from: b)
        h.request(.play, from: a)
        let old = h.authority.timeline
        h.advance(ms: 20_000)
        let actions = h.request(.rate(1.5), from: b)
        let new = h.authority.timeline
        // Playing on: the new line starts where the old one is once the request has reached the farthest peer
        // (plus the small margin of a switch in place: a peer it reaches late still switches), nobody prerolls.
        let at = h.now + .milliseconds(30) + AuthorityConfiguration().rateSwitchMargin
        #expect(new.isPlaying && new.rate == 1.5 && new.generation == old.generation + 1)
        #expect(new.anchorSessionTime == at)
        #expect(new.anchorItemTime == old.expectedItemTime(atSessionTime: at))
        #expect(new.expectedItemTime(atSessionTime: at + .seconds(2)) == new.anchorItemTime + .seconds(3))
        #expect(actions.notices(.rateChanged, to: a).first?.text == "bob set the speed to 1.5×")
        // Back to 1×: the same, from the 1.5× line.
        h.advance(ms: 5_000)
        h.request(.rate(1), from: a)
        let back = h.authority.timeline
        #expect(back.isPlaying && back.rate == 1)
        #expect(back.anchorItemTime == new.expectedItemTime(atSessionTime: back.anchorSessionTime))
    }

    @Test func oneParticipantThatCannotMakesItAStopAndAPrepareRound() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", host: true, info: Self.inPlace)
        // The browser page, an older peer, or a pipeline without instant rate changes: no flag.
        let b = h.joinReady("bob", info: AuthorityHarness.info())
        h.request(.play, from: a)
        h.advance(ms: 10_000)
        h.request(.rate(1.5), from: a)
        let waiting = h.authority.timeline
        #expect(!waiting.isPlaying && waiting.rate == 1.5)
        #expect(Set(waiting.waitingFor?.keys.map { $0 } ?? []) == [a, b])
    }

    @Test func theFlagTravelsInReadinessAndIsAbsentForOlderPeers() throws {
        let encoded = try JSONEncoder().encode(Self.inPlace)
        #expect(try JSONDecoder().decode(MediaInfo.self, from: encoded) == Self.inPlace)
        let plain = try JSONEncoder().encode(AuthorityHarness.info())
        #expect(!String(decoding: plain, as: UTF8.self).contains("changesRateInPlace"))
        let older = #"{"isSeekable":true,"hasVideo":true,"hasAudio":false,"duration":5000000000}"#
        let decoded = try JSONDecoder().decode(MediaInfo.self, from: Data(older.utf8))
        #expect(!decoded.changesRateInPlace && decoded.duration == .seconds(5))
    }

    // MARK: The coordinator

    /// Loaded with `media`, playing since session 3 s from item 0 at 1× (local = session + 5 s).
    static func playing(_ media: MediaInfo) -> Machine {
        var m = Machine()
        _ = m.tick(now: lt(5 * s), mapping: Support.mapping, clockQuality: (sp(500_000), sp(1 * ms)), engineItemTime: nil)
        let joined = m.receive(Support.welcome(Support.timeline(1, .paused, at: 0, item: 0)), now: lt(5 * s))
        _ = m.engineCompleted(Support.engineCommands(joined)[0].0, .loaded(media), now: lt(6 * s))
        let started = m.receive(.timeline(Support.timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        for (id, c) in Support.engineCommands(started) {
            _ = m.engineCompleted(id, c == .play(from: 0, atSessionTime: st(3 * s), rate: 1) ? .playing : .prepared(itemTime: 0),
                                  now: lt(7 * s))
        }
        return m
    }

    @Test func anEngineThatChangesRateInPlaceIsToldToSwitchAtTheAnchorWithoutAPrepare() {
        var m = Self.playing(Self.inPlace)
        // The group goes to 1.5× at session 20 s, where the 1× line is at item 17 s; the news arrives 40 ms before.
        let actions = m.receive(.timeline(Support.timeline(3, .playing, at: 20 * s, item: 17 * s, rate: 1.5)),
                                now: lt(25 * s - 40 * ms))
        let commands = Support.engineCommands(actions)
        #expect(commands.map(\.1) == [.play(from: it(17 * s), atSessionTime: st(20 * s), rate: 1.5)])
        // Nothing more to do once it switched; the watchdog sees the engine on the new line.
        let done = m.engineCompleted(commands[0].0, .playing, now: lt(25 * s))
        #expect(Support.engineCommands(done).isEmpty)
        #expect(m.expectedItemTime(atSessionTime: st(22 * s)) == it(20 * s))
    }

    @Test func anEngineThatCannotStopsAndJoinsTheNewLine() {
        // Same news for an engine without the flag: too close for its preroll, so it prerolls further along the new
        // line and joins it alone (today's path for a line that arrives late).
        var m = Self.playing(AuthorityHarness.info())
        let actions = m.receive(.timeline(Support.timeline(3, .playing, at: 20 * s, item: 17 * s, rate: 1.5)),
                                now: lt(25 * s - 40 * ms))
        let commands = Support.engineCommands(actions).map(\.1)
        let start = 20 * s - 40 * ms + 400 * ms   // now + preroll estimate (300 ms) + join margin (100 ms)
        let item = 17 * s + (start - 20 * s) * 3 / 2
        #expect(commands == [.prepare(itemTime: it(item), rate: 1.5), .play(from: it(item), atSessionTime: st(start), rate: 1.5)])
    }

    @Test func aSwitchTheEngineRefusesOrThatArrivesTooLateFallsBackToAJoin() {
        // In time, but the engine could not switch in place and then could not make the anchor: it joins further on.
        var m = Self.playing(Self.inPlace)
        let actions = m.receive(.timeline(Support.timeline(3, .playing, at: 20 * s, item: 17 * s, rate: 1.5)),
                                now: lt(25 * s - 40 * ms))
        let switchID = Support.engineCommands(actions)[0].0
        let refused = m.engineCompleted(switchID, .failed(.startMissed(lateBy: sp(80 * ms))), now: lt(25 * s + 80 * ms))
        let rejoin = Support.engineCommands(refused).map(\.1)
        #expect(rejoin.count == 2)
        if case .prepare(let item, let rate) = rejoin.first {
            #expect(rate == 1.5 && item > it(17 * s))
        } else {
            Issue.record("expected a prepare on the new line, got \(rejoin)")
        }

        // The news reaches a peer far past the anchor (over `inPlaceSwitchMargin`, −120 ms): no switch into the
        // past, a join instead.
        var late = Self.playing(Self.inPlace)
        let after = late.receive(.timeline(Support.timeline(3, .playing, at: 20 * s, item: 17 * s, rate: 1.5)),
                                 now: lt(25 * s + 125 * ms))
        let commands = Support.engineCommands(after).map(\.1)
        #expect(commands.count == 2)
        if case .prepare = commands.first {} else { Issue.record("expected a prepare, got \(commands)") }
    }

    @Test(arguments: [5, 35, 115] as [Int64])
    func aSwitchThatArrivesLateIsStillMadeInPlace(lateMS: Int64) {
        // Past the anchor but within `inPlaceSwitchMargin` (−120 ms; 35 ms was a join before): the engine switches at
        // once and corrects its frames, where a join would flush and freeze the picture.
        var m = Self.playing(Self.inPlace)
        let actions = m.receive(.timeline(Support.timeline(3, .playing, at: 20 * s, item: 17 * s, rate: 1.5)),
                                now: lt(25 * s + lateMS * ms))
        let commands = Support.engineCommands(actions).map(\.1)
        #expect(commands == [.play(from: it(17 * s), atSessionTime: st(20 * s), rate: 1.5)])
        #expect(!actions.contains { if case .send(.suspension) = $0 { true } else { false } }, "\(actions)")
    }

    @Test func aLineThatDoesNotContinueThePlayingOneIsNotSwitchedInPlace() {
        // A playing generation elsewhere on the item (not a rate change) is not a switch, even for a capable engine.
        var m = Self.playing(Self.inPlace)
        let actions = m.receive(.timeline(Support.timeline(3, .playing, at: 20 * s, item: 60 * s, rate: 1.5)),
                                now: lt(25 * s - 40 * ms))
        let commands = Support.engineCommands(actions).map(\.1)
        #expect(commands.first.map { if case .prepare = $0 { true } else { false } } == true, "\(commands)")
    }
}
