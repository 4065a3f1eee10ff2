import Foundation

/// A peer's live connection to its session authority, as the client-side objects (GroupSession, messenger,
/// journal, PlaybackCoordinator) see it. TandemNet implements it over TCP; TandemTesting over a simulated network.
///
/// Each call to `serverMessages()` returns a new stream that receives every later `ServerMessage`, so several
/// parts of a peer can listen independently. A link that reconnects after a lost connection keeps its streams
/// and delivers the new `.welcome` snapshot on them; consumers resynchronise from it.
public protocol SessionLink: AnyObject, Sendable {
    /// This peer's identity in the session.
    var localParticipantID: ParticipantID { get }
    /// Sends a message to the authority. Throws `InvalidationReason` once the link is gone.
    func send(_ message: ClientMessage) async throws
    /// A new subscription to everything the authority sends from now on.
    func serverMessages() -> AsyncStream<ServerMessage>
    /// The current clock-sync estimate (local monotonic → session time), nil before the first exchange.
    func clockMapping() -> ClockMapping?
    /// The current clock-sync error bound and smallest round trip, nil before the first exchange.
    func clockQuality() -> (errorBound: TimeSpan, roundTrip: TimeSpan)?
    /// How much later than the least-delayed one the clock probes' answers arrived, at about the 99th percentile of
    /// their jitter (the spread of the way from the authority to this peer), nil while unknown: the authority
    /// schedules starts over long links with it (`AuthorityConfiguration.marginFromDelaySpread`). A default
    /// implementation returns nil.
    func returnDelaySpread() -> TimeSpan?
    /// The snapshot received when joining (or when the link last reconnected).
    var welcome: SessionSnapshot { get }
    /// Leaves (others go on) and closes the link.
    func close() async
    /// The hash this transport checks attachments against on the way (lowercase hex SHA-256), when it checks
    /// them; a `GroupSessionJournal` on the link uses it unless given its own.
    var attachmentHasher: (@Sendable (Data) -> String)? { get }
    /// Seals app data (messenger payloads, journal attachments) end to end, so the authority routes bytes it
    /// cannot read; nil sends them as they are (in-memory links in tests).
    var payloadCipher: (any PayloadCipher)? { get }
    /// Sends an app message from this participant. A link that seals app data numbers it in its lane and seals it
    /// in its place (`AppMessageSeal`), in the order messages go on the wire; `message.sequence` is then its own.
    func sendAppMessage(_ message: OutgoingAppMessage) async throws
    /// A new subscription to the others' app messages from now on, as they are shown: a link that seals app data
    /// delivers only those that opened in their place and came in order (payloads opened), and drops the rest.
    func appMessages() -> AsyncStream<IncomingAppMessage>
    /// The participants this peer reaches without the authority, with the one-way delay measured on each way; a
    /// default implementation has none.
    func directPaths() -> [DirectPath]
    /// Sends a proposed start straight to `participants` (those of `directPaths()`), unreliably; a default
    /// implementation sends nothing.
    func sendDirect(_ proposal: DirectProposal, to participants: [ParticipantID])
    /// A new subscription to the proposals other participants send straight to this peer; a default implementation
    /// ends at once.
    func directProposals() -> AsyncStream<DirectProposal>
}

extension SessionLink {
    public func returnDelaySpread() -> TimeSpan? { nil }
    public var attachmentHasher: (@Sendable (Data) -> String)? { nil }
    public var payloadCipher: (any PayloadCipher)? { nil }
    public func directPaths() -> [DirectPath] { [] }
    public func sendDirect(_ proposal: DirectProposal, to participants: [ParticipantID]) {}
    public func directProposals() -> AsyncStream<DirectProposal> { AsyncStream { $0.finish() } }
    /// Sends it as it is.
    public func sendAppMessage(_ message: OutgoingAppMessage) async throws { try await send(.appMessage(message)) }
    /// The app messages among `serverMessages()`, as they come.
    public func appMessages() -> AsyncStream<IncomingAppMessage> {
        AsyncStream.pulling(serverMessages()) { message in
            if case .appMessage(let app) = message { app } else { nil }
        }
    }
}

/// End-to-end sealing of app data with a key every participant derives from the invite's secret (the server never
/// has it), each box bound to its place (`SealedPlace`) by associated data. TandemNet implements it with
/// AES-256-GCM; see docs/SECURITY.md.
public protocol PayloadCipher: Sendable {
    /// Bytes `seal` adds to every sealed box (nonce and tag).
    var overhead: Int { get }
    /// Seals `plaintext` for `place`; every call uses a fresh nonce.
    func seal(_ plaintext: Data, at place: SealedPlace) throws -> Data
    /// Opens a box made by `seal` with the same key for the same place; throws when it was not, or was altered.
    func open(_ box: Data, at place: SealedPlace) throws -> Data
}

/// How far a sealed app message may exceed the plaintext limit: the authority accepts payloads up to
/// `maxAppMessageSize + PayloadSealing.allowance` bytes, which covers a cipher's nonce and tag (28 for AES-GCM).
public enum PayloadSealing {
    public static let allowance = 64
}

/// Why sealed app data could not be opened.
public enum PayloadCipherError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A sealed attachment's record framing is broken (a length runs past the end, or there is no record).
    case malformedRecords
    /// A sealed name is not base64.
    case malformedName

    public var description: String {
        switch self {
        case .malformedRecords: return "the sealed attachment's records are malformed or cut short"
        case .malformedName: return "the sealed attachment name is not base64"
        }
    }
}

extension PayloadCipher {
    /// Seals attachment `id` of `owner` as a sequence of self-delimiting records, one per `pieceSize` bytes of
    /// plaintext: each record is `length u32 BE ‖ box`, record `i`'s box sealed at `.attachmentRecord(owner, id, i,
    /// final)`, `final` on the last. An empty attachment is one empty final record, so a stream cut to nothing is
    /// told from it. The records do not depend on how the stream is later cut into chunks.
    public func sealRecords(_ plaintext: Data, pieceSize: Int, owner: ParticipantID, id: String) throws -> Data {
        let pieceSize = max(1, pieceSize)
        var out = Data()
        let pieces = max(1, (plaintext.count + pieceSize - 1) / pieceSize)
        out.reserveCapacity(plaintext.count + pieces * (4 + overhead))
        for index in 0..<pieces {
            let start = plaintext.startIndex + index * pieceSize
            let end = min(plaintext.endIndex, start + pieceSize)
            let place = SealedPlace.attachmentRecord(owner: owner, id: id, index: UInt64(index), final: index == pieces - 1)
            let box = try seal(plaintext.subdata(in: start..<end), at: place)
            let length = UInt32(box.count)
            out.append(contentsOf: [UInt8(length >> 24), UInt8((length >> 16) & 0xff),
                                    UInt8((length >> 8) & 0xff), UInt8(length & 0xff)])
            out.append(box)
        }
        return out
    }

    /// Opens every record made by `sealRecords` for the same attachment and joins the plaintext pieces; throws when
    /// a record is cut short, out of its place (moved, shuffled, from another attachment), or the last is missing.
    public func openRecords(_ sealed: Data, owner: ParticipantID, id: String) throws -> Data {
        var out = Data()
        var index = sealed.startIndex
        var number: UInt64 = 0
        guard !sealed.isEmpty else { throw PayloadCipherError.malformedRecords }
        while index < sealed.endIndex {
            guard sealed.endIndex - index >= 4 else { throw PayloadCipherError.malformedRecords }
            let length = sealed[index..<index + 4].reduce(0) { ($0 << 8) | Int($1) }
            index += 4
            guard length <= sealed.endIndex - index else { throw PayloadCipherError.malformedRecords }
            let place = SealedPlace.attachmentRecord(owner: owner, id: id, index: number,
                                                     final: index + length == sealed.endIndex)
            out.append(try open(sealed.subdata(in: index..<index + length), at: place))
            index += length
            number += 1
        }
        return out
    }

    /// Seals the name of attachment `id` of `owner`: base64 of its box at `.attachmentName(owner, id)`.
    public func sealName(_ name: String, owner: ParticipantID, id: String) throws -> String {
        // Bounded before sealing: the authority would truncate a longer sealed name, which then could not open.
        let bounded = TextBounds.truncated(name, maxBytes: TextBounds.maxPlainAttachmentNameBytes)
        return try seal(Data(bounded.utf8), at: .attachmentName(owner: owner, id: id)).base64EncodedString()
    }

    /// Opens a name sealed by `sealName` for the same attachment.
    public func openName(_ sealed: String, owner: ParticipantID, id: String) throws -> String {
        guard let box = Data(base64Encoded: sealed) else { throw PayloadCipherError.malformedName }
        return String(decoding: try open(box, at: .attachmentName(owner: owner, id: id)), as: UTF8.self)
    }
}
