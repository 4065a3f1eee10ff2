import Foundation

/// SHA-256 digests as lowercase hex: how attachments are checked on the wire, certificates pinned in invites and
/// media fingerprinted. The one place that formats a digest; hashing itself is swift-crypto's, where it is needed
/// (`SHA256Hex.digest(_:)` in TandemNet).
package enum SHA256Hex {
    /// Bytes (a finished digest, a pinned fingerprint) in lowercase hex.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
