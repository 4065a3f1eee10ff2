import TandemCrypto
import Foundation
import TandemCore

/// Seals app data (messenger payloads, journal attachments) end to end with a key derived from the invite, each box
/// bound to its place.
///
/// - key = HKDF-SHA256(input key material: UTF-8 of the invite's secret, salt: UTF-8 of the session id,
///   info: UTF-8 of "tandem app data v2"), 32 bytes;
/// - box = nonce (12 random bytes) ‖ AES-256-GCM ciphertext ‖ tag (16 bytes), the associated data being the box's
///   place (`SealedPlace.associatedData(session:)`): a box opens only where it was sealed for.
///
/// The server holds only SHA-256 of the secret (for the handshake), never the secret, so it cannot derive this key.
/// The construction uses nothing WebCrypto lacks (HKDF, AES-GCM with associated data), so a browser can take part;
/// `Tests/Vectors/app-data-v2.json` holds known answers both check. Version 1 (info "… v1", no associated data)
/// derives another key, so a box of a peer of the other version does not open: mixed versions fail loudly.
///
/// Sendable by hand: its stored values, the key and the session id, are immutable after `init`.
public struct AppDataCipher: PayloadCipher, @unchecked Sendable {
    /// The HKDF `info` string.
    public static let info = "tandem app data v2"
    public static let nonceSize = 12
    public static let tagSize = 16

    private let key: SymmetricKey
    /// The session every place is in.
    public let session: String

    /// The cipher every participant of `invite`'s session derives.
    public init(invite: Invite) {
        self.init(secret: invite.secret, session: invite.session)
    }

    public init(secret: String, session: String) {
        self.session = session
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)),
                                     salt: Data(session.utf8), info: Data(Self.info.utf8), outputByteCount: 32)
    }

    public var overhead: Int { Self.nonceSize + Self.tagSize }

    public func seal(_ plaintext: Data, at place: SealedPlace) throws -> Data {
        try seal(plaintext, at: place, nonce: AES.GCM.Nonce())
    }

    /// Seals with a given nonce: for known-answer tests only (a nonce must never repeat under a key).
    func seal(_ plaintext: Data, at place: SealedPlace, nonce: AES.GCM.Nonce) throws -> Data {
        let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce,
                                   authenticating: place.associatedData(session: session))
        // A 12-byte nonce always has a combined form.
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return combined
    }

    public func open(_ box: Data, at place: SealedPlace) throws -> Data {
        try AES.GCM.open(AES.GCM.SealedBox(combined: box), using: key,
                         authenticating: place.associatedData(session: session))
    }

    /// The derived key's bytes, for known-answer tests.
    var keyBytes: [UInt8] { key.withUnsafeBytes { Array($0) } }
}

/// The cipher of a connection that holds only a session's handshake key, not its secret (a relay's Syncplay
/// clients): with no app-data key it seals and opens nothing, so app data neither leaves it (a send throws rather
/// than go out in the clear) nor is read by it.
struct NoAppDataKey: PayloadCipher {
    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "this connection holds only the session's handshake key, not its secret: it cannot seal or open app data (chat, attachments)"
        }
    }

    var overhead: Int { AppDataCipher.nonceSize + AppDataCipher.tagSize }
    func seal(_ plaintext: Data, at place: SealedPlace) throws -> Data { throw Missing() }
    func open(_ box: Data, at place: SealedPlace) throws -> Data { throw Missing() }
}
