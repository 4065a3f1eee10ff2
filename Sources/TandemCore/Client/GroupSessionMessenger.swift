import Foundation

/// Sends app messages to the other participants and receives theirs, like SharePlay's messenger.
///
/// Codable values travel as JSON tagged with their type name, so `messages(of:)` yields only values of that type;
/// raw `Data` travels as is. `.reliable` messages arrive in send order per sender at every participant active at
/// send time; `.unreliable` ones may be dropped. A message never comes back to its sender. Size and rate limits are
/// enforced here, before anything is sent, and the messages numbered (the link passes them on as they are); the
/// authority enforces its own limits again.
///
/// The link seals what it sends and opens what it delivers (`SessionLink.sendAppMessage`, `appMessages()`): on a
/// link that seals app data the authority relays bytes it cannot read, and a message that does not open in its
/// place, or comes twice or out of order, never reaches a subscriber (the link counts it: see
/// `TandemClientConnection.appDataDrops`); the session goes on.
public final class GroupSessionMessenger: Sendable {
    /// Why a message was not sent; each says what to do instead.
    public enum MessengerError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The encoded message is larger than `limit` bytes.
        case messageTooLarge(size: Int, limit: Int)
        /// An `.unreliable` message is larger than one datagram carries (`MessageDelivery.maxUnreliableSize`).
        case unreliableMessageTooLarge(size: Int, limit: Int)
        /// More messages than the per-sender limit allows; try again after `retryAfter`.
        case rateLimited(retryAfter: TimeSpan)
        /// The value could not be encoded.
        case encodingFailed(String)
        /// The session is over.
        case sessionInvalidated(InvalidationReason)

        public var description: String {
            switch self {
            case .messageTooLarge(let size, let limit):
                return "message of \(size) bytes is larger than the \(limit)-byte limit — send it as a journal attachment"
            case .unreliableMessageTooLarge(let size, let limit):
                return "unreliable message of \(size) bytes is larger than the \(limit) bytes one datagram carries — "
                    + "use a .reliable messenger for it"
            case .rateLimited(let after):
                return String(format: "too many messages — wait %.0f ms and send less often", after.milliseconds)
            case .encodingFailed(let why): return "the message could not be encoded: \(why)"
            case .sessionInvalidated(let reason): return "the session is over: \(reason.message)"
            }
        }
    }

    /// Where a message came from.
    public struct MessageContext: Sendable, Hashable {
        /// The sender, as the authority stamped it.
        public let source: ParticipantID
        public let delivery: MessageDelivery
    }

    /// Limits checked before sending.
    public struct Limits: Sendable, Hashable {
        /// Largest payload in bytes (256 KiB, as SharePlay).
        public var maxMessageSize = 256 * 1024
        /// Sustained messages per second.
        public var messagesPerSecond = 100
        /// Messages allowed in a burst above the sustained rate.
        public var burst = 200
        public init() {}
    }

    private struct Wrapper: Codable {
        var type: String
        var body: Data
    }

    private static let rawTag: UInt8 = 0
    private static let typedTag: UInt8 = 1

    private let link: any SessionLink
    public let deliveryMode: MessageDelivery
    public let limits: Limits
    /// Where this messenger's sends are checked against `limits` and numbered; the link trusts it.
    private let gate: AppMessageGate

    /// A messenger over `link`. `clock` paces the rate limit.
    public init(link: any SessionLink, deliveryMode: MessageDelivery = .reliable, limits: Limits = .init(),
                clock: any MonotonicClock = SystemMonotonicClock()) {
        self.link = link
        self.deliveryMode = deliveryMode
        self.limits = limits
        gate = AppMessageGate(maxSize: limits.maxMessageSize, messagesPerSecond: limits.messagesPerSecond,
                              burst: limits.burst, clock: clock)
    }

    /// A messenger for a session's link.
    public convenience init<A>(session: GroupSession<A>, deliveryMode: MessageDelivery = .reliable) {
        self.init(link: session.link, deliveryMode: deliveryMode)
    }

    static func typeName<M>(_ type: M.Type) -> String { String(reflecting: type) }

    /// Sends a Codable value.
    public func send<Message: Encodable & Sendable>(_ message: Message, to recipients: Recipients = .all) async throws {
        let body: Data
        do {
            body = try JSONEncoder().encode(message)
            let wrapped = try JSONEncoder().encode(Wrapper(type: Self.typeName(Message.self), body: body))
            try await sendPayload(Data([Self.typedTag]) + wrapped, to: recipients)
        } catch let error as EncodingError {
            throw MessengerError.encodingFailed(String(describing: error))
        }
    }

    /// Sends raw bytes.
    public func send(_ data: Data, to recipients: Recipients = .all) async throws {
        try await sendPayload(Data([Self.rawTag]) + data, to: recipients)
    }

    private func sendPayload(_ payload: Data, to recipients: Recipients) async throws {
        // The limits apply to the plaintext payload (the messenger's one-byte tag and, for Codable values, their
        // JSON wrapper included); the authority allows sealed payloads `PayloadSealing.allowance` bytes more.
        if deliveryMode == .unreliable, payload.count > MessageDelivery.maxUnreliableSize {
            throw MessengerError.unreliableMessageTooLarge(size: payload.count, limit: MessageDelivery.maxUnreliableSize)
        }
        let sequence: UInt64
        do { sequence = try gate.admit(size: payload.count) } catch {
            switch error {
            case .tooLarge(let size, let limit): throw MessengerError.messageTooLarge(size: size, limit: limit)
            case .rateLimited(let retryAfter): throw MessengerError.rateLimited(retryAfter: retryAfter)
            }
        }
        do {
            try await link.sendAppMessage(OutgoingAppMessage(recipients: recipients, delivery: deliveryMode,
                                                             sequence: sequence, payload: payload))
        } catch let reason as InvalidationReason {
            throw MessengerError.sessionInvalidated(reason)
        }
    }

    /// Every later message of type `Message` from the others, with its context.
    public func messages<Message: Decodable & Sendable>(of type: Message.Type) -> AsyncStream<(Message, MessageContext)> {
        let name = Self.typeName(type)
        return incoming { payload in
            guard payload.first == Self.typedTag,
                  let wrapper = try? JSONDecoder().decode(Wrapper.self, from: payload.dropFirst()),
                  wrapper.type == name
            else { return nil }
            return try? JSONDecoder().decode(Message.self, from: wrapper.body)
        }
    }

    /// Every later raw-bytes message from the others, with its context.
    public func messages(of type: Data.Type) -> AsyncStream<(Data, MessageContext)> {
        incoming { payload in
            guard payload.first == Self.rawTag else { return nil }
            return Data(payload.dropFirst())
        }
    }

    private func incoming<Value: Sendable>(_ decode: @escaping @Sendable (Data) -> Value?)
        -> AsyncStream<(Value, MessageContext)> {
        // Pulled by the subscriber, in its own task: nothing runs while it does not listen, or after it stops.
        AsyncStream.pulling(link.appMessages()) { m -> (Value, MessageContext)? in
            guard let value = decode(m.payload) else { return nil }
            return (value, MessageContext(source: m.source, delivery: m.delivery))
        }
    }
}
