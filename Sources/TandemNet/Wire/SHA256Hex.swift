import Crypto
import Foundation

/// SHA-256 as lowercase hex: how attachments are checked on the wire and certificates pinned in invites. The one
/// place that formats a digest (media fingerprints have their own, in TandemMedia).
package enum SHA256Hex {
    /// The SHA-256 of `data` in hex.
    package static func digest(_ data: Data) -> String { hex(SHA256.hash(data: data)) }

    /// Bytes (a finished digest, a pinned fingerprint) in lowercase hex.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
