import Foundation
import Synchronization

/// Larger attachments (files, images) shared with the group, as SharePlay's journal; late joiners receive the
/// existing ones.
///
/// Bytes travel in chunks after a `begin` that announces size and SHA-256. TandemCore has no hash function of its
/// own: give the journal a `hasher` (TandemNet uses swift-crypto's SHA-256) and it computes the digest of what it
/// sends and checks what it receives; without one it trusts the transport, which verifies checksums itself.
public final class GroupSessionJournal: Sendable {
    /// One complete attachment.
    public struct Attachment: Sendable, Hashable, Identifiable {
        public let info: AttachmentInfo
        public let data: Data
        public var id: String { info.id }
    }

    /// Why an attachment could not be added.
    public enum JournalError: Error, Sendable, Hashable, CustomStringConvertible {
        case tooLarge(size: Int, limit: Int)
        case sessionInvalidated(InvalidationReason)
        public var description: String {
            switch self {
            case .tooLarge(let size, let limit):
                return "attachment of \(size) bytes is larger than the \(limit)-byte limit — share a link to it instead"
            case .sessionInvalidated(let reason): return "the session is over: \(reason.message)"
            }
        }
    }

    /// Lowercase hex SHA-256 of some bytes.
    public typealias Hasher = @Sendable (Data) -> String

    private struct Incoming {
        var info: AttachmentInfo
        var data = Data()
    }

    private struct State {
        var complete: [Attachment] = []
        var incoming: [String: Incoming] = [:]
        var failures: [String] = []
        var nextID = 1
    }

    private let link: any SessionLink
    private let hasher: Hasher?
    /// Largest attachment in bytes.
    public let maxSize: Int
    /// Bytes per chunk on the wire.
    public let chunkSize: Int
    /// Shared with the receiving task, which outlives no journal but must not capture it.
    private final class Locked: Sendable {
        let mutex = Mutex(State())
    }

    private let locked = Locked()
    private let updates: Broadcaster<[Attachment]>
    private let pump: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// A journal over `link`. Subscribe early (right after joining), so the replay of existing attachments is seen.
    /// Without a `hasher`, the link's own (`SessionLink.attachmentHasher`) is used.
    public init(link: any SessionLink, hasher: Hasher? = nil, maxSize: Int = 100_000_000, chunkSize: Int = 64 * 1024) {
        self.link = link
        let hasher = hasher ?? link.attachmentHasher
        self.hasher = hasher
        self.maxSize = maxSize
        self.chunkSize = chunkSize
        let updates = Broadcaster<[Attachment]>(initial: [], replaysCurrent: true)
        self.updates = updates
        let upstream = link.serverMessages()
        let task = Task { [locked, hasher] in
            for await message in upstream {
                if case .welcome(let snapshot) = message, let list = Self.resync(to: snapshot, locked) {
                    updates.send(list)
                }
                guard case .journal(let entry) = message else { continue }
                if let list = Self.apply(entry, to: locked, hasher: hasher) { updates.send(list) }
            }
            updates.finish()
        }
        pump.withLock { $0 = task }
    }

    public convenience init<A>(session: GroupSession<A>, hasher: Hasher? = nil) {
        self.init(link: session.link, hasher: hasher)
    }

    deinit { pump.withLock { $0?.cancel() } }

    /// The complete attachments, in announcement order.
    public var attachments: [Attachment] { locked.mutex.withLock { $0.complete } }
    /// The attachments now, then after every change.
    public var attachmentUpdates: AsyncStream<[Attachment]> { updates.subscribe() }
    /// Why incoming attachments were dropped (bad checksum, failed upload), in arrival order.
    public var failures: [String] { locked.mutex.withLock { $0.failures } }

    /// A reconnect's fresh snapshot: forgets attachments removed while the link was down and half-received ones (the
    /// authority replays the rest); returns the new list when it changed.
    private static func resync(to snapshot: SessionSnapshot, _ locked: Locked) -> [Attachment]? {
        let kept = Set(snapshot.attachments.map(\.id))
        return locked.mutex.withLock { s -> [Attachment]? in
            s.incoming.removeAll()
            let before = s.complete.count
            s.complete.removeAll { !kept.contains($0.id) }
            return s.complete.count == before ? nil : s.complete
        }
    }

    /// Applies one journal message; returns the new list when it changed.
    private static func apply(_ entry: JournalMessage, to locked: Locked, hasher: Hasher?) -> [Attachment]? {
        locked.mutex.withLock { s -> [Attachment]? in
            switch entry {
            case .begin(let info):
                s.incoming[info.id] = Incoming(info: info)
                return nil
            case .chunk(let id, _, let bytes):
                s.incoming[id]?.data.append(bytes)
                return nil
            case .commit(let id):
                guard let done = s.incoming.removeValue(forKey: id) else { return nil }
                if let hasher, hasher(done.data) != done.info.sha256 {
                    s.failures.append("attachment '\(done.info.name)' arrived damaged (checksum mismatch) and was dropped")
                    return nil
                }
                guard Int64(done.data.count) == done.info.size else {
                    s.failures.append("attachment '\(done.info.name)' arrived incomplete and was dropped")
                    return nil
                }
                // After a reconnect the authority replays every attachment: one already here stays where it is.
                if s.complete.contains(where: { $0.id == id }) { return nil }
                s.complete.append(Attachment(info: done.info, data: done.data))
                return s.complete
            case .remove(let id):
                s.incoming[id] = nil
                let before = s.complete.count
                s.complete.removeAll { $0.id == id }
                return s.complete.count == before ? nil : s.complete
            case .failed(let id, let reason):
                s.incoming[id] = nil
                s.failures.append(reason)
                return nil
            }
        }
    }

    /// Shares `data` under `name` with everyone, now and later joiners; returns the attachment once sent.
    @discardableResult
    public func add(_ data: Data, name: String) async throws -> Attachment {
        guard data.count <= maxSize else { throw JournalError.tooLarge(size: data.count, limit: maxSize) }
        let serial = locked.mutex.withLock { s -> Int in
            defer { s.nextID += 1 }
            return s.nextID
        }
        let id = "\(link.localParticipantID.rawValue)-\(serial)-\(UInt64.random(in: 0...UInt64.max))"
        let info = AttachmentInfo(id: id, owner: link.localParticipantID, name: name, size: Int64(data.count),
                                  sha256: hasher?(data) ?? "")
        do {
            try await link.send(.journal(.begin(info)))
            var offset = 0
            while offset < data.count {
                let end = min(data.count, offset + chunkSize)
                try await link.send(.journal(.chunk(id: id, offset: Int64(offset), bytes: data.subdata(in: offset..<end))))
                offset = end
            }
            try await link.send(.journal(.commit(id: id)))
        } catch let reason as InvalidationReason {
            throw JournalError.sessionInvalidated(reason)
        }
        let attachment = Attachment(info: info, data: data)
        // The authority does not send our own attachments back to us.
        let list = locked.mutex.withLock { s -> [Attachment] in
            s.complete.append(attachment)
            return s.complete
        }
        updates.send(list)
        return attachment
    }

    /// Removes an attachment for everyone.
    public func remove(_ attachment: Attachment) async throws {
        do { try await link.send(.journal(.remove(id: attachment.id))) } catch let reason as InvalidationReason {
            throw JournalError.sessionInvalidated(reason)
        }
        if let list = Self.apply(.remove(id: attachment.id), to: locked, hasher: nil) { updates.send(list) }
    }
}
