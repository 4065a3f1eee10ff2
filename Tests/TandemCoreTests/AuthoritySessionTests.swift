import Foundation
import Testing
@testable import TandemCore

@Suite("Session authority: membership, ending, reconnects")
struct AuthoritySessionTests {
    @Test func joinWelcomesTheJoinerAndTellsEveryone() {
        var h = AuthorityHarness()
        let (a, first) = h.join("alice", preroll: .milliseconds(120), host: true)
        #expect(a == ParticipantID("p1"))
        guard case .welcome(let own)? = first.messages(to: a).first else {
            Issue.record("alice got no welcome first: \(first)")
            return
        }
        #expect(own.sessionID == "s1" && own.localParticipant.name == "alice" && own.activity == AuthorityHarness.movie)
        let (b, second) = h.join("bob")
        #expect(b == ParticipantID("p2"))
        guard case .welcome(let snapshot)? = second.messages(to: b).first else {
            Issue.record("bob got no welcome first: \(second)")
            return
        }
        #expect(snapshot.localParticipant == Participant(id: b, name: "bob"))
        #expect(snapshot.timeline == h.authority.timeline)
        #expect(snapshot.participants.map(\.participant.name) == ["alice", "bob"])
        #expect(snapshot.participants[0].isHost && snapshot.participants[0].prerollEstimate == .milliseconds(120))
        for peer in [a, b] {
            #expect(second.messages(to: peer).contains(.participants(h.authority.participants)))
            #expect(second.notices(.joined, to: peer).map(\.text) == ["bob joined"])
        }
    }

    @Test func joinIsRefusedWhenTheSessionIsFull() {
        var config = AuthorityConfiguration()
        config.maxParticipants = 2
        var h = AuthorityHarness(configuration: config)
        h.join("alice", host: true)
        h.join("bob")
        guard case .refused(let reason) = h.authority.join(name: "carol", prerollEstimate: 0, wantsHost: false,
                                                             newReconnectToken: "t", now: h.now) else {
            Issue.record("a third participant was admitted")
            return
        }
        #expect(reason.code == .sessionFull)
        #expect(reason.message.contains("full (2 participants)"))
        #expect(h.authority.participants.count == 2)
    }

    @Test func endInvalidatesEveryoneNamingWhoEndedIt() {
        // bob is not the host: this configuration lets everyone end the session.
        var h = AuthorityHarness(configuration: AuthorityConfiguration().withHostRolesForEveryone)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let c = h.joinReady("carol")
        let actions = h.send(.end, from: b)
        let expected = InvalidationReason(code: .ended, message: "bob ended the session")
        #expect(actions.closes == [a: expected, b: expected, c: expected])
        #expect(actions.sessionEnd == expected)
        #expect(h.authority.endReason == expected)
        // Nothing happens after the end, and nobody can join.
        #expect(h.send(.timelineRequest(TimelineRequest(requestID: 1, command: .play, basedOnGeneration: 0,
                                                        requestedAtSessionTime: 0)), from: a).isEmpty)
        guard case .refused(let reason) = h.authority.join(name: "dave", prerollEstimate: 0, wantsHost: false,
                                                             newReconnectToken: "t", now: h.now) else {
            Issue.record("joined an ended session")
            return
        }
        #expect(reason == expected)
    }

    @Test func theHostLeavingEndsTheSessionForEveryone() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let actions = h.send(.leave, from: a)
        let expected = InvalidationReason(code: .hostLeft, message: "the host left; the session has ended")
        #expect(actions.closes == [a: expected, b: expected])
        #expect(actions.sessionEnd == expected)
    }

    @Test func withoutEndsWhenHostLeavesTheOthersGoOn() {
        var config = AuthorityConfiguration()
        config.endsWhenHostLeaves = false
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let actions = h.send(.leave, from: a)
        #expect(actions.sessionEnd == nil)
        #expect(actions.closes.keys.sorted() == [a])
        #expect(h.authority.participants.map(\.participant.id) == [b])
        // The last one leaving ends the session.
        let last = h.send(.leave, from: b)
        #expect(last.sessionEnd?.code == .ended)
    }

    @Test func shutdownInvalidatesEveryoneWithTheGivenReason() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let reason = InvalidationReason(code: .serverShutdown, message: "the server is shutting down")
        let actions = h.authority.shutdown(reason: reason, now: h.now)
        #expect(actions.closes == [a: reason, b: reason])
        #expect(actions.sessionEnd == reason)
    }

    @Test func reconnectWithinTheGracePeriodKeepsTheIdentity() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.request(.play, from: a)
        h.advance(ms: 1_000)
        let lost = h.authority.connectionLost(b, now: h.now)
        #expect(lost.wakeUps == [h.now + .seconds(35)])
        #expect(h.authority.participants.map(\.participant.id) == [a])
        // Messages from a lost connection are ignored.
        #expect(h.send(.clockPing(ClockPing(sequence: 1, t1: 0)), from: b).isEmpty)
        h.advance(ms: 4_000)
        let (again, actions) = h.join("bob", reconnectAs: b, token: h.token(of: b))
        #expect(again == b)
        guard case .welcome(let snapshot)? = actions.messages(to: b).first else {
            Issue.record("no fresh snapshot")
            return
        }
        #expect(snapshot.timeline == h.authority.timeline && snapshot.localParticipant.id == b)
        #expect(actions.notices(.joined, to: a).first?.text == "bob reconnected")
        #expect(h.authority.participants.map(\.participant.id) == [a, b])
        // The grace period no longer runs: a timer at its old deadline removes nobody.
        h.advance(ms: 35_000)
        h.fireTimer()
        #expect(h.authority.participants.map(\.participant.id) == [a, b])
    }

    @Test func nobodyCanTakeOverTheIdentityOfAConnectedParticipant() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let (intruder, _) = h.join("mallory", reconnectAs: a)
        #expect(intruder != a)
        #expect(h.authority.participants.map(\.participant.name) == ["alice", "mallory"])
    }

    @Test func aPeerReconnectingWhileTheGroupPlaysCatchesUpWithoutPausingIt() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let (b, _) = h.join("bob")
        h.send(.readiness(.loading(progress: nil)), from: b)
        h.request(.play, from: a)
        #expect(h.authority.timeline.waitingFor == [b: [.loading]])
        h.advance(ms: 1_000)
        // Losing bob releases the wait at once.
        _ = h.authority.connectionLost(b, now: h.now)
        let playing = h.authority.timeline
        #expect(playing.isPlaying)
        h.advance(ms: 1_000)
        // bob comes back still loading: he catches up alone instead of pausing alice.
        h.join("bob", reconnectAs: b, token: h.token(of: b))
        #expect(h.authority.timeline == playing)
        h.send(.readiness(.ready(AuthorityHarness.info())), from: b)
        #expect(h.authority.timeline == playing)
    }

    @Test func afterTheGracePeriodTheIdentityIsGone() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let lost = h.authority.connectionLost(b, now: h.now)
        let deadline = lost.wakeUps.first!
        h.now = deadline
        h.fireTimer()
        let (newID, _) = h.join("bob", reconnectAs: b, token: "token-2")
        #expect(newID != b)
        #expect(h.authority.participants.map(\.participant.id) == [a, newID])
    }

    @Test func theHostNotReturningWithinTheGracePeriodEndsTheSession() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        _ = h.authority.connectionLost(a, now: h.now)
        h.advance(ms: 35_000)
        let fired = h.fireTimer()
        #expect(fired.closes.keys.sorted() == [b])
        #expect(fired.sessionEnd?.code == .hostLeft)
    }
}
