import Foundation
import Testing
@testable import TandemCore

@Suite("Session authority: messenger fan-out and journal")
struct AuthorityMessagingTests {
    func message(_ recipients: Recipients, _ text: String, sequence: UInt64 = 1,
                 delivery: MessageDelivery = .reliable) -> ClientMessage {
        .appMessage(OutgoingAppMessage(recipients: recipients, delivery: delivery, sequence: sequence,
                                       payload: Data(text.utf8)))
    }

    @Test func messagesToAllReachEveryoneButTheSenderWithTheSourceStamped() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let c = h.joinReady("carol")
        let actions = h.send(message(.all, "hi", sequence: 4, delivery: .unreliable), from: b)
        let expected = IncomingAppMessage(source: b, delivery: .unreliable, sequence: 4, payload: Data("hi".utf8))
        #expect(actions == [.send(.appMessage(expected), to: a), .send(.appMessage(expected), to: c)])
    }

    @Test func onlyReachesOnlyActiveChosenParticipants() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let c = h.joinReady("carol")
        _ = h.authority.connectionLost(c, now: h.now)
        let actions = h.send(message(.only([c, a, ParticipantID("nobody")]), "psst"), from: b)
        #expect(actions.recipients { if case .appMessage = $0 { return true } else { return false } } == [a])
    }

    @Test func oversizedMessagesAreRefusedToTheSenderOnly() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        // Sealed payloads may exceed the plaintext limit by the sealing allowance, and no more.
        let big = String(repeating: "x", count: 256 * 1024 + PayloadSealing.allowance + 1)
        let actions = h.send(message(.all, big), from: a)
        #expect(actions.messages(to: b).isEmpty)
        guard case .refused(let reason, _, _)? = actions.messages(to: a).first else {
            Issue.record("not refused: \(actions)")
            return
        }
        #expect(reason.contains("256 KiB"))
        let exact = String(repeating: "x", count: 256 * 1024 + PayloadSealing.allowance)
        #expect(h.send(message(.all, exact), from: a).messages(to: b).count == 1)
    }

    @Test("an unreliable message over TCP is held to one datagram's size; a reliable one of that size passes")
    func unreliableMessagesOverTCPKeepTheDatagramLimit() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let limit = MessageDelivery.maxUnreliableSize + PayloadSealing.allowance
        let fits = String(repeating: "x", count: limit)
        #expect(h.send(message(.all, fits, delivery: .unreliable), from: a).messages(to: b).count == 1)
        let over = String(repeating: "x", count: limit + 1)
        let actions = h.send(message(.all, over, sequence: 2, delivery: .unreliable), from: a)
        #expect(actions.messages(to: b).isEmpty)
        guard case .refused(let reason, _, _)? = actions.messages(to: a).first else {
            Issue.record("not refused: \(actions)")
            return
        }
        #expect(reason.contains("send it reliably"))
        #expect(h.send(message(.all, over, sequence: 3), from: a).messages(to: b).count == 1)
    }

    @Test func thePerSenderRateLimitAllowsABurstAndRefills() {
        var config = AuthorityConfiguration()
        config.appMessagesPerSecond = 10
        config.appMessageBurst = 20
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        var delivered = 0, refused = 0
        for i in 0..<25 {
            let actions = h.send(message(.all, "m\(i)", sequence: UInt64(i)), from: a)
            delivered += actions.messages(to: b).count
            if case .refused? = actions.messages(to: a).first { refused += 1 }
        }
        #expect(delivered == 20 && refused == 5)
        // Another sender has its own bucket.
        #expect(h.send(message(.all, "mine"), from: b).messages(to: a).count == 1)
        // 0.5 s later five more tokens are back.
        h.advance(ms: 500)
        delivered = 0
        for i in 0..<8 { delivered += h.send(message(.all, "n\(i)"), from: a).messages(to: b).count }
        #expect(delivered == 5)
    }

    @Test func journalAttachmentsAreForwardedAndReplayedToLateJoiners() {
        // bob removes alice's attachment below, which this configuration allows.
        var config = AuthorityConfiguration()
        config.everyoneMayRemoveAttachments = true
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        // alice claims bob owns it; the authority stamps her as the owner.
        let info = AttachmentInfo(id: "img", owner: b, name: "poster.png", size: 6, sha256: "00")
        var owned = info
        owned.owner = a
        let begin = h.send(.journal(.begin(info)), from: a)
        #expect(begin == [.send(.journal(.begin(owned)), to: b)])
        let chunk1 = h.send(.journal(.chunk(id: "img", offset: 0, bytes: Data([1, 2, 3]))), from: a)
        #expect(chunk1 == [.send(.journal(.chunk(id: "img", offset: 0, bytes: Data([1, 2, 3]))), to: b)])
        h.send(.journal(.chunk(id: "img", offset: 3, bytes: Data([4, 5, 6]))), from: a)
        let commit = h.send(.journal(.commit(id: "img")), from: a)
        #expect(commit == [.send(.journal(.commit(id: "img")), to: b)])
        #expect(h.authority.committedAttachments == [owned])

        let (c, joined) = h.join("carol")
        let received = joined.messages(to: c)
        guard case .welcome(let snapshot)? = received.first else {
            Issue.record("no welcome first")
            return
        }
        #expect(snapshot.attachments == [owned])
        #expect(Array(received.dropFirst().prefix(4)) == [
            .journal(.begin(owned)),
            .journal(.chunk(id: "img", offset: 0, bytes: Data([1, 2, 3]))),
            .journal(.chunk(id: "img", offset: 3, bytes: Data([4, 5, 6]))),
            .journal(.commit(id: "img")),
        ])

        let remove = h.send(.journal(.remove(id: "img")), from: b)
        #expect(remove.recipients { $0 == .journal(.remove(id: "img")) } == [a, c])
        #expect(h.authority.committedAttachments.isEmpty)
        let (d, later) = h.join("dave")
        #expect(later.messages(to: d).allSatisfy { if case .journal = $0 { return false } else { return true } })
    }

    @Test func attachmentsStillBeingSentContinueLiveForALateJoiner() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        h.send(.journal(.begin(AttachmentInfo(id: "f", owner: a, name: "f", size: 4, sha256: "00"))), from: a)
        h.send(.journal(.chunk(id: "f", offset: 0, bytes: Data([1, 2]))), from: a)
        let (b, joined) = h.join("bob")
        #expect(joined.messages(to: b).filter { if case .journal = $0 { return true } else { return false } }.count == 2)
        #expect(h.send(.journal(.chunk(id: "f", offset: 2, bytes: Data([3, 4]))), from: a).messages(to: b).count == 1)
        #expect(h.send(.journal(.commit(id: "f")), from: a).messages(to: b) == [.journal(.commit(id: "f"))])
    }

    @Test func journalLimitsAndBrokenTransfers() {
        var config = AuthorityConfiguration()
        config.maxAttachmentSize = 10
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let tooBig = h.send(.journal(.begin(AttachmentInfo(id: "big", owner: a, name: "big.bin", size: 11, sha256: ""))), from: a)
        #expect(tooBig.messages(to: b).isEmpty)
        guard case .journal(.failed(id: "big", let why))? = tooBig.messages(to: a).first else {
            Issue.record("oversized attachment accepted: \(tooBig)")
            return
        }
        #expect(why.contains("limit"))
        // Only the owner may send chunks; a chunk out of order fails the attachment for everyone.
        h.send(.journal(.begin(AttachmentInfo(id: "x", owner: a, name: "x", size: 4, sha256: ""))), from: a)
        let foreign = h.send(.journal(.chunk(id: "x", offset: 0, bytes: Data([9]))), from: b)
        guard case .refused? = foreign.messages(to: b).first else {
            Issue.record("a chunk from someone else was accepted")
            return
        }
        let gap = h.send(.journal(.chunk(id: "x", offset: 2, bytes: Data([1]))), from: a)
        #expect(gap.recipients { if case .journal(.failed(id: "x", _)) = $0 { return true } else { return false } } == [a, b])
        // A commit before all bytes arrived fails too.
        h.send(.journal(.begin(AttachmentInfo(id: "y", owner: a, name: "y", size: 4, sha256: ""))), from: a)
        h.send(.journal(.chunk(id: "y", offset: 0, bytes: Data([1]))), from: a)
        let early = h.send(.journal(.commit(id: "y")), from: a)
        #expect(early.recipients { if case .journal(.failed(id: "y", _)) = $0 { return true } else { return false } } == [a, b])
        #expect(h.authority.committedAttachments.isEmpty)
    }

    @Test func anUnfinishedAttachmentFailsWhenItsSenderLeaves() {
        var config = AuthorityConfiguration()
        config.endsWhenHostLeaves = false
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.send(.journal(.begin(AttachmentInfo(id: "f", owner: b, name: "f", size: 4, sha256: ""))), from: b)
        let leave = h.send(.leave, from: b)
        #expect(leave.recipients { if case .journal(.failed(id: "f", _)) = $0 { return true } else { return false } } == [a])
    }
}
