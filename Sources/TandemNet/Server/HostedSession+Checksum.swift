import TandemCrypto
import TandemCore

/// Checksums of attachments as they are uploaded through the session.
extension HostedSession {
    struct Upload {
        var owner: ParticipantID
        var expected: String
        var hasher = SHA256()
    }

    /// Hashes uploads as their chunks pass; a commit whose SHA-256 does not match becomes `failed`, which the
    /// authority turns into a failure for everyone.
    func checkChecksum(_ message: JournalMessage, from participant: ParticipantID) -> JournalMessage {
        switch message {
        case .begin(let info):
            if uploads[info.id] == nil { uploads[info.id] = Upload(owner: participant, expected: info.sha256.lowercased()) }
        case .chunk(let id, _, let bytes):
            if uploads[id]?.owner == participant { uploads[id]?.hasher.update(data: bytes) }
        case .commit(let id):
            guard let upload = uploads[id], upload.owner == participant else { return message }
            uploads[id] = nil
            let digest = SHA256Hex.hex(upload.hasher.finalize())
            if digest != upload.expected {
                return .failed(id: id, reason: "SHA-256 mismatch: announced \(upload.expected), received \(digest)")
            }
        case .remove(let id), .failed(let id, _):
            if uploads[id]?.owner == participant { uploads[id] = nil }
        case .available, .fetch:
            break
        }
        return message
    }
}
