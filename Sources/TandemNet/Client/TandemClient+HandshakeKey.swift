import TandemCrypto
import Foundation
import TandemCore

/// A session's handshake key, `SHA-256(UTF-8(secret))`: what its server holds and checks the `authProof` against
/// (PROTOCOL.md). It lets its holder join the session, not read its app data, which is sealed with a key derived
/// from the secret itself.
public struct HandshakeKey: Sendable {
    /// The key's 32 bytes.
    public let bytes: [UInt8]

    public init(secret: String) { self.init(SessionAuth.key(forSecret: secret)) }

    init(_ key: SymmetricKey) { bytes = key.withUnsafeBytes { Array($0) } }

    /// A random key, which no session has (to check a password against when a room is unknown, in the same time).
    public static func random() -> HandshakeKey { HandshakeKey(SymmetricKey(size: .bits256)) }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }
}

extension TandemClient {
    /// Connects to `server.session` on `server`'s host and port (TLS and pin as it says; its secret is not used)
    /// with the session's handshake key instead of the secret: what a relay holds for each of its sessions
    /// (`SessionServer.handshakeKey(ofSession:)`), so that it can join a participant it speaks for (a Syncplay client
    /// on `tandem serve --syncplay-port`).
    ///
    /// Such a connection has no app-data key: its `payloadCipher` seals and opens nothing, so it can take part in
    /// the timeline, readiness and suspensions but neither sends nor reads chat or attachments. It never creates a
    /// session.
    public static func connect(to server: Invite, handshakeKey: HandshakeKey, name: String,
                               options: Options = Options()) async throws(TandemClientError) -> TandemClientConnection {
        var invite = server
        invite.secret = ""
        var options = options
        options.handshakeKey = handshakeKey
        options.createSession = false
        return try await connect(invite: invite, name: name, options: options)
    }
}

extension Invite {
    /// The session's handshake key, `SHA-256(UTF-8(secret))`.
    public var handshakeKey: HandshakeKey { HandshakeKey(secret: secret) }
}
