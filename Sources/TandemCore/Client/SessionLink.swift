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
}

extension SessionLink {
    public var attachmentHasher: (@Sendable (Data) -> String)? { nil }
    public var payloadCipher: (any PayloadCipher)? { nil }
}

/// End-to-end sealing of app data with a key every participant derives from the invite's secret (the server never
/// has it). TandemNet implements it with AES-256-GCM; see docs/SECURITY.md.
public protocol PayloadCipher: Sendable {
    /// Bytes `seal` adds to every sealed box (nonce and tag).
    var overhead: Int { get }
    /// Seals `plaintext`; every call uses a fresh nonce.
    func seal(_ plaintext: Data) throws -> Data
    /// Opens a box made by `seal` with the same key; throws when it was not, or was altered.
    func open(_ box: Data) throws -> Data
}

/// How far a sealed app message may exceed the plaintext limit: the authority accepts payloads up to
/// `maxAppMessageSize + PayloadSealing.allowance` bytes, which covers a cipher's nonce and tag (28 for AES-GCM).
public enum PayloadSealing {
    public static let allowance = 64
}

/// Why sealed app data could not be opened.
public enum PayloadCipherError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A sealed attachment's record framing is broken (a length runs past the end).
    case malformedRecords
    /// A sealed name is not base64.
    case malformedName

    public var description: String {
        switch self {
        case .malformedRecords: return "the sealed attachment's records are malformed"
        case .malformedName: return "the sealed attachment name is not base64"
        }
    }
}

extension PayloadCipher {
    /// Seals an attachment as a sequence of self-delimiting records, one per `pieceSize` bytes of plaintext:
    /// each record is `length u32 BE ‖ box`, `box` being `seal(piece)`. An empty attachment has no records.
    /// The records do not depend on how the stream is later cut into chunks.
    public func sealRecords(_ plaintext: Data, pieceSize: Int) throws -> Data {
        let pieceSize = max(1, pieceSize)
        var out = Data()
        let pieces = (plaintext.count + pieceSize - 1) / pieceSize
        out.reserveCapacity(plaintext.count + pieces * (4 + overhead))
        var offset = plaintext.startIndex
        while offset < plaintext.endIndex {
            let end = min(plaintext.endIndex, offset + pieceSize)
            let box = try seal(plaintext.subdata(in: offset..<end))
            let length = UInt32(box.count)
            out.append(contentsOf: [UInt8(length >> 24), UInt8((length >> 16) & 0xff),
                                    UInt8((length >> 8) & 0xff), UInt8(length & 0xff)])
            out.append(box)
            offset = end
        }
        return out
    }

    /// Opens every record made by `sealRecords` and joins the plaintext pieces; throws when a record is cut
    /// short or a box does not open.
    public func openRecords(_ sealed: Data) throws -> Data {
        var out = Data()
        var index = sealed.startIndex
        while index < sealed.endIndex {
            guard sealed.endIndex - index >= 4 else { throw PayloadCipherError.malformedRecords }
            let length = sealed[index..<index + 4].reduce(0) { ($0 << 8) | Int($1) }
            index += 4
            guard length <= sealed.endIndex - index else { throw PayloadCipherError.malformedRecords }
            out.append(try open(sealed.subdata(in: index..<index + length)))
            index += length
        }
        return out
    }

    /// Seals an attachment's name: base64 of `seal(UTF-8 of the name)`.
    public func sealName(_ name: String) throws -> String {
        // Bounded before sealing: the authority would truncate a longer sealed name, which then could not open.
        let bounded = TextBounds.truncated(name, maxBytes: TextBounds.maxPlainAttachmentNameBytes)
        return try seal(Data(bounded.utf8)).base64EncodedString()
    }

    /// Opens a name sealed by `sealName`.
    public func openName(_ sealed: String) throws -> String {
        guard let box = Data(base64Encoded: sealed) else { throw PayloadCipherError.malformedName }
        return String(decoding: try open(box), as: UTF8.self)
    }
}
