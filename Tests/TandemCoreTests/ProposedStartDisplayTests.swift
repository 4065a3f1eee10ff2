import Foundation
import Testing
@testable import TandemCore
import TandemTesting

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// Proposed starts with a browser page in the session: the authority puts starts on the page's display refreshes,
/// so the requester puts its proposal there too, from the grid the participant list carries
/// (`ParticipantState.display`), and the authority keeps it as it is.
@Suite struct ProposedStartDisplayTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    static let refresh = TimeSpan(nanoseconds: 16_666_667)
    static let frame = TimeSpan(nanoseconds: 33_333_333)
    /// A 60 Hz display with a refresh at session 5.003 s, showing 30 fps frames one of which is at 12 ms.
    static let grid = DisplayGrid(refresh: refresh, refreshAt: st(5 * s + 3 * ms), frame: frame, frameAt: it(12 * ms))
    static let page = ParticipantID("page")

    /// The requester's list: itself 50 ms from the authority, the host beside it, a page 2 ms from it showing
    /// `display` (`reportsDisplay` alone where nil), everyone prepared at 0 (generation 1).
    static func participants(display: DisplayGrid?) -> ServerMessage {
        guard case .participants(var list) = ProposedStartTests.participants() else { return ProposedStartTests.participants() }
        var page = ParticipantState(participant: Participant(id: Self.page, name: "page"), readiness: .ready(T.media),
                                    oneWayDelay: .milliseconds(2), prerollEstimate: .milliseconds(40),
                                    preparedGeneration: 1)
        page.reportsDisplay = true
        page.display = display
        list.append(page)
        return .participants(list)
    }

    /// The start the requester proposes for a play at session 5 s, if any.
    static func proposedPlay(display: DisplayGrid?) -> SessionInstant? {
        var m = ProposedStartTests.joiner(participants: participants(display: display))
        return ProposedStartTests.proposals(m.play(now: lt(10 * s))).first?.proposedStart
    }

    @Test("with a page in the session, the requester proposes a start whose frames land on the page's refreshes")
    func theProposalIsOnThePagesRefreshes() throws {
        let proposed = try #require(Self.proposedPlay(display: Self.grid))
        // Unaligned it would be its 50 ms there, the page's 2 ms, the 40 ms margin; moved later by under a refresh.
        let unaligned = st(5 * s + 92 * ms)
        #expect(proposed >= unaligned && proposed - unaligned < Self.refresh)
        // The frame the line starts in (12 ms on, at item time 12 ms) falls on a refresh, within rounding.
        let frame = try #require(Self.grid.frameInstant(anchor: proposed, itemTime: .zero, rate: 1))
        #expect(Self.grid.distance(of: frame) <= 1)
        // A page the list names without a grid (an older server): nothing proposed.
        #expect(Self.proposedPlay(display: nil) == nil)
    }

    @Test("a page's start latency in the list: the requester's proposal allows for its play(), and none is made where that leaves nothing to save")
    func theProposalAllowsForThePagesStartLatency() throws {
        func proposed(startLatency: TimeSpan) -> SessionInstant? {
            guard case .participants(var list) = Self.participants(display: Self.grid) else { return nil }
            list[list.count - 1].startLatency = startLatency
            var m = ProposedStartTests.joiner(participants: .participants(list))
            return ProposedStartTests.proposals(m.play(now: lt(10 * s))).first?.proposedStart
        }
        // Its 50 ms there, the page's 2 ms and 30 ms of play(), the 40 ms margin; moved later by under a refresh.
        let start = try #require(proposed(startLatency: .milliseconds(30)))
        #expect(start >= st(5 * s + 122 * ms) && start - st(5 * s + 122 * ms) < Self.refresh)
        // 100 ms of play(): the authority's own start (its way back and the page's 102 ms) comes as soon.
        #expect(proposed(startLatency: .milliseconds(100)) == nil)
    }

    /// Alice (host, beside the authority), bob (50 ms away) and a page (2 ms away, showing `grid`), paused at 0 and
    /// all prepared there; the authority's clock at session 5.05 s, when bob's request arrives.
    static func authority(grid: DisplayGrid) -> (AuthorityHarness, ParticipantID) {
        var h = AuthorityHarness(configuration: .withScheduledStarts)
        let a = h.joinReady("alice", preroll: .milliseconds(80), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(30))
        let page = h.joinReady("page", preroll: .milliseconds(40))
        h.now = st(5 * s)
        h.send(.linkReport(oneWayDelay: .milliseconds(50), errorBound: 0), from: b)
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0, display: grid), from: page)
        let generation = h.authority.timeline.generation
        for id in [a, b, page] { h.send(.prepared(generation: generation), from: id) }
        h.now = st(5 * s + 50 * ms)
        return (h, b)
    }

    static func within1ns(_ a: SessionInstant, _ b: SessionInstant) -> Bool {
        (a.nanoseconds - b.nanoseconds).magnitude <= 1
    }

    @Test("the authority keeps a proposal its requester put on the page's refreshes; one just past a refresh goes back to it, not on to the next")
    func theAuthorityKeepsAnAlignedProposal() throws {
        let proposed = try #require(Self.proposedPlay(display: Self.grid))
        var (h, b) = Self.authority(grid: Self.grid)
        h.request(.play, from: b, proposing: proposed)
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.anchorSessionTime == proposed)
        // The requester's grid a little behind the authority's (the display drifted 0.1 ms since the list went):
        // the proposal falls just past the page's refresh, and the start goes back to it.
        var (drifted, db) = Self.authority(grid: DisplayGrid(refresh: Self.refresh,
                                                               refreshAt: Self.grid.refreshAt - .microseconds(100),
                                                               frame: Self.frame, frameAt: it(12 * ms)))
        drifted.request(.play, from: db, proposing: proposed)
        #expect(Self.within1ns(drifted.authority.timeline.anchorSessionTime, proposed - TimeSpan.microseconds(100)))
        // Further off than the list's tolerance (0.3 ms): on to the next refresh, as any start.
        var (far, fb) = Self.authority(grid: DisplayGrid(refresh: Self.refresh,
                                                           refreshAt: Self.grid.refreshAt - .microseconds(300),
                                                           frame: Self.frame, frameAt: it(12 * ms)))
        far.request(.play, from: fb, proposing: proposed)
        // (Within a nanosecond: the frame's instant is rounded.)
        #expect(Self.within1ns(far.authority.timeline.anchorSessionTime, proposed - TimeSpan.microseconds(300) + Self.refresh))
        // The authority's own starts still only move later: bob's play without a proposal.
        var (plain, pb) = Self.authority(grid: DisplayGrid(refresh: Self.refresh,
                                                             refreshAt: Self.grid.refreshAt - .microseconds(100),
                                                             frame: Self.frame, frameAt: it(12 * ms)))
        plain.request(.play, from: pb)
        #expect(plain.authority.timeline.anchorSessionTime > proposed)
    }

    @Test("a seek scheduled without a prepare round counts the page's frames from the seek's own item time, where a page shows its first frame after it; the requester's proposal the same")
    func aSeeksFramesCountFromItsItemTime() throws {
        // The page reported frames at 12 ms + k × 33.3 ms; after a seek to 60.005 s it shows 60.005 s first.
        var (h, b) = Self.authority(grid: Self.grid)
        h.request(.play, from: b)
        h.advance(ms: 2_000)
        h.request(.seek(itemTime: .milliseconds(60_005), play: true), from: b)
        let seek = h.authority.timeline
        #expect(seek.isPlaying && seek.anchorItemTime == .milliseconds(60_005))
        #expect(Self.grid.distance(of: seek.anchorSessionTime) <= 1, "the seek's own item time on a refresh")
        // Counted from the frames reported before, the start would have fallen elsewhere.
        let stale = try #require(Self.grid.frameInstant(anchor: seek.anchorSessionTime, itemTime: seek.anchorItemTime, rate: 1))
        #expect(Self.grid.distance(of: stale) > 1_000_000)
        // The requester, playing: its proposed seek's start is on a refresh the same way.
        var m = ProposedStartTests.joiner(participants: Self.participants(display: Self.grid))
        let play = try #require(CoordinatorMissedStartTests.plays(m.play(now: lt(10 * s))).first)
        _ = m.receive(.timeline(T.timeline(2, .playing, at: play.session, item: 0, by: T.me)), now: lt(10_100 * ms))
        _ = m.engineCompleted(play.id, .playing, now: lt(10_100 * ms))
        let proposed = try #require(ProposedStartTests.proposals(
            m.seek(by: .milliseconds(60_005), engineItemTime: it(0), now: lt(11 * s))).first?.proposedStart)
        #expect(Self.grid.distance(of: proposed) <= 1)
    }

    @Test("the list carries the page's grid, and goes again when that grid would put a refresh 0.25 ms or more off, or the frames changed; not for the same grid told again")
    func theListFollowsTheGrid() throws {
        var (h, _) = Self.authority(grid: Self.grid)
        let page = try #require(h.authority.participants.first { $0.participant.name == "page" }).participant.id
        let alice = try #require(h.authority.participants.first { $0.participant.name == "alice" }).participant.id
        func listed(_ actions: [AuthorityHarness.Action]) -> DisplayGrid?? {
            let lists = actions.messages(to: alice).compactMap { if case .participants(let l) = $0 { l } else { nil } }
            return lists.last.map { list in list.first { $0.participant.id == page }?.display }
        }
        #expect(h.authority.participants.first { $0.participant.id == page }?.display == Self.grid)
        func report(_ grid: DisplayGrid) -> DisplayGrid?? {
            h.advance(ms: 1_100)
            return listed(h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0, display: grid), from: page))
        }
        // News held back at the start (who stood prepared) goes with the next report.
        _ = report(Self.grid)
        // The same display told 120 refreshes and 60 frames later, or 0.1 ms off: no list.
        let later = DisplayGrid(refresh: Self.refresh, refreshAt: Self.grid.refreshAt + Self.refresh * Int64(120),
                                frame: Self.frame, frameAt: it(12 * ms) + Self.frame * Int64(60))
        #expect(report(later) == nil)
        let slightly = DisplayGrid(refresh: Self.refresh, refreshAt: later.refreshAt + .microseconds(100),
                                   frame: Self.frame, frameAt: later.frameAt)
        #expect(report(slightly) == nil)
        // 0.3 ms off what the list carried: the list goes, with the new grid.
        let moved = DisplayGrid(refresh: Self.refresh, refreshAt: later.refreshAt + .microseconds(300),
                                frame: Self.frame, frameAt: later.frameAt)
        #expect(report(moved) == .some(moved))
        // A refined interval that still puts the refreshes where they were: no list.
        let refined = DisplayGrid(refresh: Self.refresh + .nanoseconds(2), refreshAt: moved.refreshAt + Self.refresh * Int64(60),
                                  frame: Self.frame, frameAt: later.frameAt)
        #expect(report(refined) == nil)
        // Frames of another length, or another phase: the list goes.
        let otherFrames = DisplayGrid(refresh: refined.refresh, refreshAt: refined.refreshAt,
                                      frame: .milliseconds(40), frameAt: it(0))
        #expect(report(otherFrames) == .some(otherFrames))
        let otherPhase = DisplayGrid(refresh: refined.refresh, refreshAt: refined.refreshAt,
                                     frame: .milliseconds(40), frameAt: it(20 * ms))
        #expect(report(otherPhase) == .some(otherPhase))
        // Round trip: the list's JSON carries the grid, and only the page's entry has the key.
        let encoded = try JSONEncoder().encode(h.authority.participants)
        #expect(String(decoding: encoded, as: UTF8.self).components(separatedBy: "\"display\"").count == 2)
        #expect(try JSONDecoder().decode([ParticipantState].self, from: encoded) == h.authority.participants)
    }

    @Test("a list whose grid is hostile or far from the session's clock gets no proposal, and nothing traps")
    func hostileGridsGetNoProposal() {
        let extremes: [DisplayGrid] = [
            DisplayGrid(refresh: Self.refresh, refreshAt: SessionInstant(nanoseconds: .min)),
            DisplayGrid(refresh: Self.refresh, refreshAt: SessionInstant(nanoseconds: .max)),
            DisplayGrid(refresh: .zero, refreshAt: st(5 * s)),
            DisplayGrid(refresh: TimeSpan(nanoseconds: .min), refreshAt: st(5 * s)),
            DisplayGrid(refresh: Self.refresh, refreshAt: st(5 * s) + .seconds(3 * 86_400)),
        ]
        for grid in extremes { #expect(Self.proposedPlay(display: grid) == nil, "\(grid)") }
        // Frames out of bounds are dropped, and the refreshes alone are used: a proposal on a refresh.
        let frames: [DisplayGrid] = [
            DisplayGrid(refresh: Self.refresh, refreshAt: st(5 * s), frame: .zero, frameAt: it(0)),
            DisplayGrid(refresh: Self.refresh, refreshAt: st(5 * s), frame: TimeSpan(nanoseconds: .min),
                        frameAt: ItemTime(nanoseconds: .max)),
            DisplayGrid(refresh: Self.refresh, refreshAt: st(5 * s), frame: Self.frame,
                        frameAt: ItemTime(nanoseconds: .min)),
        ]
        for grid in frames {
            let proposed = Self.proposedPlay(display: grid)
            #expect(proposed.map { grid.distance(of: $0) } == 0, "\(grid)")
        }
    }

    @Test("a relay's snapshot written before the shared grid was kept still reads")
    func anOlderSnapshotReads() throws {
        let (h, _) = Self.authority(grid: Self.grid)
        let data = try JSONEncoder().encode(h.authority.snapshot)
        #expect(String(decoding: data, as: UTF8.self).contains("sharedDisplay"))
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let members = try #require(object["members"] as? [[String: Any]])
        object["members"] = members.map { member in member.filter { $0.key != "sharedDisplay" } }
        let older = try JSONSerialization.data(withJSONObject: object)
        let snapshot = try JSONDecoder().decode(AuthoritySnapshot.self, from: older)
        let restored = SessionAuthority(restoring: snapshot, configuration: h.authority.configuration)
        #expect(restored.participants.map(\.participant.id) == h.authority.participants.map(\.participant.id))
        #expect(restored.participants.map(\.display) == h.authority.participants.map(\.display))
    }
}
