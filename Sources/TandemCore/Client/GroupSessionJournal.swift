import Foundation
import Synchronization

/// Larger attachments (files, images) shared with the group, as SharePlay's journal; late joiners receive the
/// existing ones. It receives while its owner runs `run()`; it starts no task of its own.
///
/// Bytes travel in chunks after a `begin` that announces size and SHA-256. TandemCore has no hash function of its
/// own: give the journal a `hasher` (TandemNet uses swift-crypto's SHA-256) and it computes the digest of what it
/// sends and checks what it receives; without one it trusts the transport, which verifies checksums itself.
///
/// When the link has a `payloadCipher`, an attachment travels sealed: its bytes as records of `chunkSize`-byte
/// plaintext pieces (`PayloadCipher.sealRecords`), its name as a sealed box in base64, and `begin` announces the
/// size and SHA-256 of the sealed stream, which is what the transport checks. Receivers open it after checking the
/// digest; `Attachment.info` then holds the plaintext name and size and the SHA-256 of the plaintext. An attachment
/// that does not open is dropped on that receiver, with a line in `failures`.
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
    private let cipher: (any PayloadCipher)?
    /// Largest attachment in bytes.
    public let maxSize: Int
    /// Bytes per chunk on the wire.
    public let chunkSize: Int
    private let state = Mutex(State())
    private let updates = FanOut<[Attachment]>(initial: [], replay: .latest)
    /// The link's messages, subscribed to on creation so that the replay of existing attachments is not missed;
    /// `run()` consumes them.
    private let upstream: Mutex<AsyncStream<ServerMessage>?>

    /// A journal over `link`. Create it early (right after joining), so the replay of existing attachments is seen,
    /// and `run()` it to receive attachments. Without a `hasher`, the link's own (`SessionLink.attachmentHasher`)
    /// is used.
    public init(link: any SessionLink, hasher: Hasher? = nil, maxSize: Int = 100_000_000, chunkSize: Int = 64 * 1024) {
        self.link = link
        self.hasher = hasher ?? link.attachmentHasher
        cipher = link.payloadCipher
        self.maxSize = maxSize
        self.chunkSize = chunkSize
        upstream = Mutex(link.serverMessages())
    }

    /// Receives what the others share and remove (checking and opening each attachment as it completes) until the
    /// link closes or the calling task is cancelled; then `attachmentUpdates` streams end. Run it for as long as
    /// the journal is in use, in a task its owner owns. Call it once.
    public func run() async {
        guard let upstream = upstream.withLock({ u in defer { u = nil }; return u }) else { return }
        for await message in upstream {
            if case .welcome(let snapshot) = message, let list = resync(to: snapshot) {
                updates.send(list)
            }
            guard case .journal(let entry) = message else { continue }
            if let list = apply(entry) { updates.send(list) }
        }
        updates.finish()
    }

    public convenience init<A>(session: GroupSession<A>, hasher: Hasher? = nil) {
        self.init(link: session.link, hasher: hasher)
    }

    /// The complete attachments, in announcement order.
    public var attachments: [Attachment] { state.withLock { $0.complete } }
    /// The attachments now, then after every change.
    public var attachmentUpdates: AsyncStream<[Attachment]> { updates.subscribe() }
    /// Why incoming attachments were dropped (bad checksum, failed upload), in arrival order.
    public var failures: [String] { state.withLock { $0.failures } }

    /// The name to show for an attachment in a failure: the plaintext one when it opens.
    private static func displayName(_ info: AttachmentInfo, cipher: (any PayloadCipher)?) -> String {
        guard let cipher else { return info.name }
        return (try? cipher.openName(info.name)) ?? info.id
    }

    /// Checks a complete attachment and opens it when sealed; the attachment, or why it was dropped.
    private static func finish(_ done: Incoming, hasher: Hasher?,
                               cipher: (any PayloadCipher)?) -> Result<Attachment, FailureText> {
        let name = displayName(done.info, cipher: cipher)
        if let hasher, hasher(done.data) != done.info.sha256 {
            return .failure(FailureText(text: "attachment '\(name)' arrived damaged (checksum mismatch) and was dropped"))
        }
        guard Int64(done.data.count) == done.info.size else {
            return .failure(FailureText(text: "attachment '\(name)' arrived incomplete and was dropped"))
        }
        guard let cipher else { return .success(Attachment(info: done.info, data: done.data)) }
        do {
            let plainName = try cipher.openName(done.info.name)
            let data = try cipher.openRecords(done.data)
            let info = AttachmentInfo(id: done.info.id, owner: done.info.owner, name: plainName,
                                      size: Int64(data.count), sha256: hasher?(data) ?? "")
            return .success(Attachment(info: info, data: data))
        } catch {
            return .failure(FailureText(text: "attachment '\(done.info.id)' could not be opened with this session's "
                + "key (altered, or sealed with another key) and was dropped"))
        }
    }

    private struct FailureText: Error { var text: String }

    /// A reconnect's fresh snapshot: forgets attachments removed while the link was down and half-received ones (the
    /// authority replays the rest); returns the new list when it changed.
    private func resync(to snapshot: SessionSnapshot) -> [Attachment]? {
        let kept = Set(snapshot.attachments.map(\.id))
        return state.withLock { s -> [Attachment]? in
            s.incoming.removeAll()
            let before = s.complete.count
            s.complete.removeAll { !kept.contains($0.id) }
            return s.complete.count == before ? nil : s.complete
        }
    }

    /// Applies one journal message; returns the new list when it changed.
    private func apply(_ entry: JournalMessage) -> [Attachment]? {
        if case .commit(let id) = entry {
            // Hashing and opening a large attachment happen outside the lock.
            // After a reconnect the authority replays every attachment: one already here stays where it is.
            guard let done = state.withLock({ s -> Incoming? in
                let done = s.incoming.removeValue(forKey: id)
                return s.complete.contains(where: { $0.id == id }) ? nil : done
            }) else { return nil }
            let outcome = Self.finish(done, hasher: hasher, cipher: cipher)
            return state.withLock { s -> [Attachment]? in
                switch outcome {
                case .success(let attachment):
                    s.complete.append(attachment)
                    return s.complete
                case .failure(let failure):
                    s.failures.append(failure.text)
                    return nil
                }
            }
        }
        return state.withLock { s -> [Attachment]? in
            switch entry {
            case .begin(let info):
                s.incoming[info.id] = Incoming(info: info)
                return nil
            case .chunk(let id, _, let bytes):
                s.incoming[id]?.data.append(bytes)
                return nil
            case .commit:
                return nil  // Handled above.
            case .remove(let id):
                s.incoming[id] = nil
                let before = s.complete.count
                s.complete.removeAll { $0.id == id }
                return s.complete.count == before ? nil : s.complete
            case .failed(let id, let reason):
                var reason = reason
                if let info = s.incoming.removeValue(forKey: id)?.info, cipher != nil {
                    // The authority names the attachment by what it saw: the sealed name.
                    reason = reason.replacingOccurrences(of: info.name, with: Self.displayName(info, cipher: cipher))
                }
                s.failures.append(reason)
                return nil
            }
        }
    }

    /// Shares `data` under `name` with everyone, now and later joiners; returns the attachment once sent.
    @discardableResult
    public func add(_ data: Data, name: String) async throws -> Attachment {
        guard data.count <= maxSize else { throw JournalError.tooLarge(size: data.count, limit: maxSize) }
        let serial = state.withLock { s -> Int in
            defer { s.nextID += 1 }
            return s.nextID
        }
        let id = "\(link.localParticipantID.rawValue)-\(serial)-\(UInt64.random(in: 0...UInt64.max))"
        let info = AttachmentInfo(id: id, owner: link.localParticipantID, name: name, size: Int64(data.count),
                                  sha256: hasher?(data) ?? "")
        // What travels: the attachment as it is, or sealed (see the type's notes).
        let wire: Data
        let announced: AttachmentInfo
        if let cipher {
            wire = try cipher.sealRecords(data, pieceSize: chunkSize)
            guard wire.count <= maxSize else { throw JournalError.tooLarge(size: wire.count, limit: maxSize) }
            announced = AttachmentInfo(id: id, owner: info.owner, name: try cipher.sealName(name),
                                       size: Int64(wire.count), sha256: hasher?(wire) ?? "")
        } else {
            wire = data
            announced = info
        }
        do {
            try await link.send(.journal(.begin(announced)))
            var offset = 0
            while offset < wire.count {
                let end = min(wire.count, offset + chunkSize)
                try await link.send(.journal(.chunk(id: id, offset: Int64(offset), bytes: wire.subdata(in: offset..<end))))
                offset = end
            }
            try await link.send(.journal(.commit(id: id)))
        } catch let reason as InvalidationReason {
            throw JournalError.sessionInvalidated(reason)
        }
        let attachment = Attachment(info: info, data: data)
        // The authority does not send our own attachments back to us.
        let list = state.withLock { s -> [Attachment] in
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
        if let list = apply(.remove(id: attachment.id)) { updates.send(list) }
    }
}
