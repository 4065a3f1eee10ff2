import Foundation

/// Where a receiver stands with one sender's reliable app messages: the highest number it has in the `everyone` and
/// in the `some` lane (nil: none in that lane). A resuming receiver reports one per sender (`join.received`); the
/// server passes it on to the sender as a resend request naming the receiver instead (`ServerMessage.resend`).
public struct AppMessageMark: Hashable, Sendable, Codable {
    /// The sender (in a `join`'s `received`) or the receiver (in a resend request).
    public var participant: ParticipantID
    public var everyone: UInt64?
    public var some: UInt64?

    public init(participant: ParticipantID, everyone: UInt64? = nil, some: UInt64? = nil) {
        self.participant = participant
        self.everyone = everyone
        self.some = some
    }
}

/// A sender's last reliable app messages, sealed as they went on the wire, kept so that a receiver that missed some
/// (across its own reconnect, the sender's, or a relay restart) gets them again: the same boxes, the same numbers,
/// to it alone. Bounded by count and bytes (`maxMessages`, `maxBytes`): the oldest go first, and a receiver that
/// lost more than the window holds finds a gap there as before. A pure value.
public struct AppMessageWindow: Sendable {
    public struct Entry: Sendable, Hashable {
        public var lane: AppMessageLane
        /// The message as it went on the wire (its sealed payload and its number).
        public var message: OutgoingAppMessage
    }

    /// The most messages kept.
    public static let maxMessages = 512
    /// The most payload bytes kept (sealed).
    public static let maxBytes = 4 * 1024 * 1024

    public let maxMessages: Int
    public let maxBytes: Int
    public private(set) var entries: [Entry] = []
    public private(set) var bytes = 0
    private var start = 0

    public init(maxMessages: Int = Self.maxMessages, maxBytes: Int = Self.maxBytes) {
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
    }

    /// The messages kept, oldest first.
    public var kept: ArraySlice<Entry> { entries[start...] }

    /// Keeps `message` (sealed, numbered) if it is reliable; drops the oldest beyond the bounds. A message larger
    /// than the whole window is not kept (nor is anything before it).
    public mutating func keep(_ message: OutgoingAppMessage) {
        guard message.delivery == .reliable else { return }
        let lane = AppMessageLane(delivery: message.delivery, recipients: message.recipients)
        entries.append(Entry(lane: lane, message: message))
        bytes += message.payload.count
        while entries.count - start > maxMessages || bytes > maxBytes {
            bytes -= entries[start].message.payload.count
            start += 1
        }
        // Compacts now and then, so the array does not grow with what it dropped.
        if start >= maxMessages {
            entries.removeFirst(start)
            start = 0
        }
    }

    /// What `receiver` should have and does not, by `mark` (`everyone`/`some`: the highest it has in that lane;
    /// nil: it has none there, and is sent none): the kept messages after those numbers that were for it, in the
    /// order they were first sent, each addressed to it alone.
    public func resend(to receiver: ParticipantID, after mark: AppMessageMark) -> [OutgoingAppMessage] {
        kept.compactMap { entry -> OutgoingAppMessage? in
            switch entry.lane {
            case .everyone:
                guard let after = mark.everyone, entry.message.sequence > after else { return nil }
            case .some:
                guard let after = mark.some, entry.message.sequence > after,
                      case .only(let chosen) = entry.message.recipients, chosen.contains(receiver) else { return nil }
            case .unreliable:
                return nil
            }
            var again = entry.message
            again.recipients = .only([receiver])
            return again
        }
    }
}
