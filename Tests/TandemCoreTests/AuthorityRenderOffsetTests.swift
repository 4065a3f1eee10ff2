import Foundation
import Testing
@testable import TandemCore

/// Render offsets in link reports (browser pages measure theirs per frame): passed on to everyone in the
/// participants, bounded in size and in how often a reporter can make the authority broadcast.
@Suite("Session authority: reported render offsets")
struct AuthorityRenderOffsetTests {
    static func participants(_ actions: [SessionAuthority.Action], to id: ParticipantID) -> [[ParticipantState]] {
        actions.messages(to: id).compactMap { if case .participants(let p) = $0 { return p } else { return nil } }
    }

    @Test func aReportedOffsetReachesTheOthers() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("browser")
        let actions = h.send(.linkReport(oneWayDelay: .milliseconds(1), errorBound: 0, renderOffset: .milliseconds(-3.5)),
                             from: b)
        let seen = Self.participants(actions, to: a).last?.first { $0.participant.id == b }
        #expect(seen?.renderOffset == .milliseconds(-3.5))
        #expect(Self.participants(actions, to: a).last?.first { $0.participant.id == a }?.renderOffset == nil)
    }

    @Test func reportsWithoutAnOffsetBroadcastNothing() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        #expect(Self.participants(h.send(.linkReport(oneWayDelay: .milliseconds(5), errorBound: 0), from: b), to: a).isEmpty)
    }

    @Test func aFloodOfReportsBroadcastsAtMostOnceASecond() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("browser")
        var broadcasts = 0
        // 1000 reports over 2 s, each with a new offset: at most one broadcast per second gets through.
        for i in 0..<1000 {
            let report = ClientMessage.linkReport(oneWayDelay: 0, errorBound: 0, renderOffset: .milliseconds(Double(i % 50)))
            broadcasts += Self.participants(h.send(report, from: b), to: a).count
            h.advance(ms: 2)
        }
        #expect(broadcasts >= 2 && broadcasts <= 3)
        // Unchanged (within a millisecond) a second later: nothing to tell.
        h.advance(ms: 1500)
        let last = h.authority.members[b]!.sharedRenderOffset!
        let same = ClientMessage.linkReport(oneWayDelay: 0, errorBound: 0, renderOffset: last + .milliseconds(0.5))
        #expect(Self.participants(h.send(same, from: b), to: a).isEmpty)
    }

    @Test func anAbsurdOffsetIsClampedToAnHour() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("browser")
        let actions = h.send(.linkReport(oneWayDelay: 0, errorBound: 0, renderOffset: TimeSpan(nanoseconds: .min)), from: b)
        let seen = Self.participants(actions, to: a).last?.first { $0.participant.id == b }
        #expect(seen?.renderOffset == .seconds(-3600))
    }
}
