import Crypto
import Foundation
import TandemCore

/// A session's journal attachments as the server keeps them: uploads in flight (hashed as they arrive) and
/// committed attachments, kept for the session's life and replayed to late joiners.
struct JournalStore {
    struct Upload {
        var info: AttachmentInfo
        var hasher = SHA256()
        var chunks: [Data] = []
        var received: Int64 = 0
        /// Who was sent `begin` (and so receives the chunks live).
        var liveRecipients: Set<ParticipantID>
    }

    struct Stored {
        var info: AttachmentInfo
        var chunks: [Data]
    }

    /// What to do with a journal message after the store has judged it.
    enum Outcome {
        /// Forward to these participants.
        case forward(JournalMessage, to: Set<ParticipantID>)
        /// Committed: forward the commit to the live recipients and replay the whole attachment to these others.
        case committed(JournalMessage, live: Set<ParticipantID>, replayTo: Set<ParticipantID>, Stored)
        /// Refused: tell the sender (and, if the upload had started, its live recipients) why.
        case failed(JournalMessage, to: Set<ParticipantID>)
    }

    let maxAttachmentSize: Int64
    let maxTotalBytes: Int64
    private(set) var uploads: [String: Upload] = [:]
    private(set) var stored: [Stored] = []
    private var totalBytes: Int64 = 0

    init(maxAttachmentSize: Int64, maxTotalBytes: Int64) {
        self.maxAttachmentSize = maxAttachmentSize
        self.maxTotalBytes = maxTotalBytes
    }

    var committedInfos: [AttachmentInfo] { stored.map(\.info) }

    /// Judges one journal message from `sender`; `others` are the other connected participants.
    mutating func handle(_ message: JournalMessage, from sender: ParticipantID,
                         others: Set<ParticipantID>) -> Outcome {
        switch message {
        case .begin(var info):
            info.owner = sender
            func fail(_ why: String) -> Outcome { .failed(.failed(id: info.id, reason: why), to: [sender]) }
            guard !info.id.isEmpty, info.id.utf8.count <= 128 else { return fail("attachment ids are 1–128 bytes") }
            guard uploads[info.id] == nil, !stored.contains(where: { $0.info.id == info.id }) else {
                return fail("an attachment with id \(info.id) already exists")
            }
            guard info.size >= 0, info.size <= maxAttachmentSize else {
                return fail("attachment of \(info.size) bytes exceeds the limit of \(maxAttachmentSize) bytes")
            }
            guard totalBytes + info.size <= maxTotalBytes else {
                return fail("the session's journal is full (\(maxTotalBytes) bytes); remove an attachment first")
            }
            guard info.sha256.count == 64 else { return fail("sha256 must be 64 lowercase hex digits") }
            totalBytes += info.size
            uploads[info.id] = Upload(info: info, liveRecipients: others)
            return .forward(.begin(info), to: others)

        case .chunk(let id, let offset, let bytes):
            guard var upload = uploads[id], upload.info.owner == sender else {
                return .failed(.failed(id: id, reason: "no attachment upload \(id) in progress from you"), to: [sender])
            }
            guard offset == upload.received, upload.received + Int64(bytes.count) <= upload.info.size else {
                return abort(id, "chunk at offset \(offset) (\(bytes.count) bytes) does not follow byte \(upload.received) of \(upload.info.size)")
            }
            upload.hasher.update(data: bytes)
            upload.chunks.append(bytes)
            upload.received += Int64(bytes.count)
            uploads[id] = upload
            return .forward(message, to: upload.liveRecipients.intersection(others))

        case .commit(let id):
            guard let upload = uploads[id], upload.info.owner == sender else {
                return .failed(.failed(id: id, reason: "no attachment upload \(id) in progress from you"), to: [sender])
            }
            guard upload.received == upload.info.size else {
                return abort(id, "commit after \(upload.received) of \(upload.info.size) bytes")
            }
            let digest = upload.hasher.finalize().map { String(format: "%02x", $0) }.joined()
            guard digest == upload.info.sha256.lowercased() else {
                return abort(id, "SHA-256 mismatch: announced \(upload.info.sha256), received \(digest)")
            }
            uploads[id] = nil
            let entry = Stored(info: upload.info, chunks: upload.chunks)
            stored.append(entry)
            let live = upload.liveRecipients.intersection(others)
            return .committed(message, live: live, replayTo: others.subtracting(upload.liveRecipients), entry)

        case .remove(let id):
            if let index = stored.firstIndex(where: { $0.info.id == id }) {
                guard stored[index].info.owner == sender else {
                    return .failed(.failed(id: id, reason: "only the attachment's owner can remove it"), to: [sender])
                }
                totalBytes -= stored[index].info.size
                stored.remove(at: index)
                return .forward(message, to: others)
            }
            if uploads[id]?.info.owner == sender {
                return abort(id, "removed by its owner before it was complete")
            }
            return .failed(.failed(id: id, reason: "no attachment \(id)"), to: [sender])

        case .failed(let id, let reason):
            guard uploads[id]?.info.owner == sender else { return .forward(message, to: []) }
            return abort(id, reason)
        }
    }

    /// Drops every upload in flight from `participant` (it left).
    mutating func dropUploads(from participant: ParticipantID) -> [(JournalMessage, Set<ParticipantID>)] {
        uploads.values.filter { $0.info.owner == participant }.map { upload in
            uploads[upload.info.id] = nil
            totalBytes -= upload.info.size
            return (.failed(id: upload.info.id, reason: "its sender left before it was complete"), upload.liveRecipients)
        }
    }

    private mutating func abort(_ id: String, _ why: String) -> Outcome {
        guard let upload = uploads.removeValue(forKey: id) else {
            return .failed(.failed(id: id, reason: why), to: [])
        }
        totalBytes -= upload.info.size
        return .failed(.failed(id: id, reason: why), to: upload.liveRecipients.union([upload.info.owner]))
    }
}
