import Foundation
import Synchronization

/// Seals a participant's app messages in their place and opens the others' in theirs: the one place a link that
/// seals app data (`SessionLink.payloadCipher`) numbers, seals, opens and orders messages. Keep one for the life of
/// the session object (a reconnect keeps the participant's id, so its numbering goes on).
///
/// Sending: each message is numbered in its lane (`AppMessageLane`, from 1), the number goes on the wire as its
/// `sequence`, and the box is `seal(header ‖ payload)` at `.message(sender, delivery, sequence)`. Seal in the order
/// messages go on the wire.
///
/// Receiving: a box is opened at `.message(source, delivery, sequence)` — `source` as the server stamped it — so a
/// box credited to someone else, or given another number or delivery, does not open; then `AppMessageOrder` admits
/// it or not. Every drop is counted (`drops`).
public final class AppMessageSeal: Sendable {
    /// What became of a received message.
    public enum Opened: Sendable, Hashable {
        /// Admitted: the message with its payload opened (the header taken off).
        case admitted(IncomingAppMessage, missingBefore: UInt64)
        /// Dropped, for the reason counted in `drops`.
        case dropped(Drop)
    }

    public enum Drop: Sendable, Hashable {
        case altered, replayed, reordered, late, malformed

        /// Whether a person should hear of it: everything but unreliable messages the network delivered late.
        public var isTold: Bool { self != .late }
    }

    private struct State {
        var next: [AppMessageLane: UInt64] = [:]
        var order = AppMessageOrder()
        var drops = AppMessageDrops()
        /// This participant's last reliable messages as sealed, for receivers that missed some.
        var window = AppMessageWindow()
    }

    public let cipher: any PayloadCipher
    private let state = Mutex(State())

    /// Where this object's epochs start: random, so that a new object taking a participant's identity back (with
    /// its reconnect token) seals in epochs no earlier object of that participant used.
    private let firstEpoch = UInt32.random(in: .min ... .max)

    public init(cipher: any PayloadCipher) {
        self.cipher = cipher
    }

    /// `message` from `sender`, numbered in its lane and sealed; `epoch` counts the sender's link's reconnects (the
    /// header carries it offset by this object's random start).
    public func seal(_ message: OutgoingAppMessage, from sender: ParticipantID, epoch: UInt32) throws -> OutgoingAppMessage {
        let lane = AppMessageLane(delivery: message.delivery, recipients: message.recipients)
        let header = AppMessageHeader(toEveryone: message.recipients == .all, epoch: firstEpoch &+ epoch)
        return try state.withLock { s -> OutgoingAppMessage in
            let sequence = s.next[lane, default: 1]
            var sealed = message
            sealed.sequence = sequence
            sealed.payload = try cipher.seal(header.bytes + message.payload,
                                             at: .message(sender: sender, delivery: message.delivery, sequence: sequence))
            s.next[lane] = sequence + 1
            s.window.keep(sealed)
            return sealed
        }
    }

    /// The reliable messages sealed here that `receiver` lacks by `mark` (`AppMessageWindow.resend`): the same boxes
    /// and numbers, addressed to it alone.
    public func resend(to receiver: ParticipantID, after mark: AppMessageMark) -> [OutgoingAppMessage] {
        state.withLock { $0.window.resend(to: receiver, after: mark) }
    }

    /// Where this receiver stands with each sender (`AppMessageOrder.marks`).
    public func marks(limit: Int) -> [AppMessageMark] { state.withLock { $0.order.marks(limit: limit) } }

    /// Opens `message` in its place and decides whether it is shown.
    public func open(_ message: IncomingAppMessage) -> Opened {
        let place = SealedPlace.message(sender: message.source, delivery: message.delivery, sequence: message.sequence)
        guard let plaintext = try? cipher.open(message.payload, at: place) else { return count(.altered) }
        guard let (header, payload) = AppMessageHeader.split(plaintext) else { return count(.malformed) }
        let lane: AppMessageLane = message.delivery == .unreliable ? .unreliable : header.toEveryone ? .everyone : .some
        return state.withLock { s -> Opened in
            switch s.order.admit(sender: message.source, lane: lane, sequence: message.sequence, epoch: header.epoch) {
            case .admitted(let missing):
                s.drops.missing += missing
                var opened = message
                opened.payload = payload
                return .admitted(opened, missingBefore: missing)
            case .replayed: s.drops.replayed += 1; return .dropped(.replayed)
            case .reordered: s.drops.reordered += 1; return .dropped(.reordered)
            case .late: s.drops.late += 1; return .dropped(.late)
            }
        }
    }

    /// The receiving link came back after a loss (`AppMessageOrder.resumed()`).
    public func resumed() { state.withLock { $0.order.resumed() } }

    /// What was dropped or found missing so far.
    public var drops: AppMessageDrops { state.withLock { $0.drops } }

    private func count(_ drop: Drop) -> Opened {
        state.withLock { s in
            switch drop {
            case .altered: s.drops.altered += 1
            case .malformed: s.drops.malformed += 1
            case .replayed: s.drops.replayed += 1
            case .reordered: s.drops.reordered += 1
            case .late: s.drops.late += 1
            }
        }
        return .dropped(drop)
    }
}
