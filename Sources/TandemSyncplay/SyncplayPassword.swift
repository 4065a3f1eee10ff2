import TandemCrypto
import Foundation

/// The password Syncplay clients give to join a Tandem session: derived from the session's handshake key
/// (`SHA-256(secret)`, the key a Tandem server holds), so that a relay, which never has the secret, can check it
/// too, while whoever knows the password can derive neither the key (to join as a full Tandem peer) nor the secret
/// (to read the session's sealed chat):
///
///     password = first 24 hex digits of HMAC-SHA256(key: handshake key, message: UTF-8("tandem syncplay password v1"))
///
/// 96 bits; hex, so that it never starts with `-` and needs no quoting on a command line.
public enum SyncplayPassword {
    /// The HMAC message.
    public static let label = "tandem syncplay password v1"
    /// Hex digits kept.
    public static let length = 24

    /// The password of the session whose handshake key (32 bytes) is `handshakeKey`.
    public static func derive(handshakeKey: [UInt8]) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(label.utf8), using: SymmetricKey(data: handshakeKey))
        return String(code.map { String(format: "%02x", $0) }.joined().prefix(length))
    }

    /// Whether `presentedMD5` (md5 hex of the password, as Syncplay's hello carries it) is md5 of this session's
    /// password; compared in constant time.
    public static func matches(_ presentedMD5: String?, handshakeKey: [UInt8]) -> Bool {
        SyncplayServerState.passwordMatches(presentedMD5, secret: derive(handshakeKey: handshakeKey))
    }
}
