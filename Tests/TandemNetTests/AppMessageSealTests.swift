import Foundation
import TandemCore
import Testing
@testable import TandemNet

@Suite("App messages sealed in their place")
struct AppMessageSealTests {
    let ann = ParticipantID("p1"), bob = ParticipantID("p2"), carol = ParticipantID("p3")

    @Test("the order admits each message once and in order; gaps count only where nothing explains them")
    func order() {
        var order = AppMessageOrder()
        // A late joiner takes the first number it sees as the baseline.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 41, epoch: 0) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 42, epoch: 0) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 42, epoch: 0) == .replayed)
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 41, epoch: 0) == .replayed)
        // A swap: 44 first leaves 43 missing; 43 after it is reordered and not shown.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 44, epoch: 0) == .admitted(missing: 1))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 43, epoch: 0) == .reordered)
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 43, epoch: 0) == .reordered)
        // The sender's link was established anew (another epoch): a new baseline, what the dead one lost explained.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 50, epoch: 7) == .admitted(missing: 0))
        // This receiver reconnected: the next gap of every sender is explained, once.
        order.resumed()
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 60, epoch: 7) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 62, epoch: 7) == .admitted(missing: 1))
        // The left-behind epoch never comes back, whatever its numbers.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 2, epoch: 0) == .replayed)
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 100, epoch: 0) == .replayed)
        // Far older than the window: taken for a replay.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 130, epoch: 7) == .admitted(missing: 67))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 62, epoch: 7) == .replayed)
        // A new connection object taking ann's identity back with its token counts from 1 again, in an epoch of
        // its own (random): its messages are shown, not taken for replays of the old object's first ones.
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 1, epoch: 3_000_000_001) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 2, epoch: 3_000_000_001) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .everyone, sequence: 131, epoch: 7) == .replayed)

        // Lanes and senders are apart: gaps in `some` and `unreliable` are expected.
        #expect(order.admit(sender: ann, lane: .some, sequence: 1, epoch: 1) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .some, sequence: 5, epoch: 1) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .some, sequence: 3, epoch: 1) == .reordered)
        #expect(order.admit(sender: ann, lane: .unreliable, sequence: 10, epoch: 1) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .unreliable, sequence: 20, epoch: 1) == .admitted(missing: 0))
        #expect(order.admit(sender: ann, lane: .unreliable, sequence: 15, epoch: 1) == .late)
        #expect(order.admit(sender: ann, lane: .unreliable, sequence: 20, epoch: 1) == .replayed)
        #expect(order.admit(sender: bob, lane: .everyone, sequence: 1, epoch: 0) == .admitted(missing: 0))
    }

    @Test("a sealed message opens at its receiver; a replay, a swap and a re-attribution are dropped and counted")
    func sealAndOpen() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let sender = AppMessageSeal(cipher: cipher), receiver = AppMessageSeal(cipher: cipher)
        func outgoing(_ text: String, to recipients: Recipients = .all,
                      _ delivery: MessageDelivery = .reliable) throws -> OutgoingAppMessage {
            try sender.seal(OutgoingAppMessage(recipients: recipients, delivery: delivery, sequence: 999,
                                               payload: Data(text.utf8)), from: ann, epoch: 0)
        }
        func delivered(_ m: OutgoingAppMessage, from source: ParticipantID? = nil) -> IncomingAppMessage {
            IncomingAppMessage(source: source ?? ann, delivery: m.delivery, sequence: m.sequence, payload: m.payload)
        }
        func shown(_ opened: AppMessageSeal.Opened) -> String? {
            if case .admitted(let m, _) = opened { String(decoding: m.payload, as: UTF8.self) } else { nil }
        }
        let one = try outgoing("one"), two = try outgoing("two"), three = try outgoing("three")
        // Each lane numbers from 1; the messenger's own number is not used.
        #expect([one.sequence, two.sequence, three.sequence] == [1, 2, 3])
        #expect(try outgoing("direct", to: .only([bob])).sequence == 1)
        #expect(try outgoing("ping", .unreliable).sequence == 1)
        #expect(one.payload.count == 3 + AppMessageHeader.size + cipher.overhead)

        #expect(shown(receiver.open(delivered(one))) == "one")
        #expect(receiver.open(delivered(one)) == .dropped(.replayed))
        #expect(receiver.open(delivered(three)) != .dropped(.altered))  // two and three swapped by the relay
        #expect(receiver.open(delivered(two)) == .dropped(.reordered))
        // Credited to carol, or given another number or delivery: it does not open.
        let four = try outgoing("four")
        #expect(receiver.open(delivered(four, from: carol)) == .dropped(.altered))
        var renumbered = delivered(four)
        renumbered.sequence = 9
        #expect(receiver.open(renumbered) == .dropped(.altered))
        var redelivered = delivered(four)
        redelivered.delivery = .unreliable
        #expect(receiver.open(redelivered) == .dropped(.altered))
        #expect(shown(receiver.open(delivered(four))) == "four")
        let drops = receiver.drops
        #expect(drops.altered == 3 && drops.replayed == 1 && drops.reordered == 1 && drops.missing == 1)
        #expect(drops.anyAltered)
        #expect(sender.drops == AppMessageDrops())
    }
}
