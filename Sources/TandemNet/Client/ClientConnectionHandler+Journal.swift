import TandemCrypto
import Foundation
import TandemCore

extension ClientConnectionHandler {
    /// Verifies journal attachments as they arrive; a bad checksum turns the commit into `failed`.
    func checked(_ message: ServerMessage) -> ServerMessage {
        guard case .journal(let journal) = message else { return message }
        switch journal {
        case .begin(let info):
            incoming[info.id] = (SHA256(), info.sha256.lowercased())
        case .chunk(let id, _, let bytes):
            incoming[id]?.hasher.update(data: bytes)
        case .commit(let id):
            guard let entry = incoming.removeValue(forKey: id) else { return message }
            let digest = SHA256Hex.hex(entry.hasher.finalize())
            if digest != entry.sha256 {
                return .journal(.failed(id: id, reason: "SHA-256 mismatch on arrival: expected \(entry.sha256), got \(digest)"))
            }
        case .remove(let id), .failed(let id, _):
            incoming[id] = nil
        case .available, .fetch:
            break
        }
        return message
    }
}
