import Foundation

/// A relay's part in resending reliable app messages (docs/PROTOCOL.md, "Resending"): the requests it passes from a
/// resuming receiver to each sender, and what it does with a sender's messages for that receiver while the request
/// is open. A pure value; the caller sends what it returns.
///
/// While a request is open (from when it goes to the sender until the sender's `resent`), the sender's new reliable
/// messages for that receiver are not forwarded to it: the sender wrote them before it answered, so its resend
/// carries them, in order, after the ones the receiver lacked (forwarding them too would show them first, or twice).
/// So nothing is held in the relay.
///
/// Bounded: requests wait for their sender (reconnecting, or not yet back after a relay restart) at most
/// `maxPending` in all; an open request lasts at most `holdTimeout` (then messages flow again, and the receiver may
/// find a gap, as without resends), and lets at most `maxResent` resent messages pass outside the sender's rate.
public struct ResendHolds: Sendable {
    public struct Pair: Hashable, Sendable {
        public var sender: ParticipantID
        public var receiver: ParticipantID
        public init(sender: ParticipantID, receiver: ParticipantID) {
            self.sender = sender
            self.receiver = receiver
        }
    }

    struct Hold: Sendable {
        /// The request it answers (asked again if the sender comes back before answering).
        var request: AppMessageMark
        /// Resent messages the sender may still pass outside its message rate.
        var allowance: Int
        var deadline: SessionInstant
    }

    /// A sender's window (`AppMessageWindow.maxMessages`): the most resent messages one request passes.
    public static let maxResent = AppMessageWindow.maxMessages
    public static let holdTimeout: TimeSpan = .seconds(5)
    /// Requests waiting for their sender, in all (a session of 32 has at most 32 × 31 pairs).
    public static let maxPending = 1024

    /// Requests waiting for their sender, by pair: the receiver's mark.
    public private(set) var pending: [Pair: AppMessageMark] = [:]
    var holds: [Pair: Hold] = [:]
    /// Connected participants that joined with `resends`.
    public private(set) var resenders: Set<ParticipantID> = []

    public init() {}

    /// Whether no request is open (the relay's fast path).
    public var isIdle: Bool { holds.isEmpty }

    /// Whether a request to `sender` is open.
    public func isHolding(from sender: ParticipantID) -> Bool {
        !holds.isEmpty && holds.keys.contains { $0.sender == sender }
    }

    /// `participant` joined (or came back): whether it resends, and where it stands with each sender (`received`,
    /// at most `limit` looked at; marks for itself or for non-`members` ignored). Returns the requests to send now:
    /// to each sender, the receiver's mark. Each opens a hold.
    public mutating func joined(_ participant: ParticipantID, resends: Bool, received: [AppMessageMark],
                                members: Set<ParticipantID>, limit: Int, now: SessionInstant)
        -> [(sender: ParticipantID, request: AppMessageMark)] {
        if resends { resenders.insert(participant) } else { resenders.remove(participant) }
        // Its earlier link's requests are moot: its new marks say where it stands now.
        for pair in holds.keys where pair.receiver == participant { holds[pair] = nil }
        for mark in received.prefix(max(0, limit)) where mark.participant != participant && members.contains(mark.participant) {
            let pair = Pair(sender: mark.participant, receiver: participant)
            guard pending[pair] != nil || pending.count < Self.maxPending else { continue }
            pending[pair] = AppMessageMark(participant: participant, everyone: mark.everyone, some: mark.some)
        }
        if !resends {
            // It cannot answer: what waited for it is dropped.
            for pair in pending.keys where pair.sender == participant { pending[pair] = nil }
            for pair in holds.keys where pair.sender == participant { holds[pair] = nil }
        }
        var requests: [(sender: ParticipantID, request: AppMessageMark)] = []
        // A sender back before it answered (the request may have died with its old link) is asked again.
        for (pair, hold) in holds where pair.sender == participant {
            holds[pair]?.allowance = Self.maxResent
            holds[pair]?.deadline = now + Self.holdTimeout
            requests.append((pair.sender, hold.request))
        }
        for (pair, mark) in pending where resenders.contains(pair.sender) {
            pending[pair] = nil
            holds[pair] = Hold(request: mark, allowance: Self.maxResent, deadline: now + Self.holdTimeout)
            requests.append((pair.sender, mark))
        }
        return requests.sorted { ($0.sender, $0.request.participant) < ($1.sender, $1.request.participant) }
    }

    /// `sender` came back on a new link (it resends) while `receivers` stayed connected. Its last reliable messages
    /// may have died with its old link on the way to the relay, where no receiver's mark can show it (nobody else
    /// resumed). `relayed` is the relay's own record of what it read from the sender (the highest number in each
    /// lane; nil: unknown, nothing asked there): for each receiver that resends and has no request open or waiting
    /// with the sender, a request at those numbers. Returns the requests to send now; each opens a hold.
    public mutating func senderReturned(_ sender: ParticipantID, relayed: AppMessageMark, receivers: Set<ParticipantID>,
                                        now: SessionInstant) -> [(sender: ParticipantID, request: AppMessageMark)] {
        guard resenders.contains(sender), relayed.everyone != nil || relayed.some != nil else { return [] }
        var requests: [(sender: ParticipantID, request: AppMessageMark)] = []
        for receiver in receivers.sorted() where receiver != sender && resenders.contains(receiver) {
            let pair = Pair(sender: sender, receiver: receiver)
            guard holds[pair] == nil, pending[pair] == nil, holds.count < Self.maxPending else { continue }
            let request = AppMessageMark(participant: receiver, everyone: relayed.everyone, some: relayed.some)
            holds[pair] = Hold(request: request, allowance: Self.maxResent, deadline: now + Self.holdTimeout)
            requests.append((sender, request))
        }
        return requests
    }

    /// `participant`'s link is gone: requests towards it end (it reports anew when it is back); its own open
    /// requests wait for it again (asked when it is back).
    public mutating func lost(_ participant: ParticipantID) {
        resenders.remove(participant)
        for (pair, hold) in holds {
            if pair.receiver == participant {
                holds[pair] = nil
            } else if pair.sender == participant {
                holds[pair] = nil
                pending[pair] = hold.request
            }
        }
    }

    /// Whether a reliable message from `sender` to `receiver` alone is a resent one (a request is open, within its
    /// allowance): it goes straight on, outside the sender's message rate.
    public mutating func passes(from sender: ParticipantID, to receiver: ParticipantID) -> Bool {
        let pair = Pair(sender: sender, receiver: receiver)
        guard let allowance = holds[pair]?.allowance, allowance > 0 else { return false }
        holds[pair]?.allowance = allowance - 1
        return true
    }

    /// Whether a new message from `sender` goes to `receiver` now; false while a request is open (its resend will
    /// carry it).
    public func forwards(from sender: ParticipantID, to receiver: ParticipantID) -> Bool {
        holds[Pair(sender: sender, receiver: receiver)] == nil
    }

    /// `sender` has resent to `receiver` (`resent(to:)`): the request is closed.
    public mutating func resent(from sender: ParticipantID, to receiver: ParticipantID) {
        holds[Pair(sender: sender, receiver: receiver)] = nil
    }

    /// Requests open past their deadline are closed (a sender that never answers); returns how many.
    @discardableResult
    public mutating func expire(now: SessionInstant) -> Int {
        let due = holds.filter { $0.value.deadline <= now }.keys
        for pair in due { holds[pair] = nil }
        return due.count
    }

    /// The earliest deadline of an open request.
    public var nextDeadline: SessionInstant? { holds.values.map(\.deadline).min() }
}
