import Foundation

/// A peer's live connection to its session authority, as the client-side objects (GroupSession, messenger,
/// journal, PlaybackCoordinator) see it. TandemNet implements it over TCP; TandemTesting over a simulated network.
///
/// Each call to `serverMessages()` returns a new stream that receives every later `ServerMessage`, so several
/// parts of a peer can listen independently.
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
    /// The snapshot received when joining.
    var welcome: SessionSnapshot { get }
    /// Leaves (others go on) and closes the link.
    func close() async
    /// The hash this transport checks attachments against on the way (lowercase hex SHA-256), when it checks
    /// them; a `GroupSessionJournal` on the link uses it unless given its own.
    var attachmentHasher: (@Sendable (Data) -> String)? { get }
}

extension SessionLink {
    public var attachmentHasher: (@Sendable (Data) -> String)? { nil }
}
