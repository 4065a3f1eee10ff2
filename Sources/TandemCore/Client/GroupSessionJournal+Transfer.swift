import Foundation
import Synchronization

// Sending, receiving and lazily loading journal attachments.

extension GroupSessionJournal {
    /// The name to show for an attachment in a failure: the plaintext one when it opens.
    static func displayName(_ info: AttachmentInfo, cipher: (any PayloadCipher)?) -> String {
        guard let cipher else { return info.name }
        return (try? cipher.openName(info.name, owner: info.owner, id: info.id)) ?? info.id
    }

    /// Checks complete bytes and opens them when sealed: the plaintext info and bytes, or why they were dropped.
    static func finish(_ done: Incoming, hasher: Hasher?,
                       cipher: (any PayloadCipher)?) -> Result<(AttachmentInfo, Data), FailureText> {
        let name = displayName(done.info, cipher: cipher)
        if let hasher, hasher(done.data) != done.info.sha256 {
            return .failure(FailureText(text: "attachment '\(name)' arrived damaged (checksum mismatch) and was dropped"))
        }
        guard Int64(done.data.count) == done.info.size else {
            return .failure(FailureText(text: "attachment '\(name)' arrived incomplete and was dropped"))
        }
        guard let cipher else { return .success((done.info, done.data)) }
        do {
            let plainName = try cipher.openName(done.info.name, owner: done.info.owner, id: done.info.id)
            let data = try cipher.openRecords(done.data, owner: done.info.owner, id: done.info.id)
            let info = AttachmentInfo(id: done.info.id, owner: done.info.owner, name: plainName,
                                      size: Int64(data.count), sha256: hasher?(data) ?? "")
            return .success((info, data))
        } catch {
            return .failure(FailureText(text: "attachment '\(done.info.id)' could not be opened with this session's "
                + "key in its place (altered, cut, reordered or moved from another attachment on the way, or sealed "
                + "with another key) and was dropped"))
        }
    }

    struct FailureText: Error { var text: String }

    /// An announced attachment as it is listed before loading: the name opened when it can be.
    func announced(_ info: AttachmentInfo) -> AttachmentInfo {
        guard let cipher else { return info }
        var shown = info
        shown.name = (try? cipher.openName(info.name, owner: info.owner, id: info.id)) ?? info.id
        shown.sha256 = ""
        return shown
    }

    func makeAttachment(_ info: AttachmentInfo, data: Data?) -> Attachment {
        Attachment(storage: Storage(info: info, data: data) { [weak self] id in
            guard let self else { throw JournalError.unavailable(id: id, reason: "the journal is gone") }
            return try await self.fetch(id)
        })
    }

    /// Asks the authority for an attachment's bytes (one request per id at a time) and waits for them.
    func fetch(_ id: String) async throws -> Data {
        enum Step { case done(Data), fail(String), request, wait }
        // Whether the bytes are here, the journal is over, or a request must go out.
        func check(_ s: inout State, requesting: Bool) -> Step {
            guard let attachment = s.complete.first(where: { $0.id == id }) else {
                return .fail(s.ended?.message ?? "it is not in the journal")
            }
            if let data = attachment.storage.data.withLock({ $0 }) { return .done(data) }
            if let ended = s.ended { return .fail(ended.message) }
            guard requesting, !s.requested.contains(id) else { return .wait }
            s.requested.insert(id)
            return .request
        }
        switch state.withLock({ check(&$0, requesting: true) }) {
        case .done(let data): return data
        case .fail(let why): throw JournalError.unavailable(id: id, reason: why)
        case .wait: break
        case .request:
            do { try await link.send(.journal(.fetch(id: id))) } catch {
                state.withLock { _ = $0.requested.remove(id) }
                throw JournalError.unavailable(id: id, reason: "the session is over")
            }
        }
        // The answer may already have arrived: the check and the registration happen under one lock.
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            let step = state.withLock { s -> Step in
                let step = check(&s, requesting: false)
                if case .wait = step { s.waiters[id, default: []].append(continuation) }
                return step
            }
            switch step {
            case .done(let data): continuation.resume(returning: data)
            case .fail(let why): continuation.resume(throwing: JournalError.unavailable(id: id, reason: why))
            case .wait, .request: break
            }
        }
    }

    func failWaiters(_ id: String, reason: String) {
        let waiting = state.withLock { s in
            s.requested.remove(id)
            return s.waiters.removeValue(forKey: id) ?? []
        }
        for c in waiting { c.resume(throwing: JournalError.unavailable(id: id, reason: reason)) }
    }

    /// A reconnect's fresh snapshot: forgets attachments removed while the link was down and half-received ones (the
    /// authority replays the rest); returns the new list when it changed.
    func resync(to snapshot: SessionSnapshot) -> [Attachment]? {
        let kept = Set(snapshot.attachments.map(\.id))
        return state.withLock { s -> [Attachment]? in
            s.incoming.removeAll()
            // A lazy link's snapshot lists no attachments; the authority announces them again after it.
            guard !snapshot.attachments.isEmpty || s.complete.allSatisfy(\.isLoaded) else { return nil }
            let before = s.complete.count
            s.complete.removeAll { !kept.contains($0.id) }
            return s.complete.count == before ? nil : s.complete
        }
    }

    /// Applies one journal message; returns the new list when it changed.
    func apply(_ entry: JournalMessage) -> [Attachment]? {
        if case .commit(let id) = entry {
            // Hashing and opening a large attachment happen outside the lock.
            guard let done = state.withLock({ s -> Incoming? in s.incoming.removeValue(forKey: id) }) else { return nil }
            let outcome = Self.finish(done, hasher: hasher, cipher: cipher)
            var resumed: [CheckedContinuation<Data, any Error>] = []
            var failedLoad: String?
            let list = state.withLock { s -> [Attachment]? in
                let existing = s.complete.first(where: { $0.id == id })
                switch outcome {
                case .success(let (info, data)):
                    resumed = s.waiters.removeValue(forKey: id) ?? []
                    s.requested.remove(id)
                    if let existing {
                        // Bytes a load asked for (or a reconnect's replay of one already here).
                        existing.storage.info.withLock { $0 = info }
                        existing.storage.data.withLock { if $0 == nil { $0 = data } }
                        return nil
                    }
                    s.complete.append(makeAttachment(info, data: data))
                    return s.complete
                case .failure(let failure):
                    s.failures.append(failure.text)
                    if existing != nil { failedLoad = failure.text }
                    return nil
                }
            }
            if case .success(let (_, data)) = outcome { for c in resumed { c.resume(returning: data) } }
            if let failedLoad { failWaiters(id, reason: failedLoad) }
            return list
        }
        var failedLoad: (String, String)?
        let list = state.withLock { s -> [Attachment]? in
            switch entry {
            case .begin(let info):
                s.incoming[info.id] = Incoming(info: info)
                return nil
            case .chunk(let id, _, let bytes):
                // Only the figures are read: a copy of the buffer would make every append copy it all.
                guard let have = s.incoming[id]?.data.count, let size = s.incoming[id]?.info.size,
                      Int64(have + bytes.count) <= size else {
                    return nil  // Unknown, or more than announced (kept out: the commit's checks fail it).
                }
                s.incoming[id]?.data.append(bytes)
                return nil
            case .commit, .fetch:
                return nil  // Commit is handled above; fetch is not sent to peers.
            case .available(let info):
                guard !s.complete.contains(where: { $0.id == info.id }) else { return nil }
                s.complete.append(makeAttachment(announced(info), data: nil))
                return s.complete
            case .remove(let id):
                s.incoming[id] = nil
                if s.waiters[id] != nil { failedLoad = (id, "it was removed") }
                let before = s.complete.count
                s.complete.removeAll { $0.id == id }
                return s.complete.count == before ? nil : s.complete
            case .failed(let id, let reason):
                var reason = reason
                if let info = s.incoming.removeValue(forKey: id)?.info, cipher != nil {
                    // The authority names the attachment by what it saw: the sealed name.
                    reason = reason.replacingOccurrences(of: info.name, with: Self.displayName(info, cipher: cipher))
                }
                if s.waiters[id] != nil { failedLoad = (id, reason) }
                s.failures.append(reason)
                return nil
            }
        }
        if let failed = failedLoad { failWaiters(failed.0, reason: failed.1) }
        return list
    }

    /// Shares `data` labelled `label` (sealed with the rest when the link seals).
    func add(_ data: Data, label name: String) async throws -> Attachment {
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
            wire = try cipher.sealRecords(data, pieceSize: chunkSize, owner: info.owner, id: id)
            guard wire.count <= maxSize else { throw JournalError.tooLarge(size: wire.count, limit: maxSize) }
            announced = AttachmentInfo(id: id, owner: info.owner,
                                       name: try cipher.sealName(name, owner: info.owner, id: id),
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
        let attachment = makeAttachment(info, data: data)
        // The authority does not send our own attachments back to us.
        let list = state.withLock { s -> [Attachment] in
            s.complete.append(attachment)
            return s.complete
        }
        updates.send(list)
        return attachment
    }
}
