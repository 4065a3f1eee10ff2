import Foundation

/// Where a sealed box of app data belongs: its associated data binds it there, so a box moved anywhere else (another
/// sender, another place in order, another attachment or record) no longer opens. The relay, which routes boxes it
/// cannot read, can then replay, reorder or re-attribute nothing without the receiver noticing.
///
/// The associated data (docs/PROTOCOL.md, "Sealing app data"), integers big-endian, `str` = `length u32 ‖ UTF-8`:
///
/// ```
/// message:           0x01 ‖ str(session) ‖ str(sender) ‖ delivery u8 (0 reliable, 1 unreliable) ‖ sequence u64
/// attachment name:   0x02 ‖ str(session) ‖ str(owner) ‖ str(attachment id)
/// attachment record: 0x03 ‖ str(session) ‖ str(owner) ‖ str(attachment id) ‖ index u64 ‖ final u8 (1 on the last)
/// ```
public enum SealedPlace: Sendable, Hashable {
    /// An app message from `sender`, numbered `sequence` in its lane (`AppMessageLane`).
    case message(sender: ParticipantID, delivery: MessageDelivery, sequence: UInt64)
    /// The name of attachment `id` of `owner`.
    case attachmentName(owner: ParticipantID, id: String)
    /// Record `index` (from 0) of attachment `id` of `owner`; `final` on its last record only.
    case attachmentRecord(owner: ParticipantID, id: String, index: UInt64, final: Bool)

    /// The associated data of a box at this place in `session`.
    public func associatedData(session: String) -> Data {
        var out = Data()
        func string(_ text: String) {
            let bytes = Data(text.utf8)
            integer(UInt32(bytes.count))
            out.append(bytes)
        }
        func integer<I: FixedWidthInteger>(_ value: I) {
            withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
        }
        switch self {
        case .message(let sender, let delivery, let sequence):
            out.append(1)
            string(session)
            string(sender.rawValue)
            out.append(delivery == .reliable ? 0 : 1)
            integer(sequence)
        case .attachmentName(let owner, let id):
            out.append(2)
            string(session)
            string(owner.rawValue)
            string(id)
        case .attachmentRecord(let owner, let id, let index, let final):
            out.append(3)
            string(session)
            string(owner.rawValue)
            string(id)
            integer(index)
            out.append(final ? 1 : 0)
        }
        return out
    }
}

/// The three numbering lanes of a sender's app messages. Each has its own sequence (from 1), because what a
/// receiver may miss honestly differs: nothing of `everyone` (apart from across a reconnect), messages to others of
/// `some`, and anything of `unreliable`.
public enum AppMessageLane: UInt8, Sendable, Hashable, CaseIterable {
    /// Reliable, to everyone (`Recipients.all`).
    case everyone = 0
    /// Reliable, to some (`Recipients.only`).
    case some = 1
    /// Unreliable, to anyone.
    case unreliable = 2

    public init(delivery: MessageDelivery, recipients: Recipients) {
        switch (delivery, recipients) {
        case (.unreliable, _): self = .unreliable
        case (.reliable, .all): self = .everyone
        case (.reliable, .only): self = .some
        }
    }
}

/// What a sealed app message carries in front of the messenger's payload, inside the box (so the relay can neither
/// read nor change it): `audience u8` (0 everyone, 1 some) ‖ `epoch u32 BE` (new whenever the sender's link is
/// established anew, so that receivers start a new baseline for it and never go back to an old one).
public struct AppMessageHeader: Sendable, Hashable {
    public static let size = 5
    /// Whether the message went to everyone (`Recipients.all`).
    public var toEveryone: Bool
    public var epoch: UInt32

    public init(toEveryone: Bool, epoch: UInt32) {
        self.toEveryone = toEveryone
        self.epoch = epoch
    }

    public var bytes: Data {
        var out = Data([toEveryone ? 0 : 1])
        withUnsafeBytes(of: epoch.bigEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// The header in front of `plaintext` and the payload after it; nil when it is not one.
    public static func split(_ plaintext: Data) -> (AppMessageHeader, Data)? {
        guard plaintext.count >= size else { return nil }
        let start = plaintext.startIndex
        guard plaintext[start] <= 1 else { return nil }
        let epoch = plaintext[start + 1..<start + 5].reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
        return (AppMessageHeader(toEveryone: plaintext[start] == 0, epoch: epoch), Data(plaintext.dropFirst(size)))
    }
}
