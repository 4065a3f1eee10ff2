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
    /// The current clock-sync error bound and smallest round trip (ns), nil before the first exchange.
    func clockQuality() -> (errorBound: Int64, roundTrip: Int64)?
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
