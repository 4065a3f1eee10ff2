import Foundation
import Testing
@testable import TandemCore
import TandemTesting

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// Starts the requester proposes (`TimelineRequest.proposedStart`): it starts itself at its proposal without waiting
/// for the timeline to come back, and the authority keeps the proposal when every other participant can make it.
@Suite struct ProposedStartTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    // MARK: The authority

    /// Alice (host, 80 ms preroll, beside the authority) and bob (50 ms away), paused at 0, both prepared there.
    static func pausedPair(configuration: AuthorityConfiguration = .withScheduledStarts)
        -> (AuthorityHarness, ParticipantID, ParticipantID) {
        var h = AuthorityHarness(configuration: configuration)
        let a = h.joinReady("alice", preroll: .milliseconds(80), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(30))
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        let generation = h.authority.timeline.generation
        h.send(.prepared(generation: generation), from: a)
        h.send(.prepared(generation: generation), from: b)
        #expect(h.authority.timeline.status == .paused)
        return (h, a, b)
    }

    static var margin: TimeSpan { AuthorityConfiguration.withScheduledStarts.startMargin }

    @Test("a joiner's proposed play is kept when the others can make it: its own way back is not waited for")
    func aProposedPlayIsKept() {
        var (h, a, b) = Self.pausedPair()
        // Bob proposes what the authority would schedule without him: his request's 50 ms there, then alice's
        // nothing (prepared, beside the authority), plus the margin. It reaches the authority 50 ms later.
        let asked = h.now
        let proposed = asked + .milliseconds(50) + Self.margin
        h.advance(ms: 50)
        let actions = h.request(.play, from: b, proposing: proposed)
        let playing = h.authority.timeline
        #expect(playing.isPlaying && playing.anchorSessionTime == proposed && playing.originator == b)
        #expect(actions.timelines(to: a) == [playing] && actions.timelines(to: b) == [playing])
        // Without a proposal the start waits for bob's way back too: 50 ms later.
        var (plain, _, pb) = Self.pausedPair()
        plain.advance(ms: 50)
        plain.request(.play, from: pb)
        #expect(plain.authority.timeline.anchorSessionTime == plain.now + .milliseconds(50) + Self.margin)
        #expect(plain.authority.timeline.anchorSessionTime - proposed == .milliseconds(50))
    }

    @Test("a proposed seek counts the others' prerolls; one the others cannot make gets the earliest they can")
    func aProposalTooEarlyGetsTheEarliestTheOthersCanMake() {
        var (h, _, b) = Self.pausedPair()
        h.request(.play, from: b)
        h.advance(ms: 5_000)
        // A seek: alice needs her 80 ms preroll. Bob's proposal forgot it.
        let forgot = h.now + Self.margin
        h.request(.seek(itemTime: .seconds(600), play: true), from: b, proposing: forgot)
        #expect(h.authority.timeline.anchorItemTime == .seconds(600))
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(80) + Self.margin)
        // One that allows for it is kept as it is, even a little later than needed.
        h.advance(ms: 5_000)
        let allowing = h.now + .milliseconds(95) + Self.margin
        h.request(.seek(itemTime: .seconds(60), play: true), from: b, proposing: allowing)
        #expect(h.authority.timeline.anchorSessionTime == allowing)
    }

    @Test("a proposal more than maxProposedStartDelay after the authority's own start, or any with the switch off, is ignored; extremes change nothing else")
    func proposalsAreBounded() {
        var (h, _, b) = Self.pausedPair()
        let scheduled = h.now + .milliseconds(50) + Self.margin
        h.request(.play, from: b, proposing: scheduled + .seconds(1) + .milliseconds(1))
        #expect(h.authority.timeline.anchorSessionTime == scheduled)
        // At the bound, kept: one participant can hold a start back by a second at most.
        var (edge, _, eb) = Self.pausedPair()
        edge.request(.play, from: eb, proposing: scheduled + .seconds(1))
        #expect(edge.authority.timeline.anchorSessionTime == scheduled + .seconds(1))
        // The far ends of the clock: the earliest the others can make, and the authority's own start.
        var (low, _, lb) = Self.pausedPair()
        low.request(.play, from: lb, proposing: SessionInstant(nanoseconds: .min))
        #expect(low.authority.timeline.anchorSessionTime == low.now + Self.margin)
        var (high, _, hb) = Self.pausedPair()
        high.request(.play, from: hb, proposing: SessionInstant(nanoseconds: .max))
        #expect(high.authority.timeline.anchorSessionTime == scheduled)
        // Switched off: the authority's own schedule.
        var off = AuthorityConfiguration.withScheduledStarts
        off.honoursProposedStarts = false
        var (plain, _, pb) = Self.pausedPair(configuration: off)
        plain.request(.play, from: pb, proposing: plain.now + Self.margin)
        #expect(plain.authority.timeline.anchorSessionTime == scheduled)
    }

    @Test("everyone hears when a participant reports a display (its starts go on refreshes); the flag is absent on the wire otherwise")
    func aDisplayIsAnnounced() throws {
        var (h, a, b) = Self.pausedPair()
        h.advance(ms: 2_000)   // past the second since bob's "prepared" was news
        let grid = DisplayGrid(refresh: .milliseconds(16.667), refreshAt: h.now - .milliseconds(3))
        let report = h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, display: grid), from: b)
        let lists = report.messages(to: a).compactMap { if case .participants(let list) = $0 { list } else { nil } }
        let bob = try #require(lists.last?.first { $0.participant.id == b })
        #expect(bob.reportsDisplay)
        #expect(h.authority.participants.first { $0.participant.id == a }?.reportsDisplay == false)
        // The same report again is no news.
        #expect(h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, display: grid), from: b)
            .messages(to: a).isEmpty)
        // Bob's first delay spread is, a second on; the next one comes with a later list.
        h.advance(ms: 1_000)
        let spread = h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, returnDelaySpread: .milliseconds(3),
                                        display: grid), from: b)
        let withSpread = spread.messages(to: a).compactMap { if case .participants(let list) = $0 { list } else { nil } }
        #expect(withSpread.last?.first { $0.participant.id == b }?.returnDelaySpread == .milliseconds(3))
        h.advance(ms: 1_000)
        #expect(h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, returnDelaySpread: .milliseconds(4),
                                   display: grid), from: b).messages(to: a).isEmpty)
        let encoded = try JSONEncoder().encode(h.authority.participants)
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.components(separatedBy: "reportsDisplay").count == 2, "only bob's carries the key: \(text)")
        let decoded = try JSONDecoder().decode([ParticipantState].self, from: encoded)
        #expect(decoded == h.authority.participants)
    }

    @Test("news for proposals reaches everyone at most once a second per participant, however often it comes; news held back goes with the next report")
    func listNewsIsBounded() {
        var (h, a, b) = Self.pausedPair()
        func lists(_ actions: [AuthorityHarness.Action]) -> Int {
            actions.messages(to: a).filter { if case .participants = $0 { true } else { false } }.count
        }
        h.advance(ms: 2_000)
        var sent = 0
        // A thousand reports in a second, each with a new preroll estimate.
        for i in 0..<1_000 {
            sent += lists(h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0,
                                             prerollEstimate: .milliseconds(Double(20 + i % 50))), from: b))
            h.advance(ms: 0.9)
        }
        #expect(sent == 1)
        #expect(h.authority.participants.first { $0.participant.id == b }?.prerollEstimate == .milliseconds(69))
        // The last estimate was held back: it goes with the next report after the second, which has none.
        h.advance(ms: 200)
        #expect(lists(h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)) == 1)
        #expect(lists(h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)) == 0)
        // Prepared reports for old generations, alternated, do the same.
        h.advance(ms: 2_000)
        let generation = h.authority.timeline.generation
        var prepared = 0
        for i in 0..<100 {
            prepared += lists(h.send(.prepared(generation: generation - UInt64(i % 2)), from: b))
        }
        #expect(prepared <= 1)
    }

    @Test("a snapshot written before the list-news bookkeeping (a relay's, kept across a restart) still reads")
    func anOlderSnapshotReads() throws {
        var (h, _, b) = Self.pausedPair()
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, prerollEstimate: .milliseconds(40)), from: b)
        let data = try JSONEncoder().encode(h.authority.snapshot)
        #expect(String(decoding: data, as: UTF8.self).contains("listNews"))
        // The same snapshot without the field, as an earlier version wrote it.
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let members = try #require(object["members"] as? [[String: Any]])
        object["members"] = members.map { member in member.filter { $0.key != "listNews" } }
        let older = try JSONSerialization.data(withJSONObject: object)
        #expect(!String(decoding: older, as: UTF8.self).contains("listNews"))
        let snapshot = try JSONDecoder().decode(AuthoritySnapshot.self, from: older)
        let restored = SessionAuthority(restoring: snapshot, configuration: h.authority.configuration)
        #expect(restored.participants.map(\.participant.id) == h.authority.participants.map(\.participant.id))
    }

    @Test("a rate change made in place at the switch a joiner proposed; the requester switches at once, in place")
    func aProposedRateChange() throws {
        // The authority: everyone changes rate in place; bob, 50 ms away, proposes the switch at his way there plus
        // the small margin (alice is beside the authority), and it is kept.
        let inPlace = InPlaceRateChangeTests.inPlace
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true, info: inPlace)
        let b = h.joinReady("bob", info: inPlace)
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        h.request(.play, from: a)
        h.advance(ms: 10_000)
        let old = h.authority.timeline
        let proposed = h.now + .milliseconds(50) + .milliseconds(5)
        h.advance(ms: 50)
        h.request(.rate(1.5), from: b, proposing: proposed)
        #expect(h.authority.timeline.rate == 1.5 && h.authority.timeline.anchorSessionTime == proposed)
        #expect(h.authority.timeline.anchorItemTime == old.expectedItemTime(atSessionTime: proposed))
        // Too early for the others: the earliest they can make.
        h.advance(ms: 5_000)
        h.request(.rate(1), from: b, proposing: h.now - .milliseconds(100))
        #expect(h.authority.timeline.anchorSessionTime == h.now + AuthorityConfiguration().rateSwitchMargin)

        // The requester, 50 ms away, with the host beside the authority: it switches in place at its proposal.
        var m = InPlaceRateChangeTests.playing(inPlace)
        var me = ParticipantState(participant: Participant(id: T.me, name: "me"), readiness: .ready(inPlace),
                                  oneWayDelay: .milliseconds(50))
        me.returnDelaySpread = .milliseconds(2)
        var host = ParticipantState(participant: Participant(id: Self.ann, name: "ann"), readiness: .ready(inPlace),
                                    isHost: true)
        host.returnDelaySpread = .zero
        _ = m.receive(.participants([me, host]), now: lt(8 * s))
        let actions = try m.setRate(1.5, now: lt(25 * s))
        let request = try #require(Self.proposals(actions).first)
        let at: Int64 = 20 * s + 50 * ms + 5 * ms + 2 * ms
        #expect(request.command == .rate(1.5) && request.proposedStart == st(at))
        #expect(T.engineCommands(actions).map(\.1) == [.play(from: it(at - 3 * s), atSessionTime: st(at), rate: 1.5)])
        // A host whose player cannot change rate in place: no proposal (the group stops and starts again).
        var other = InPlaceRateChangeTests.playing(inPlace)
        _ = other.receive(.participants([
            ParticipantState(participant: Participant(id: T.me, name: "me"), readiness: .ready(inPlace),
                             oneWayDelay: .milliseconds(50)),
            ParticipantState(participant: Participant(id: Self.ann, name: "ann"), readiness: .ready(T.media), isHost: true),
        ]), now: lt(8 * s))
        let plain = try other.setRate(1.5, now: lt(25 * s))
        #expect(Self.proposals(plain).first?.proposedStart == nil && T.engineCommands(plain).isEmpty)
    }

    // MARK: A whole session

    /// The host beside the authority and a joiner on a 50 ms wired link, simulated (clock sync over the link,
    /// fake engines with 30 ms seeks); with `otherJoiner`, a second joiner on such a link, and with `directDelay`
    /// (ns) the peers also reach each other straight that far apart. The first joiner pauses, plays and seeks;
    /// returns, for each of its play and seek, when each peer started moving after it asked (ns), and how far apart
    /// they started. `inspect` sees the simulation at the end.
    static func joinerCommands(proposing: Bool, seed: UInt64, otherJoiner: Bool = false, directDelay: Int64? = nil,
                               inspect: (SessionSimulation) -> Void = { _ in })
        -> [(label: String, latencies: [Int64], spread: Int64)] {
        var setups: [SessionSimulation.PeerSetup] = []
        let peers = [("host", NetworkPath.loopback), ("joiner", NetworkPath.wired)] + (otherJoiner ? [("other", .wired)] : [])
        for (name, link) in peers {
            var engine = FakeEngineProfile(loadDelay: 200 * ms, seekDelay: 30 * ms, prerollEstimate: 80 * ms)
            engine.media.title = "Movie"
            var coordinator = Machine.Configuration()
            coordinator.prerollEstimate = TimeSpan(nanoseconds: engine.prerollEstimate)
            coordinator.proposesStarts = proposing
            setups.append(SessionSimulation.PeerSetup(name: name, link: link, engine: engine, coordinator: coordinator,
                                                      isHost: name == "host"))
        }
        let sim = ScenarioTests.simulation(seed: seed, peers: setups)
        sim.directDelay = directDelay
        var results: [(String, [Int64], Int64)] = []
        func measure(_ label: String, asked: Int64) {
            let starts = sim.peers.compactMap { $0.engine.starts.last(where: { $0.trueTime > asked })?.trueTime }
            guard starts.count == peers.count else {
                Issue.record("\(label): \(starts.count) of \(peers.count) peers started")
                return
            }
            results.append((label, starts.map { $0 - asked }, starts.max()! - starts.min()!))
        }
        sim.at(2 * s) { $0.play(0) }
        sim.at(6 * s) { $0.pause(1) }
        sim.at(8 * s) { $0.play(1) }
        sim.at(11 * s) { $0.seek(1, to: 60 * s) }
        sim.run(until: 10 * s)
        measure("play", asked: 8 * s)
        sim.run(until: 14 * s)
        measure("seek", asked: 11 * s)
        ScenarioTests.expectSameGeneration(sim)
        _ = ScenarioTests.expectInStep(sim, over: 13 * s...14 * s, "joiner's commands")
        inspect(sim)
        return results
    }

    @Test("in a session of two, the joiner's play and seek start a leg sooner for both, together", arguments: [UInt64(1), 2])
    func aJoinersCommandsStartALegSooner(seed: UInt64) {
        let proposed = Self.joinerCommands(proposing: true, seed: seed)
        let plain = Self.joinerCommands(proposing: false, seed: seed)
        #expect(proposed.map(\.label) == ["play", "seek"] && plain.map(\.label) == ["play", "seek"])
        for (with, without) in zip(proposed, plain) {
            // Both peers start within 2 ms of each other (the clock estimates), one way and a margin after the
            // joiner asked with a proposal (its 50 ms there, the margin from the reported spreads: play 67–69 ms;
            // a seek the host's 80 ms preroll too), against both ways without (play 113–114 ms).
            #expect(with.spread < 2 * ms, "\(with.label): \(with.spread)")
            let slowest = with.latencies.max()!, plainSlowest = without.latencies.max()!
            #expect(slowest < (with.label == "play" ? 80 : 160) * ms, "\(with.label) with a proposal: \(with.latencies)")
            #expect(plainSlowest - slowest >= 40 * ms, "\(with.label): \(with.latencies) against \(without.latencies)")
        }
    }

    // MARK: The requester

    static let ann = ParticipantID("ann")

    static func participants(ownDelay: Int64 = 50 * ms, annDelay: Int64 = 0, annReady: Bool = true,
                             annDisplay: Bool = false, annPrepared: UInt64? = 1,
                             spreads: (own: TimeSpan, ann: TimeSpan)? = nil) -> ServerMessage {
        // Its preroll estimate as it reported it: the engine's own, 300 ms, until it has measured one.
        var own = ParticipantState(participant: Participant(id: T.me, name: "me"), readiness: .ready(T.media),
                                   oneWayDelay: sp(ownDelay), prerollEstimate: .milliseconds(300), preparedGeneration: 1)
        own.returnDelaySpread = spreads?.own
        var ann = ParticipantState(participant: Participant(id: ann, name: "ann"),
                                   readiness: annReady ? .ready(T.media) : .loading(progress: nil), isHost: true,
                                   oneWayDelay: sp(annDelay), prerollEstimate: .milliseconds(30),
                                   preparedGeneration: annPrepared)
        ann.reportsDisplay = annDisplay
        ann.returnDelaySpread = spreads?.ann
        return .participants([own, ann])
    }

    @Test("a proposal's margin is this peer's spread, the others' and 8 ms in quadrature, 40 ms at most or while a spread is unknown")
    func theMarginFollowsTheSpreads() {
        func proposed(_ spreads: (own: TimeSpan, ann: TimeSpan)?) -> SessionInstant? {
            var m = Self.joiner(participants: Self.participants(spreads: spreads))
            return Self.proposals(m.play(now: lt(10 * s))).first?.proposedStart
        }
        // √(3² + 1² + 8²) = 8.602 ms; √(1² + 6² + 8²) = 10.05; √(20² + 1² + 8²) = 21.56; √(40² + 8²) > 40.
        #expect(proposed((own: .milliseconds(3), ann: .milliseconds(1))) == st(5 * s + 50 * ms + 8_602_326))
        #expect(proposed((own: .milliseconds(1), ann: .milliseconds(6))) == st(5 * s + 50 * ms + 10_049_876))
        #expect(proposed((own: .milliseconds(20), ann: .milliseconds(1))) == st(5 * s + 50 * ms + 21_563_859))
        #expect(proposed((own: .milliseconds(40), ann: .zero)) == st(5 * s + 50 * ms + 40 * ms))
        #expect(proposed(nil) == st(5 * s + 50 * ms + 40 * ms))
    }

    @Test("the authority keeps a proposal that leaves each other participant its way, preroll and spread from the request's arrival, so a request late by up to the proposer's spread keeps it")
    func aLateRequestKeepsItsProposal() {
        // Bob (50 ms away, his way spreading 20 ms) seeks while playing and proposes alice's 80 ms preroll with
        // √(20² + 0² + 8²) = 21.5 ms; alice is beside the authority (no spread).
        func kept(lateBy late: Double) -> Bool {
            var (h, a, b) = Self.pausedPair()
            h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0, returnDelaySpread: .milliseconds(20)), from: b)
            h.send(.linkReport(oneWayDelay: .zero, errorBound: 0, returnDelaySpread: .zero), from: a)
            h.request(.play, from: b)
            h.advance(ms: 5_000)
            let asked = h.now
            let proposed = asked + .milliseconds(50 + 80) + TimeSpan(nanoseconds: 21_540_659)
            h.advance(ms: 50 + late)
            h.request(.seek(itemTime: .seconds(60), play: true), from: b, proposing: proposed)
            return h.authority.timeline.anchorSessionTime == proposed
        }
        // The authority's own margin would be the same 21.5 ms (the widest spread and 8 ms): counted again from the
        // arrival, a request late by a millisecond would move the start.
        #expect(kept(lateBy: 0) && kept(lateBy: 10) && kept(lateBy: 21.5))
        // Later than the margin: alice could not make it; moved.
        #expect(!kept(lateBy: 22))
    }

    /// A joiner 50 ms from the authority, paused at 0 (generation 1) and prepared there; the host beside the
    /// authority. Local time is session time + 5 s.
    static func joiner(_ config: Machine.Configuration = .init(), participants: ServerMessage = participants()) -> Machine {
        var m = T.loadedMachine(config: config)
        _ = m.receive(participants, now: lt(6 * s))
        return m
    }

    static func proposals(_ actions: [Machine.Action]) -> [TimelineRequest] {
        T.sent(actions).compactMap { if case .timelineRequest(let r) = $0 { r } else { nil } }
    }

    @Test("a joiner proposes its play's start and starts itself then; the timeline coming back changes nothing")
    func theRequesterStartsAtItsProposal() throws {
        var m = Self.joiner()
        let actions = m.play(now: lt(10 * s))
        let request = try #require(Self.proposals(actions).first)
        // Its 50 ms to the authority, the host's nothing (prepared, beside it), the 40 ms margin; session 5 s.
        #expect(request.command == .play && request.proposedStart == st(5 * s + 90 * ms))
        let play = try #require(CoordinatorMissedStartTests.plays(actions).first)
        #expect(play.session == 5 * s + 90 * ms && play.item == 0)
        #expect(m.timeline?.isPlaying == true && m.timeline?.generation == 1)
        #expect(m.isPaused(now: lt(10 * s)) == false)
        // The authority kept it: its timeline arrives 100 ms later, after the start, and nothing more is done.
        let back = m.receive(.timeline(T.timeline(2, .playing, at: 5 * s + 90 * ms, item: 0, by: T.me)), now: lt(10_100 * ms))
        #expect(T.engineCommands(back).isEmpty)
        #expect(CoordinatorScheduledStartTests.suspensionsBegun(back).isEmpty)
        #expect(m.timeline?.generation == 2)
        // A seek while playing proposes its start too: the host's 30 ms preroll (not prepared there), or this
        // peer's own preroll estimate when longer (300 ms until it has measured its own), which it begins at once
        // where the authority would count it after the way back.
        _ = m.engineCompleted(play.id, .playing, now: lt(10_100 * ms))
        let seek = m.seek(by: .seconds(60), engineItemTime: it(1 * s), now: lt(11 * s))
        let proposed = try #require(Self.proposals(seek).first)
        #expect(proposed.command == .seek(itemTime: it(61 * s), play: true))
        #expect(proposed.proposedStart == st(6 * s + 300 * ms + 40 * ms))
        let seekPlay = try #require(CoordinatorMissedStartTests.plays(seek).first)
        let expectedStart: Int64 = 6 * s + 340 * ms
        #expect(seekPlay.item == 61 * s && seekPlay.session == expectedStart)
    }

    @Test("a start the authority moved is followed alone; a refusal, a reply from the same generation or no reply puts the timeline back")
    func provisionalStartsEnd() throws {
        // Moved later (someone else's schedule): this peer switches to it, without holding the group.
        var moved = Self.joiner()
        _ = moved.play(now: lt(10 * s))
        let later = moved.receive(.timeline(T.timeline(2, .playing, at: 5 * s + 500 * ms, item: 0, by: T.me)), now: lt(10_050 * ms))
        #expect(CoordinatorMissedStartTests.plays(later).map(\.session) == [5 * s + 500 * ms])
        #expect(CoordinatorScheduledStartTests.suspensionsBegun(later).isEmpty)
        #expect(moved.timeline?.generation == 2)
        // Moved a little, answered after this peer began: it joins the new line alone, and the group is not held
        // for a start it did not schedule for this peer.
        var nudged = Self.joiner()
        let began = nudged.play(now: lt(10 * s))
        let first = try #require(CoordinatorMissedStartTests.plays(began).first)
        _ = nudged.engineCompleted(first.id, .playing, now: lt(10_095 * ms))
        let after = nudged.receive(.timeline(T.timeline(2, .playing, at: 5 * s + 120 * ms, item: 0, by: T.me)), now: lt(10_100 * ms))
        #expect(!CoordinatorMissedStartTests.plays(after).isEmpty)
        #expect(CoordinatorScheduledStartTests.suspensionsBegun(after).isEmpty)
        #expect(nudged.localSuspensionReasons.isEmpty)

        let base = T.timeline(1, .paused, at: 0, item: 0)
        // Refused: back to the paused timeline, at once.
        var refused = Self.joiner()
        _ = refused.play(now: lt(10 * s))
        let refusal = refused.receive(.refused(Refusal(.limit, "too many requests", request: .timeline)), now: lt(10_100 * ms))
        #expect(refused.timeline == base)
        #expect(T.engineCommands(refusal).isEmpty == false, "the engine leaves the start it was given")
        // The group was already where it stands (an answer with the same generation): back to it.
        var same = Self.joiner()
        _ = same.play(now: lt(10 * s))
        _ = same.receive(.timeline(base), now: lt(10_100 * ms))
        #expect(same.timeline == base)
        // No answer at all within proposalHold: back to it.
        var silent = Self.joiner()
        _ = silent.play(now: lt(10 * s))
        _ = silent.tick(now: lt(11_900 * ms), mapping: T.mapping, clockQuality: nil, engineItemTime: nil)
        #expect(silent.timeline?.isPlaying == true)
        _ = silent.tick(now: lt(12 * s), mapping: T.mapping, clockQuality: nil, engineItemTime: nil)
        #expect(silent.timeline == base)
        // An older generation does not end it.
        #expect(silent.timeline?.generation == 1)
    }

    @Test("no proposal where the participant list cannot say what the authority will do, on a short link, or switched off")
    func noProposalWhenUnsure() {
        func proposes(_ m: inout Machine) -> Bool {
            let actions = m.play(now: lt(10 * s))
            let proposed = Self.proposals(actions).first?.proposedStart != nil
            #expect(proposed == !CoordinatorMissedStartTests.plays(actions).isEmpty, "a start only with a proposal")
            return proposed
        }
        var short = Self.joiner(participants: Self.participants(ownDelay: 5 * ms))
        #expect(!proposes(&short))
        var loading = Self.joiner(participants: Self.participants(annReady: false))
        #expect(!proposes(&loading))
        var page = Self.joiner(participants: Self.participants(annDisplay: true))
        #expect(!proposes(&page))
        // Another participant as far from the authority: the command reaches it two legs after it was asked however
        // it is scheduled, so a proposal saves nothing (and 5 ms is not worth it either).
        var far = Self.joiner(participants: Self.participants(annDelay: 50 * ms))
        #expect(!proposes(&far))
        var almost = Self.joiner(participants: Self.participants(annDelay: 45 * ms))
        #expect(!proposes(&almost))
        var nearer = Self.joiner(participants: Self.participants(annDelay: 40 * ms))
        #expect(proposes(&nearer))
        var off = Machine.Configuration()
        off.proposesStarts = false
        var plain = Self.joiner(off)
        #expect(!proposes(&plain))
        // A host not prepared where the group stands: its preroll counts.
        var unprepared = Self.joiner(participants: Self.participants(annPrepared: nil))
        let actions = unprepared.play(now: lt(10 * s))
        #expect(Self.proposals(actions).first?.proposedStart == st(5 * s + 120 * ms))
        // A seek while paused proposes nothing (nobody starts).
        var paused = Self.joiner()
        let seek = paused.seek(by: .seconds(10), engineItemTime: it(0), now: lt(10 * s))
        #expect(Self.proposals(seek).first?.proposedStart == nil)
    }
}
