import Foundation

// App message fan-out and the journal.

extension SessionAuthority {
    // MARK: App messages

    /// What becomes of an app message: delivered to these recipients, refused with a reason for its sender, or
    /// ignored (the sender is unknown or gone, or the session has ended).
    public enum AppMessageRelay: Sendable, Hashable {
        case deliver(IncomingAppMessage, to: [ParticipantID])
        case refuse(Refusal)
        case ignore
    }

    /// The relay's path for its most frequent message: the checks of `receive(.appMessage(_:), …)` (the sender has
    /// joined, size and per-sender rate limits, recipients), with one answer for all recipients rather than an
    /// action — and a copy of the message — per recipient. The message's source is stamped here.
    public mutating func relayAppMessage(_ message: OutgoingAppMessage, from id: ParticipantID,
                                         now: SessionInstant) -> AppMessageRelay {
        switch admitAppMessage(payloadSize: message.payload.count, delivery: message.delivery,
                               recipients: message.recipients, from: id, now: now) {
        case .deliver(let recipients):
            let incoming = IncomingAppMessage(source: id, delivery: message.delivery, sequence: message.sequence,
                                              payload: message.payload)
            return .deliver(incoming, to: recipients)
        case .refuse(let reason): return .refuse(reason)
        case .ignore: return .ignore
        }
    }

    /// `admitAppMessage`'s answer: `relayAppMessage`'s without the message.
    public enum AppMessageAdmission: Sendable, Hashable {
        case deliver(to: [ParticipantID])
        case refuse(Refusal)
        case ignore
    }

    /// Whether an app message may go out, and to whom, when its payload is not at hand (a relay that forwards the
    /// payload's bytes as they came, without decoding them): what `relayAppMessage` decides, from the payload's
    /// size, its delivery and its recipients. Takes one of the sender's message tokens as that does.
    public mutating func admitAppMessage(payloadSize: Int, delivery: MessageDelivery, recipients: Recipients,
                                         from id: ParticipantID, now: SessionInstant) -> AppMessageAdmission {
        // The member is read in place (an inout access; a read would copy it), through one look-up: a member is a
        // large value, and this runs for every message.
        guard endReason == nil, let index = members.index(forKey: id) else { return .ignore }
        let (connected, joined) = Self.presence(&members.values[index])
        guard connected else { return .ignore }
        guard joined else { return .refuse(Refusal.joinFirst.requesting(.appMessage)) }
        guard payloadSize <= configuration.maxAppMessageSize + PayloadSealing.allowance else {
            return .refuse(Refusal(.tooLarge, request: .appMessage, "message of \(AuthorityText.bytes(Int64(payloadSize))) is larger than "
                           + "the \(AuthorityText.bytes(Int64(configuration.maxAppMessageSize))) limit — "
                           + "send it as a journal attachment instead"))
        }
        // Over TCP (the fallback when UDP is blocked) an unreliable message is still held to what one datagram
        // carries, so an app cannot come to rely on more than the datagram path delivers.
        let unreliableLimit = MessageDelivery.maxUnreliableSize + PayloadSealing.allowance
        guard delivery != .unreliable || payloadSize <= unreliableLimit else {
            return .refuse(Refusal(.tooLarge, request: .appMessage, "an unreliable message of \(AuthorityText.bytes(Int64(payloadSize))) "
                           + "is larger than one datagram carries (\(MessageDelivery.maxUnreliableSize) bytes "
                           + "before sealing) — send it reliably"))
        }
        guard takeMessageToken(at: index, now: now) else {
            return .refuse(Refusal(.rateLimited, request: .appMessage, "too many messages: the limit is "
                           + "\(configuration.appMessagesPerSecond) per second (bursts of \(configuration.appMessageBurst)) "
                           + "— send less often"))
        }
        if case .only(let chosen) = recipients, chosen.count > configuration.maxParticipants {
            return .refuse(Refusal(.limit, request: .appMessage, "a message for \(chosen.count) recipients; a session "
                           + "has at most \(configuration.maxParticipants) participants"))
        }
        assert(connectedCache == connectedIDs, "the connected members' cache missed a change of membership")
        var chosenRecipients: [ParticipantID] = []
        chosenRecipients.reserveCapacity(connectedCache.count)
        switch recipients {
        case .all:
            for other in connectedCache where other != id { chosenRecipients.append(other) }
        case .only(let chosen):
            for other in connectedCache where other != id && chosen.contains(other) { chosenRecipients.append(other) }
        }
        return .deliver(to: chosenRecipients)
    }

    /// Every member, connected or within its reconnect grace (those a resend request may wait for).
    public var memberIDs: Set<ParticipantID> { Set(members.keys) }

    private static func presence(_ member: inout Member) -> (connected: Bool, joined: Bool) {
        (member.isConnected, member.hasJoined)
    }

    /// `relayAppMessage` as actions, for `receive`.
    mutating func relay(_ message: OutgoingAppMessage, from id: ParticipantID, now: SessionInstant) -> [Action] {
        switch relayAppMessage(message, from: id, now: now) {
        case .deliver(let incoming, let recipients): return recipients.map { .send(.appMessage(incoming), to: $0) }
        case .refuse(let refusal): return [.send(.refused(refusal), to: id)]
        case .ignore: return []
        }
    }

    mutating func takeMessageToken(for id: ParticipantID, now: SessionInstant) -> Bool {
        // In place: a member is a large value, and this runs for every app message.
        guard let index = members.index(forKey: id) else { return false }
        return takeMessageToken(at: index, now: now)
    }

    mutating func takeMessageToken(at index: [ParticipantID: Member].Index, now: SessionInstant) -> Bool {
        let capacity = Double(max(1, configuration.appMessageBurst))
        let rate = Double(configuration.appMessagesPerSecond)
        return Self.takeToken(&members.values[index], capacity: capacity, rate: rate, now: now)
    }

    private static func takeToken(_ member: inout Member, capacity: Double, rate: Double, now: SessionInstant) -> Bool {
        let elapsed = max(.zero, now - member.tokensUpdatedAt).seconds
        member.messageTokens = min(capacity, member.messageTokens + elapsed * rate)
        member.tokensUpdatedAt = now
        let allowed = member.messageTokens >= 1
        if allowed { member.messageTokens -= 1 }
        return allowed
    }

    // MARK: Journal

    /// Stores and forwards journal traffic. Checksums are verified by the receivers, not here.
    mutating func handleJournal(_ entry: JournalMessage, from id: ParticipantID, now: SessionInstant) -> [Action] {
        switch entry {
        case .begin(var info):
            info.owner = id  // Nobody announces attachments on someone else's behalf.
            info.name = TextBounds.line(info.name, maxBytes: TextBounds.maxAttachmentNameBytes)
            guard info.id.utf8.count <= TextBounds.maxAttachmentIDBytes, !info.id.isEmpty else {
                return [.send(.journal(.failed(id: Self.quoted(info.id), reason: "an attachment id must be 1 to "
                    + "\(TextBounds.maxAttachmentIDBytes) bytes")), to: id)]
            }
            guard info.sha256.utf8.count <= TextBounds.maxChecksumBytes else {
                return [.send(.journal(.failed(id: info.id, reason: "the checksum of '\(info.name)' is longer than "
                    + "\(TextBounds.maxChecksumBytes) bytes")), to: id)]
            }
            guard info.size >= 0, info.size <= configuration.maxAttachmentSize else {
                return [.send(.journal(.failed(id: info.id, reason: "attachment '\(info.name)' is "
                    + "\(AuthorityText.bytes(info.size)); the limit is \(AuthorityText.bytes(configuration.maxAttachmentSize))")),
                              to: id)]
            }
            guard attachments[info.id] == nil else {
                return [.send(.journal(.failed(id: info.id, reason: "an attachment with id '\(info.id)' already exists — "
                    + "use a new id")), to: id)]
            }
            if let problem = quotaProblem(announcing: info) {
                return [.send(.journal(.failed(id: info.id, reason: problem)), to: id)]
            }
            attachments[info.id] = StoredAttachment(info: info)
            attachmentOrder.append(info.id)
            return send(.journal(.begin(info)), to: eagerIDs(except: id))

        case .chunk(let attachmentID, let offset, let bytes):
            // Only the figures are copied out, and the attachment is mutated in place, so a large attachment's
            // chunk list is not copied for every chunk.
            let progress = attachments[attachmentID].map {
                (owner: $0.info.owner, isCommitted: $0.isCommitted, received: $0.received, size: $0.info.size)
            }
            guard let progress, progress.owner == id, !progress.isCommitted else {
                return refuse("no attachment '\(Self.quoted(attachmentID))' of yours is being sent", to: id)
            }
            guard offset == progress.received, progress.received + Int64(bytes.count) <= progress.size else {
                return fail(attachmentID, reason: "chunk at offset \(offset) does not follow the \(progress.received) "
                    + "bytes received or exceeds the announced size")
            }
            attachments[attachmentID]?.chunks.append((offset, bytes.count, configuration.keepsAttachmentBytes ? bytes : nil))
            attachments[attachmentID]?.received += Int64(bytes.count)
            return send(.journal(entry), to: eagerIDs(except: id))

        case .commit(let attachmentID):
            guard var stored = attachments[attachmentID], stored.info.owner == id, !stored.isCommitted else {
                return refuse("no attachment '\(Self.quoted(attachmentID))' of yours is being sent", to: id)
            }
            guard stored.received == stored.info.size else {
                return fail(attachmentID, reason: "only \(stored.received) of \(stored.info.size) bytes arrived")
            }
            stored.isCommitted = true
            attachments[attachmentID] = stored
            // Lazy participants learn of it now, complete, and fetch the bytes if they want them.
            let lazy = connectedIDs.filter { $0 != id && members[$0]?.lazyJournal == true }
            return send(.journal(entry), to: eagerIDs(except: id)) + send(.journal(.available(stored.info)), to: lazy)

        case .remove(let attachmentID):
            guard let stored = attachments[attachmentID] else { return [] }
            guard stored.info.owner == id || mayActAsHost(id, everyoneMay: configuration.everyoneMayRemoveAttachments) else {
                // Not quoting the attachment's name: it travels sealed, so the authority only has a box.
                return [.send(.refused(.onlyTheHost("remove \(name(of: stored.info.owner))'s attachment",
                                                    request: .journal, otherwise: "you can remove your own attachments")), to: id)]
            }
            discardAttachment(attachmentID)
            return broadcast(.journal(entry), except: id)

        case .failed(let attachmentID, let reason):
            guard let stored = attachments[attachmentID], stored.info.owner == id else { return [] }
            discardAttachment(attachmentID)
            let bounded = TextBounds.line(reason, maxBytes: TextBounds.maxNoticeBytes)
            return send(.journal(.failed(id: attachmentID, reason: bounded)),
                        to: stored.isCommitted ? connectedIDs.filter { $0 != id } : eagerIDs(except: id))

        case .available:
            return refuse("'available' is sent by the server, not to it", to: id)

        case .fetch(let attachmentID):
            return fetch(attachmentID, for: id, now: now)
        }
    }

    /// Bytes of attachment `id` received so far (nil: the journal does not hold it).
    public func receivedBytes(ofAttachment id: String) -> Int64? { attachments[id]?.received }

    /// Whether `owner` is sending attachment `id` (announced and accepted, not yet committed).
    public func isReceivingAttachment(_ id: String, from owner: ParticipantID) -> Bool {
        guard let stored = attachments[id] else { return false }
        return stored.info.owner == owner && !stored.isCommitted
    }

    /// Committed journal attachments, in the order they were announced.
    public var committedAttachments: [AttachmentInfo] {
        attachmentOrder.compactMap { attachments[$0] }.filter(\.isCommitted).map(\.info)
    }

    /// Participants that receive attachments as they are sent (not lazily), except `excluded`.
    func eagerIDs(except excluded: ParticipantID? = nil) -> [ParticipantID] {
        connectedIDs.filter { $0 != excluded && members[$0]?.lazyJournal != true }
    }

    func send(_ message: ServerMessage, to ids: [ParticipantID]) -> [Action] { ids.map { .send(message, to: $0) } }

    /// The bytes of a complete attachment, for the participant that asked: its begin, chunks and commit. Fetches
    /// count against the sender's app-message rate; what they queue is bounded by the transport's per-connection
    /// queue (a participant fetching faster than it reads is closed as a slow consumer).
    mutating func fetch(_ attachmentID: String, for id: ParticipantID, now: SessionInstant) -> [Action] {
        guard let stored = attachments[attachmentID], stored.isCommitted else {
            return [.send(.journal(.failed(id: Self.quoted(attachmentID), reason: "there is no attachment "
                + "'\(Self.quoted(attachmentID))' to load (it was removed, or never completed)")), to: id)]
        }
        guard takeMessageToken(for: id, now: now) else {
            return [.send(.journal(.failed(id: attachmentID, reason: "too many requests: load attachments less often")),
                          to: id)]
        }
        var actions: [Action] = [.send(.journal(.begin(stored.info)), to: id)]
        actions += chunks(of: stored, to: id)
        actions.append(.send(.journal(.commit(id: attachmentID)), to: id))
        return actions
    }

    /// The stored chunks of an attachment for `id`: as messages, or for the transport to read (its spool).
    func chunks(of stored: StoredAttachment, to id: ParticipantID) -> [Action] {
        stored.chunks.map { chunk in
            guard let bytes = chunk.bytes else {
                return .sendStoredChunk(attachment: stored.info.id, offset: chunk.offset, length: chunk.length, to: id)
            }
            return .send(.journal(.chunk(id: stored.info.id, offset: chunk.offset, bytes: bytes)), to: id)
        }
    }

    /// Drops an attachment and tells everyone (the sender included) why.
    mutating func fail(_ attachmentID: String, reason: String) -> [Action] {
        let owner = attachments[attachmentID]?.info.owner
        discardAttachment(attachmentID)
        // Only those that saw its begin: lazy participants never heard of an incomplete attachment.
        let told = connectedIDs.filter { $0 == owner || members[$0]?.lazyJournal != true }
        return send(.journal(.failed(id: attachmentID, reason: reason)), to: told)
    }

    mutating func discardAttachment(_ attachmentID: String) {
        attachments[attachmentID] = nil
        attachmentOrder.removeAll { $0 == attachmentID }
    }

    /// Attachments still being sent by a participant that is gone cannot complete.
    mutating func dropUnfinishedAttachments(of id: ParticipantID) -> [Action] {
        var actions: [Action] = []
        for attachmentID in attachmentOrder {
            guard let stored = attachments[attachmentID], stored.info.owner == id, !stored.isCommitted else { continue }
            discardAttachment(attachmentID)
            actions += send(.journal(.failed(id: attachmentID, reason: "\(name(of: id)) left before "
                + "'\(stored.info.name)' was complete")), to: eagerIDs(except: id))
        }
        return actions
    }

    /// Everything the journal holds, for a (re)joining participant: each attachment's begin, its chunks, and its
    /// commit once complete. Chunks of an attachment still being sent follow live.
    func journalReplay(to id: ParticipantID) -> [Action] {
        var actions: [Action] = []
        for attachmentID in attachmentOrder {
            guard let stored = attachments[attachmentID], stored.info.owner != id || stored.isCommitted else { continue }
            if members[id]?.lazyJournal == true {
                if stored.isCommitted { actions.append(.send(.journal(.available(stored.info)), to: id)) }
                continue
            }
            actions.append(.send(.journal(.begin(stored.info)), to: id))
            actions += chunks(of: stored, to: id)
            if stored.isCommitted { actions.append(.send(.journal(.commit(id: attachmentID)), to: id)) }
        }
        return actions
    }
}
