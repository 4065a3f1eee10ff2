import Foundation
import Testing
@testable import TandemCore
import TandemTesting

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// Proposals sent straight to the peers a requester reaches without the authority (`DirectProposal`): with another
/// joiner as far from the authority as the requester, a command reaches it in one leg rather than two.
@Suite struct DirectProposalTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests
    typealias P = ProposedStartTests

    // MARK: A whole session

    /// `ProposedStartTests.joinerCommands` with a second joiner, and with `direct` the three 50 ms apart straight.
    static func joinerCommands(direct: Bool, seed: UInt64) -> [(label: String, latencies: [Int64], spread: Int64)] {
        P.joinerCommands(proposing: true, seed: seed, otherJoiner: true, directDelay: direct ? 50 * ms : nil) { sim in
            if direct {
                #expect(sim.peers[2].machine.directProposalsFollowed >= 2, "the other joiner followed the joiner's proposals")
            }
        }
    }

    @Test("with a second joiner as far from the authority, a proposal sent straight starts the play and the seek a leg sooner for all three, together", arguments: [UInt64(1), 2])
    func aSecondJoinerGetsTheCommandInOneLeg(seed: UInt64) {
        let direct = Self.joinerCommands(direct: true, seed: seed)
        let plain = Self.joinerCommands(direct: false, seed: seed)
        #expect(direct.map(\.label) == ["play", "seek"] && plain.map(\.label) == ["play", "seek"])
        for (with, without) in zip(direct, plain) {
            // Everyone within 2 ms of each other (the clock estimates); with the direct way the play is one leg and
            // a margin after the joiner asked (without it two legs, 100 ms and more), a seek the prerolls too.
            #expect(with.spread < 2 * ms, "\(with.label): \(with.spread)")
            let slowest = with.latencies.max()!, plainSlowest = without.latencies.max()!
            #expect(slowest < (with.label == "play" ? 85 : 170) * ms, "\(with.label) sent straight: \(with.latencies)")
            #expect(plainSlowest - slowest >= 30 * ms, "\(with.label): \(with.latencies) against \(without.latencies)")
        }
    }

    // MARK: The authority

    /// Alice (host, beside the authority), bob and carol 50 ms away, paused at 0 and all prepared there.
    static func pausedTrio() -> (AuthorityHarness, ParticipantID, ParticipantID, ParticipantID) {
        var h = AuthorityHarness(configuration: .withScheduledStarts)
        let a = h.joinReady("alice", preroll: .milliseconds(80), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(30))
        let c = h.joinReady("carol", preroll: .milliseconds(30))
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: c)
        let generation = h.authority.timeline.generation
        for id in [a, b, c] { h.send(.prepared(generation: generation), from: id) }
        #expect(h.authority.timeline.status == .paused)
        return (h, a, b, c)
    }

    /// Bob's play, asked at `asked` and arriving 50 ms later, proposing `start`, sent straight to `direct`.
    static func play(_ h: inout AuthorityHarness, from b: ParticipantID, asked: SessionInstant, start: SessionInstant,
                     direct: [DirectPath]?) {
        var request = TimelineRequest(requestID: 1, command: .play, basedOnGeneration: h.authority.timeline.generation,
                                      requestedAtSessionTime: asked)
        request.proposedStart = start
        request.direct = direct
        h.send(.timelineRequest(request), from: b)
    }

    @Test("the authority keeps a start sent straight to the far joiner: that way counts from the request's time")
    func theAuthorityCountsTheDirectWay() {
        let margin = P.margin
        var (h, _, b, c) = Self.pausedTrio()
        let asked = h.now
        let proposed = asked + .milliseconds(50) + margin
        h.advance(ms: 50)
        Self.play(&h, from: b, asked: asked, start: proposed, direct: [DirectPath(participant: c, oneWayDelay: .milliseconds(50))])
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.anchorSessionTime == proposed)
        // Without it, carol's way from the authority: 50 ms after the arrival.
        var (plain, _, pb, _) = Self.pausedTrio()
        let plainAsked = plain.now
        plain.advance(ms: 50)
        Self.play(&plain, from: pb, asked: plainAsked, start: plainAsked + .milliseconds(50) + margin, direct: nil)
        #expect(plain.authority.timeline.anchorSessionTime == plain.now + .milliseconds(50) + margin)
    }

    @Test("what a request says of its direct ways is bounded: a way over a second, a request too old or from the future, and entries past the 32nd count for nothing")
    func directWaysAreBounded() {
        let margin = P.margin
        func start(direct: (ParticipantID) -> [DirectPath], askedBefore: Double = 50) -> TimeSpan {
            var (h, _, b, c) = Self.pausedTrio()
            h.advance(ms: 10_000)
            let asked = h.now - TimeSpan.milliseconds(askedBefore)
            Self.play(&h, from: b, asked: asked, start: h.now - TimeSpan.seconds(2), direct: direct(c))
            return h.authority.timeline.anchorSessionTime - h.now
        }
        let fromAuthority = TimeSpan.milliseconds(50) + margin
        // A straight way of 20 ms, asked 50 ms before arrival: it reached carol before, so only the margin is left.
        #expect(start(direct: { [DirectPath(participant: $0, oneWayDelay: .milliseconds(20))] }) == margin)
        // Longer than the way from the authority: the authority's way counts.
        #expect(start(direct: { [DirectPath(participant: $0, oneWayDelay: .milliseconds(300))] }) == fromAuthority)
        #expect(start(direct: { [DirectPath(participant: $0, oneWayDelay: .milliseconds(1_001))] }) == fromAuthority)
        #expect(start(direct: { [DirectPath(participant: $0, oneWayDelay: .milliseconds(-5))] }) == fromAuthority)
        // Asked more than a second before it arrived, or more than a second after (a clock far off).
        #expect(start(direct: { [DirectPath(participant: $0, oneWayDelay: .zero)] }, askedBefore: 1_001) == fromAuthority)
        #expect(start(direct: { [DirectPath(participant: $0, oneWayDelay: .zero)] }, askedBefore: -1_001) == fromAuthority)
        // Carol 33rd in a list of strangers.
        let strangers = (0..<32).map { DirectPath(participant: ParticipantID("x\($0)"), oneWayDelay: .zero) }
        #expect(start(direct: { strangers + [DirectPath(participant: $0, oneWayDelay: .zero)] }) == fromAuthority)
        // A request's direct list goes through JSON and is absent when there is none.
        var request = TimelineRequest(requestID: 1, command: .play, basedOnGeneration: 1, requestedAtSessionTime: .zero)
        #expect(!String(decoding: try! JSONEncoder().encode(request), as: UTF8.self).contains("direct"))
        request.direct = [DirectPath(participant: ParticipantID("c"), oneWayDelay: .milliseconds(7))]
        #expect(try! JSONDecoder().decode(TimelineRequest.self, from: JSONEncoder().encode(request)) == request)
    }

    // MARK: The requester

    static let carl = ParticipantID("carl")

    /// `ProposedStartTests.participants()` with carl, another joiner as far from the authority as this peer.
    static func withCarl(prepared: UInt64? = 1) -> ServerMessage {
        guard case .participants(var list) = P.participants() else { fatalError() }
        list.append(ParticipantState(participant: Participant(id: carl, name: "carl"), readiness: .ready(T.media),
                                     oneWayDelay: .milliseconds(50), prerollEstimate: .milliseconds(30),
                                     preparedGeneration: prepared))
        return .participants(list)
    }

    @Test("a joiner that reaches the other joiner straight proposes, sends it that way too, and names the way in its request")
    func theRequesterSendsStraight() throws {
        // Without a direct path: carl is as far as this peer, so nothing is proposed.
        var plain = P.joiner(participants: Self.withCarl())
        #expect(P.proposals(plain.play(now: lt(10 * s))).first?.proposedStart == nil)
        // With one of 45 ms: one leg there, the margin.
        var m = P.joiner(participants: Self.withCarl())
        m.directPaths = [DirectPath(participant: Self.carl, oneWayDelay: .milliseconds(45))]
        let actions = m.play(now: lt(10 * s))
        let request = try #require(P.proposals(actions).first)
        #expect(request.proposedStart == st(5 * s + 50 * ms + 40 * ms))
        #expect(request.direct == [DirectPath(participant: Self.carl, oneWayDelay: .milliseconds(45))])
        let sentStraight = actions.compactMap { if case .sendDirect(let p, let to) = $0 { (p, to) } else { nil } }
        let (proposal, to) = try #require(sentStraight.first)
        #expect(to == [Self.carl] && proposal.from == T.me && proposal.requestID == request.requestID)
        #expect(proposal.timeline == m.timeline && proposal.timeline.anchorSessionTime == request.proposedStart)
        // Switched off: as without the path.
        var config = Machine.Configuration()
        config.directProposals = false
        var off = P.joiner(config, participants: Self.withCarl())
        off.directPaths = m.directPaths
        let none = off.play(now: lt(10 * s))
        #expect(P.proposals(none).first?.proposedStart == nil)
        #expect(!none.contains { if case .sendDirect = $0 { true } else { false } })
    }

    // MARK: The peer it reaches

    /// Carl's machine: paused at 0 (generation 1), prepared there; this peer ("me") 50 ms from the authority.
    static func recipient(_ config: Machine.Configuration = .init()) -> Machine {
        var m = T.loadedMachine(config: config)
        guard case .participants(var list) = P.participants() else { fatalError() }
        list.append(ParticipantState(participant: Participant(id: carl, name: "carl"), readiness: .ready(T.media),
                                     oneWayDelay: .milliseconds(50)))
        _ = m.receive(.participants(list), now: lt(6 * s))
        return m
    }

    static func proposal(from: ParticipantID = carl, generation: UInt64 = 1, at session: Int64, item: Int64 = 0,
                         status: Timeline.Status = .playing, originator: ParticipantID? = nil) -> DirectProposal {
        var timeline = T.timeline(generation, status, at: session, item: item, by: originator ?? from)
        timeline.status = status
        return DirectProposal(from: from, requestID: 7, timeline: timeline)
    }

    @Test("a proposal sent straight is followed at once; the authority's timeline then changes nothing, and without it the peer goes back")
    func theRecipientFollows() throws {
        var m = Self.recipient()
        let actions = m.receiveDirect(Self.proposal(at: 5 * s + 90 * ms), now: lt(10 * s + 50 * ms))
        let play = try #require(CoordinatorMissedStartTests.plays(actions).first)
        #expect(play.session == 5 * s + 90 * ms && play.item == 0)
        #expect(m.timeline?.isPlaying == true && m.directProposalsFollowed == 1)
        // The authority kept it: nothing more to do.
        _ = m.engineCompleted(play.id, .playing, now: lt(10_080 * ms))
        let back = m.receive(.timeline(T.timeline(2, .playing, at: 5 * s + 90 * ms, item: 0, by: Self.carl)), now: lt(10_100 * ms))
        #expect(T.engineCommands(back).isEmpty)
        #expect(m.timeline?.generation == 2)
        // No word from the authority within proposalHold: back to the paused timeline.
        var silent = Self.recipient()
        _ = silent.receiveDirect(Self.proposal(at: 5 * s + 90 * ms), now: lt(10 * s))
        _ = silent.tick(now: lt(12_001 * ms), mapping: T.mapping, clockQuality: nil, engineItemTime: nil)
        #expect(silent.timeline == T.timeline(1, .paused, at: 0, item: 0))
    }

    @Test("a proposal sent straight is ignored when it is not for the timeline followed here, not from a participant, too far from now, or switched off")
    func theRecipientIgnores() {
        func follows(_ proposal: DirectProposal, config: Machine.Configuration = .init()) -> Bool {
            var m = Self.recipient(config)
            let actions = m.receiveDirect(proposal, now: lt(10 * s))
            let followed = m.timeline?.isPlaying == true
            #expect(followed == !CoordinatorMissedStartTests.plays(actions).isEmpty)
            return followed
        }
        #expect(follows(Self.proposal(at: 5 * s + 90 * ms)))
        #expect(!follows(Self.proposal(generation: 2, at: 5 * s + 90 * ms)), "another generation")
        #expect(!follows(Self.proposal(from: ParticipantID("mallory"), at: 5 * s + 90 * ms)), "not in the session")
        #expect(!follows(Self.proposal(from: T.me, at: 5 * s + 90 * ms)), "this peer's own")
        #expect(!follows(Self.proposal(at: 5 * s + 90 * ms, originator: T.me)), "names another originator")
        #expect(!follows(Self.proposal(at: 5 * s + 90 * ms, item: 3 * s)), "a play from elsewhere than the pause")
        #expect(!follows(Self.proposal(at: 5 * s + 90 * ms, status: .paused)), "not a start")
        #expect(!follows(Self.proposal(at: 8 * s)), "three seconds ahead")
        #expect(!follows(Self.proposal(at: 2 * s)), "three seconds ago")
        var off = Machine.Configuration()
        off.directProposals = false
        #expect(!follows(Self.proposal(at: 5 * s + 90 * ms), config: off))
    }

    @Test("a pause goes straight too: the peer it reaches stops where the proposer stopped, without waiting for the authority")
    func aPauseGoesStraight() throws {
        // The requester, playing generation 2, pauses at 4 s: its request, and the same stop sent straight.
        var m = T.playingMachine()
        guard case .participants(var list) = P.participants() else { fatalError() }
        list.append(ParticipantState(participant: Participant(id: Self.carl, name: "carl"), readiness: .ready(T.media),
                                     oneWayDelay: .milliseconds(50)))
        _ = m.receive(.participants(list), now: lt(8 * s))
        m.directPaths = [DirectPath(participant: Self.carl, oneWayDelay: .milliseconds(45))]
        let actions = m.pause(currentItemTime: it(4 * s), now: lt(9 * s))
        let sentStraight = actions.compactMap { if case .sendDirect(let p, let to) = $0 { (p, to) } else { nil } }
        let (stop, to) = try #require(sentStraight.first)
        #expect(to == [Self.carl] && stop.timeline.status == .paused && stop.timeline.anchorItemTime == it(4 * s))
        #expect(stop.timeline.generation == 2 && stop.timeline.originator == T.me)

        // Carl, playing the same generation, gets it: he stops and goes to 4 s at once.
        var carl = T.playingMachine()
        _ = carl.receive(.participants(list.map { state in
            var state = state
            if state.participant.id == Self.carl { state.participant = Participant(id: T.me, name: "me") }
            else if state.participant.id == T.me { state.participant = Participant(id: Self.carl, name: "carl") }
            return state
        }), now: lt(8 * s))
        var fromCarl = stop
        fromCarl.from = Self.carl
        fromCarl.timeline.originator = Self.carl
        let stopped = carl.receiveDirect(fromCarl, now: lt(9 * s + 45 * ms))
        #expect(T.engineCommands(stopped).map(\.1) == [.prepare(itemTime: it(4 * s), rate: 1)], "as for the authority's pause")
        #expect(carl.timeline?.status == .paused && carl.timeline?.anchorItemTime == it(4 * s))
        // The authority's pause at the same place changes nothing more.
        let back = carl.receive(.timeline(T.timeline(3, .paused, at: 4 * s, item: 4 * s, by: Self.carl)), now: lt(9_100 * ms))
        #expect(T.engineCommands(back).isEmpty)
        #expect(carl.timeline?.generation == 3)
        // Without a direct path nothing goes straight.
        var alone = T.playingMachine()
        _ = alone.receive(.participants(list), now: lt(8 * s))
        #expect(!alone.pause(currentItemTime: it(4 * s), now: lt(9 * s)).contains { if case .sendDirect = $0 { true } else { false } })
    }
}
