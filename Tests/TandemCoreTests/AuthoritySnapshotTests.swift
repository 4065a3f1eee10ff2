import Foundation
import Testing
@testable import TandemCore

/// `AuthoritySnapshot`: an authority written down as JSON and read back continues the session — a relay restart
/// (`tandem serve --state-dir`) on a manual clock.
@Suite("Authority snapshots: a session continues from its written state")
struct AuthoritySnapshotTests {
    /// Through JSON, as the relay's store keeps it.
    static func roundTrip(_ authority: SessionAuthority) throws -> SessionAuthority {
        let data = try JSONEncoder().encode(authority.snapshot)
        let snapshot = try JSONDecoder().decode(AuthoritySnapshot.self, from: data)
        return SessionAuthority(restoring: snapshot, configuration: authority.configuration)
    }

    @Test("restored mid-play: same timeline, activity, queue, journal; members reconnect as themselves with their tokens and roles")
    func restoredSessionContinues() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        let bob = h.joinReady("bob")
        h.request(.play, from: ann)
        h.advance(ms: 2_000)
        let info = AttachmentInfo(id: "poster", owner: ann, name: "poster.txt", size: 6, sha256: String(repeating: "0", count: 64))
        h.send(.journal(.begin(info)), from: ann)
        h.send(.journal(.chunk(id: "poster", offset: 0, bytes: Data("poster".utf8))), from: ann)
        h.send(.journal(.commit(id: "poster")), from: ann)
        #expect(h.authority.timeline.isPlaying)
        let before = h.authority

        h.advance(ms: 1_500)  // the relay is down meanwhile
        var restored = try Self.roundTrip(before)
        #expect(restored.timeline == before.timeline)
        #expect(restored.activity == before.activity)
        #expect(restored.queue == before.queue)
        #expect(restored.committedAttachments.map(\.id) == ["poster"])
        let resumed = restored.resumeAfterRestart(now: h.now)
        // Nobody is connected, everyone is within the grace period: one wake-up at its end.
        #expect(restored.participants.isEmpty)
        #expect(resumed.wakeUps == [h.now + restored.configuration.reconnectGracePeriod])
        #expect(restored.timeline == before.timeline, "a restart alone changes no timeline")

        h.authority = restored
        h.advance(ms: 300)
        let (annBack, annActions) = h.join("ann", reconnectAs: ann, token: before.members[ann]!.reconnectToken)
        let (bobBack, _) = h.join("bob", reconnectAs: bob, token: before.members[bob]!.reconnectToken)
        #expect(annBack == ann && bobBack == bob)
        let welcome = try #require(annActions.welcome(to: ann))
        #expect(welcome.timeline == before.timeline)
        #expect(welcome.attachments.map(\.id) == ["poster"])
        #expect(h.authority.participants.first { $0.participant.id == ann }?.isHost == true)
        #expect(h.authority.participants.first { $0.participant.id == bob }?.isHost == false)

        // A wrong token is someone new (p3), never bob; new ids continue after the old ones.
        let (stranger, _) = h.join("bob", reconnectAs: bob, token: "guess")
        #expect(stranger == ParticipantID("p3"))
    }

    @Test("members that do not come back within the grace period after a restore are removed; the session ends when nobody does")
    func graceRunsOutAfterARestore() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        _ = h.joinReady("bob")
        var restored = try Self.roundTrip(h.authority)
        _ = restored.resumeAfterRestart(now: h.now)
        h.authority = restored
        h.advance(ms: 1_000)
        _ = h.join("ann", reconnectAs: ann, token: restored.members[ann]!.reconnectToken)
        h.now = h.now + restored.configuration.reconnectGracePeriod
        _ = h.fireTimer()
        #expect(h.authority.participants.map(\.participant.id) == [ann], "bob's grace ran out")
        #expect(h.authority.memberCount == 1)

        var empty = try Self.roundTrip(h.authority)
        _ = empty.resumeAfterRestart(now: h.now)
        let end = empty.timerFired(now: h.now + empty.configuration.reconnectGracePeriod)
        #expect(end.sessionEnd != nil)
    }

    @Test("an upload in progress at the restart is dropped (its checksum cannot be finished); committed ones stay")
    func unfinishedUploadIsDropped() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        let done = AttachmentInfo(id: "done", owner: ann, name: "a", size: 2, sha256: String(repeating: "0", count: 64))
        h.send(.journal(.begin(done)), from: ann)
        h.send(.journal(.chunk(id: "done", offset: 0, bytes: Data("ab".utf8))), from: ann)
        h.send(.journal(.commit(id: "done")), from: ann)
        let half = AttachmentInfo(id: "half", owner: ann, name: "b", size: 4, sha256: String(repeating: "0", count: 64))
        h.send(.journal(.begin(half)), from: ann)
        h.send(.journal(.chunk(id: "half", offset: 0, bytes: Data("ab".utf8))), from: ann)
        var restored = try Self.roundTrip(h.authority)
        #expect(restored.receivedBytes(ofAttachment: "half") == 2)
        _ = restored.resumeAfterRestart(now: h.now)
        #expect(restored.receivedBytes(ofAttachment: "half") == nil)
        #expect(restored.committedAttachments.map(\.id) == ["done"])
    }

    @Test("a snapshot of an ended session says so, and is not resumed")
    func endedSession() throws {
        var h = AuthorityHarness()
        let ann = h.joinReady("ann", host: true)
        _ = h.authority.shutdown(reason: InvalidationReason(code: .ended, message: "over"), now: h.now)
        #expect(h.authority.snapshot.hasEnded)
        var restored = try Self.roundTrip(h.authority)
        #expect(restored.resumeAfterRestart(now: h.now).isEmpty)
        _ = ann
    }
}
