import Foundation
import Testing
@testable import TandemCore
import TandemTesting

/// The session's playback limits: held and enforced by the authority, announced in its welcome, used by every
/// participant's coordinator; what the authority still refuses of a coordinator's request reaches its caller.
@Suite struct PlaybackLimitsTests {
    static let narrow = PlaybackLimits(minimumRate: 0.5, maximumRate: 2, rateSteps: [0.5, 1, 2],
                                       smallSeekStep: .seconds(5), largeSeekStep: .seconds(30), endMargin: .seconds(2))

    static func configuration(_ limits: PlaybackLimits = narrow) -> AuthorityConfiguration {
        var configuration = AuthorityConfiguration()
        configuration.playback = limits
        return configuration
    }

    @Test("the authority announces its limits in every welcome, and refuses a rate outside them (invalid, timeline) without changing anything")
    func authorityAnnouncesAndRefuses() {
        var h = AuthorityHarness(configuration: Self.configuration())
        let (a, joined) = h.join("alice", host: true)
        #expect(joined.welcome(to: a)?.playbackLimits == Self.narrow)
        h.send(.readiness(.ready(AuthorityHarness.info(duration: .seconds(100)))), from: a)
        h.request(.play, from: a)
        let before = h.authority.timeline
        for bad in [2.5, 0.25, 0, .nan] {
            let actions = h.request(.rate(bad), from: a)
            guard case .refused(let reason, .invalid?, .timeline?)? = actions.messages(to: a).first else {
                Issue.record("rate \(bad): \(actions)")
                continue
            }
            #expect(reason.hasPrefix("rate ") && reason.hasSuffix("is out of range — use a rate from 0.5 to 2 (1 is normal speed)"))
            #expect(actions.timelines(to: a).isEmpty)
        }
        #expect(h.authority.timeline == before)
        h.request(.rate(2), from: a)
        #expect(h.authority.timeline.rate == 2)
        // Seeks are clamped with the same limits: 2 s before the end of the 100 s item.
        h.request(.seek(itemTime: .seconds(250), play: false), from: a)
        #expect(h.authority.timeline.anchorItemTime == .seconds(98))
        #expect(AuthorityConfiguration().playback == PlaybackLimits(), "the defaults, unless configured")
    }

    @Test("on the wire: the limits travel in the welcome; a welcome without them decodes (an older server), and so do limits with fields left out")
    func wire() throws {
        let snapshot = SessionSnapshot(sessionID: "s", localParticipant: Participant(id: ParticipantID("p1"), name: "ann"), activity: nil,
                                       timeline: nil, participants: [], attachments: [], playbackLimits: Self.narrow)
        let json = try JSONEncoder().encode(ServerMessage.welcome(snapshot))
        #expect(try JSONDecoder().decode(ServerMessage.self, from: json) == .welcome(snapshot))
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#""smallSeekStep":5000000000"#) && text.contains(#""maximumRate":2"#), "\(text)")

        // An older server's welcome: the same without the field.
        var older = snapshot
        older.playbackLimits = nil
        let old = try JSONEncoder().encode(ServerMessage.welcome(older))
        #expect(!String(decoding: old, as: UTF8.self).contains("playbackLimits"))
        guard case .welcome(let decoded) = try JSONDecoder().decode(ServerMessage.self, from: old) else {
            Issue.record("not a welcome")
            return
        }
        #expect(decoded.playbackLimits == nil)
        let partial = try JSONDecoder().decode(PlaybackLimits.self, from: Data(#"{"maximumRate":8}"#.utf8))
        var expected = PlaybackLimits()
        expected.maximumRate = 8
        #expect(partial == expected)
    }

    @Test("seek clamping and refusing: both ends, an item of unknown length, an item shorter than the margin")
    func seekRules() {
        let limits = PlaybackLimits()
        #expect(limits.clampedSeek(.seconds(-4), itemDuration: .seconds(100)) == .zero)
        #expect(limits.clampedSeek(.seconds(150), itemDuration: .seconds(100)) == .seconds(99))
        #expect(limits.clampedSeek(.seconds(150), itemDuration: nil) == .seconds(150))
        #expect(limits.clampedSeek(.seconds(3), itemDuration: .milliseconds(500)) == .zero)
        #expect(limits.refusingSeek(to: .seconds(99.9), itemDuration: .seconds(100)) == nil)
        #expect(limits.refusingSeek(to: .seconds(30), itemDuration: .seconds(25))?.reason
            == "cannot seek to 30.0 s: the item lasts 25.0 s")
        #expect(limits.refusingSeek(to: .seconds(1e6), itemDuration: nil) == nil)
        #expect(limits.offset(of: .farBack) == .seconds(-60) && limits.offset(of: .forward) == .seconds(10))
        // A range configured down to 0 still refuses 0: no player plays at it.
        #expect(PlaybackLimits(minimumRate: 0).refusingRate(0)?.code == .invalid)
        #expect(PlaybackLimits(minimumRate: 0).refusingRate(0.1) == nil)
    }

    @Test("a coordinator takes the limits from its welcome, refuses what they refuse before sending, and hears on refusals what the authority refuses of what it sent")
    func coordinatorUsesTheLimitsAndHearsRefusals() async throws {
        let clock = ManualClock(1_000_000_000_000)
        let changes = ChangeFeed()
        let hub = InMemorySessionHub(activity: ActivityEnvelope(activityIdentifier: "Movie", metadata: .init(title: "m"),
                                                                payload: Data(), itemID: "movie"),
                                     configuration: Self.configuration(), clock: clock)
        let aliceLink = try await hub.connect(name: "alice", isHost: true)
        #expect(aliceLink.welcome.playbackLimits == Self.narrow)
        let alice = ClockedPlaybackCoordinator(engine: RecordingEngine(clock: clock, changes: changes), link: aliceLink,
                                               clock: clock, tickInterval: .milliseconds(10), locate: { "/media/\($0).webm" })
        // Bob has entered without taking part: the authority refuses what he asks of the timeline.
        let bob = ClockedPlaybackCoordinator(engine: RecordingEngine(clock: clock, changes: changes),
                                             link: try await hub.connect(name: "bob", waiting: true), clock: clock,
                                             tickInterval: .milliseconds(10), locate: { "/media/\($0).webm" })
        let aliceRefusals = alice.refusals
        let bobRefusals = bob.refusals
        #expect(await alice.limits == PlaybackLimits(), "the defaults until the welcome is read")
        let following = [changes.follow(alice.events), changes.follow(bob.events)]
        defer { following.forEach { $0.cancel() } }
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await alice.run() }
                group.addTask { await bob.run() }
            }
        }
        defer { runs.cancel() }
        #expect(await changes.until { await alice.limits == Self.narrow })

        // Refused here, before sending, in the authority's words.
        do {
            try await alice.setRate(3)
            Issue.record("rate 3 was not refused")
        } catch {
            #expect(error == Refusal(.invalid, request: .timeline,
                                     "rate 3 is out of range — use a rate from 0.5 to 2 (1 is normal speed)"))
        }
        try await alice.stepRate(up: false)
        #expect(await changes.until { await alice.timeline?.rate == 0.5 })
        do {
            try await alice.stepRate(up: false)
            Issue.record("stepped below 0.5×")
        } catch {
            #expect(error.reason == "already at the slowest rate (0.5×)")
        }

        // Refused by the authority: the call has returned; the refusal reaches the caller on `refusals`.
        await bob.play()
        let notJoined = await collect(1, from: bobRefusals).first
        #expect(notJoined?.code == .notJoined && notJoined?.request == .timeline, "\(String(describing: notJoined))")
        var holds: [ClockedPlaybackCoordinator<ManualClock>.Suspension] = []
        for _ in 0...TextBounds.maxSuspensionsPerParticipant { holds.append(await alice.beginSuspension(for: .userChangingTime)) }
        let overBound = await collect(1, from: aliceRefusals).first
        #expect(overBound?.code == .limit && overBound?.request == .suspension, "\(String(describing: overBound))")
        #expect(holds.count == TextBounds.maxSuspensionsPerParticipant + 1)
    }
}
