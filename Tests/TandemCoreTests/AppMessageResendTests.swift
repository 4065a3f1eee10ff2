import Foundation
import Testing
@testable import TandemCore

@Suite("Resending reliable app messages: the sender's window and the relay's holds")
struct AppMessageResendTests {
    let ann = ParticipantID("p1"), bob = ParticipantID("p2"), carol = ParticipantID("p3")

    func message(_ sequence: UInt64, to recipients: Recipients = .all, size: Int = 10,
                 delivery: MessageDelivery = .reliable) -> OutgoingAppMessage {
        OutgoingAppMessage(recipients: recipients, delivery: delivery, sequence: sequence, payload: Data(count: size))
    }

    @Test("the window keeps the last messages within its count and bytes; older ones are gone (a gap, as before)")
    func windowBounds() {
        var window = AppMessageWindow()
        for sequence in 1...600 { window.keep(message(UInt64(sequence))) }
        #expect(window.kept.count == AppMessageWindow.maxMessages)
        #expect(window.kept.first?.message.sequence == 89)
        #expect(window.entries.count <= 2 * AppMessageWindow.maxMessages, "the store does not grow with what it drops")
        // Asked for everything after 10, it has only what it kept: from 89 on.
        let again = window.resend(to: bob, after: AppMessageMark(participant: bob, everyone: 10))
        #expect(again.map(\.sequence) == Array(89...600).map(UInt64.init))

        var small = AppMessageWindow(maxMessages: 100, maxBytes: 1000)
        for sequence in 1...20 { small.keep(message(UInt64(sequence), size: 300)) }
        #expect(small.kept.map(\.message.sequence) == [18, 19, 20])
        #expect(small.bytes == 900)
        // One larger than the whole window is not kept, nor what came before it.
        small.keep(message(21, size: 2000))
        #expect(small.kept.isEmpty && small.bytes == 0)
        // Unreliable messages are never kept.
        small.keep(message(1, delivery: .unreliable))
        #expect(small.kept.isEmpty)
    }

    @Test("a resend gives a receiver the later messages that were for it, lane by lane, to it alone, as they were")
    func resendSelection() {
        var window = AppMessageWindow()
        window.keep(message(1))
        window.keep(message(1, to: .only([bob])))
        window.keep(message(2))
        window.keep(message(2, to: .only([carol])))
        window.keep(message(3, to: .only([bob, carol])))
        window.keep(message(3))
        let toBob = window.resend(to: bob, after: AppMessageMark(participant: bob, everyone: 1, some: 1))
        #expect(toBob.map(\.sequence) == [2, 3, 3])
        #expect(toBob.allSatisfy { $0.recipients == .only([bob]) && $0.delivery == .reliable })
        // A lane the receiver has nothing of is not resent (it joined after, or never was sent any).
        #expect(window.resend(to: carol, after: AppMessageMark(participant: carol, some: 0)).map(\.sequence) == [2, 3])
        #expect(window.resend(to: carol, after: AppMessageMark(participant: carol)).isEmpty)
    }

    @Test("the receiver's order admits resent messages that fill its gap and drops copies of what it has")
    func deduplication() {
        var order = AppMessageOrder()
        for sequence in 1...5 as ClosedRange<UInt64> {
            #expect(order.admit(sender: ann, lane: .everyone, sequence: sequence, epoch: 3) == .admitted(missing: 0))
        }
        #expect(order.marks(limit: 8) == [AppMessageMark(participant: ann, everyone: 5)])
        order.resumed()
        // Resent after its mark: shown, in order; a second copy of the same is dropped, never shown twice.
        for sequence in 6...8 as ClosedRange<UInt64> {
            #expect(order.admit(sender: ann, lane: .everyone, sequence: sequence, epoch: 3) == .admitted(missing: 0))
        }
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 7, epoch: 3) == .replayed)
        // Then the sender's new link: its next message starts the new epoch.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 9, epoch: 4) == .admitted(missing: 0))
        #expect(order.marks(limit: 0).isEmpty)
    }

    @Test("while a sender resends to a receiver, the relay leaves its new messages for that receiver to the resend")
    func holds() {
        var holds = ResendHolds()
        let members: Set = [ann, bob, carol]
        let now = SessionInstant(nanoseconds: 1_000_000_000)
        // Bob is back before ann (a relay restart): his request waits for her.
        #expect(holds.joined(bob, resends: true, received: [AppMessageMark(participant: ann, everyone: 7)],
                             members: members, limit: 32, now: now).isEmpty)
        #expect(holds.pending.count == 1)
        #expect(holds.forwards(from: ann, to: bob))
        // Ann is back: the request goes to her, and is open.
        let requests = holds.joined(ann, resends: true, received: [], members: members, limit: 32, now: now)
        #expect(requests.map { $0.sender } == [ann])
        #expect(requests.first?.request == AppMessageMark(participant: bob, everyone: 7))
        #expect(holds.isHolding(from: ann) && !holds.isHolding(from: carol))
        // Her new messages go to carol, not to bob (her resend to him carries them); what she resends to him passes.
        #expect(!holds.forwards(from: ann, to: bob))
        #expect(holds.forwards(from: ann, to: carol))
        #expect(holds.forwards(from: carol, to: bob))
        let passed1 = holds.passes(from: ann, to: bob)
        #expect(passed1)
        let passed2 = holds.passes(from: ann, to: carol)
        #expect(!passed2)
        // Ann comes back before answering (the request may have died with her old link): asked again.
        let again = holds.joined(ann, resends: true, received: [], members: members, limit: 32, now: now)
        #expect(again.map { $0.request } == [AppMessageMark(participant: bob, everyone: 7)])
        holds.resent(from: ann, to: bob)
        #expect(holds.isIdle)
        #expect(holds.forwards(from: ann, to: bob))
        let passed3 = holds.passes(from: ann, to: bob)
        #expect(!passed3)

        // Her link drops with a request open: it waits for her, and goes to her when she is back.
        _ = holds.joined(bob, resends: true, received: [AppMessageMark(participant: ann, everyone: 9)],
                         members: members, limit: 32, now: now)
        holds.lost(ann)
        #expect(holds.isIdle && holds.pending.count == 1)
        let back = holds.joined(ann, resends: true, received: [], members: members, limit: 32, now: now)
        #expect(back.map { $0.request } == [AppMessageMark(participant: bob, everyone: 9)])
        // Bob's link drops: requests for him end (he reports anew when he is back).
        holds.lost(bob)
        #expect(holds.isIdle && holds.pending.isEmpty)
    }

    @Test("open requests are bounded in time and in what passes outside the rate; waiting requests are bounded; a sender that cannot resend gets none")
    func holdBounds() {
        var holds = ResendHolds()
        let members: Set = [ann, bob, carol]
        let now = SessionInstant(nanoseconds: 0)
        _ = holds.joined(ann, resends: true, received: [], members: members, limit: 32, now: now)
        _ = holds.joined(bob, resends: true, received: [AppMessageMark(participant: ann, everyone: 1)],
                         members: members, limit: 32, now: now)
        // Allowance: at most a window's worth of resent messages pass outside the sender's rate.
        for _ in 0..<ResendHolds.maxResent { let passed4 = holds.passes(from: ann, to: bob)
        #expect(passed4) }
        let passed5 = holds.passes(from: ann, to: bob)
        #expect(!passed5)
        // Time: a sender that never answers keeps nothing from the receiver past the timeout.
        #expect(holds.nextDeadline == now + ResendHolds.holdTimeout)
        #expect(holds.expire(now: now + .seconds(1)) == 0)
        #expect(!holds.forwards(from: ann, to: bob))
        #expect(holds.expire(now: now + ResendHolds.holdTimeout) == 1)
        #expect(holds.isIdle && holds.forwards(from: ann, to: bob))

        // Marks beyond the limit, for non-members or for oneself are ignored; a sender that does not resend
        // has its waiting requests dropped.
        var fresh = ResendHolds()
        let many = (1...40).map { AppMessageMark(participant: ParticipantID("p\($0)"), everyone: 1) }
        _ = fresh.joined(bob, resends: true, received: many, members: Set(many.map(\.participant)), limit: 32, now: now)
        #expect(fresh.pending.count == 31)
        _ = fresh.joined(ann, resends: false, received: [], members: [], limit: 32, now: now)
        #expect(fresh.pending.count == 30)
        #expect(fresh.isIdle)

        // Waiting requests in all are bounded.
        var crowded = ResendHolds()
        let senders = (1...40).map { ParticipantID("s\($0)") }
        for receiver in 1...40 {
            _ = crowded.joined(ParticipantID("r\(receiver)"), resends: true,
                               received: senders.map { AppMessageMark(participant: $0, everyone: 1) },
                               members: Set(senders), limit: 40, now: now)
        }
        #expect(crowded.pending.count == ResendHolds.maxPending)
    }

    @Test("a sender back on a new link is asked, for each receiver that stayed, to resend what came after what the relay read from it")
    func senderReturned() {
        var holds = ResendHolds()
        let members: Set = [ann, bob, carol]
        let now = SessionInstant(nanoseconds: 0)
        for who in [ann, bob, carol] { _ = holds.joined(who, resends: true, received: [], members: members, limit: 32, now: now) }
        // Bob resumed before ann came back: his own request stands and is not doubled.
        _ = holds.joined(bob, resends: true, received: [AppMessageMark(participant: ann, everyone: 3)],
                         members: members, limit: 32, now: now)
        holds.lost(ann)
        var requests = holds.joined(ann, resends: true, received: [], members: members, limit: 32, now: now)
        requests += holds.senderReturned(ann, relayed: AppMessageMark(participant: ann, everyone: 40, some: 2),
                                         receivers: members, now: now)
        #expect(requests.map(\.request) == [AppMessageMark(participant: bob, everyone: 3),
                                             AppMessageMark(participant: carol, everyone: 40, some: 2)])
        // While those are open, her new messages wait for her resends; they pass to each receiver alone.
        #expect(!holds.forwards(from: ann, to: carol) && !holds.forwards(from: ann, to: bob))
        let passed = holds.passes(from: ann, to: carol)
        #expect(passed)
        holds.resent(from: ann, to: carol)
        holds.resent(from: ann, to: bob)
        #expect(holds.isIdle)
        // Nothing known of what the relay read (a restarted relay), or a sender that cannot resend: nothing asked.
        #expect(holds.senderReturned(ann, relayed: AppMessageMark(participant: ann), receivers: members, now: now).isEmpty)
        _ = holds.joined(carol, resends: false, received: [], members: members, limit: 32, now: now)
        #expect(holds.senderReturned(carol, relayed: AppMessageMark(participant: carol, everyone: 1),
                                     receivers: members, now: now).isEmpty)
        // Receivers that cannot resend are not held for.
        let toBobOnly = holds.senderReturned(ann, relayed: AppMessageMark(participant: ann, everyone: 41),
                                             receivers: members, now: now)
        #expect(toBobOnly.map(\.request.participant) == [bob])
    }
}
