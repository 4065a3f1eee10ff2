import Foundation
import NIOCore
import TandemCore

// App data: messages numbered and sealed in their place as they go on the wire, opened and ordered as they arrive
// (`AppMessageSeal`, kept in `ClientShared`), and attachments sealed as records.

extension TandemClientConnection {
    /// Numbers `message` in its lane and seals it in its place (`AppMessageSeal`) as it goes on the wire, so the
    /// numbers follow the order of the wire; `message.sequence` is not used. Throws `NoAppDataKey.Missing` on a
    /// connection without the app-data key. While reconnecting, as `send`.
    public func sendAppMessage(_ message: OutgoingAppMessage) async throws {
        if let reason = shared.closedReason { throw reason }
        guard let seal = shared.appData else { throw NoAppDataKey.Missing() }
        let sender = localParticipantID
        if message.delivery == .unreliable {
            if isReconnecting { return }
            // As a datagram while the UDP path works; order in the unreliable lane matters to nobody.
            if let link = shared.datagramLink, link.status.path == .udp,
               link.sendUnreliable(.appMessage(try seal.seal(message, from: sender, epoch: shared.sealingEpoch))) {
                return
            }
        }
        try await shared.waitForChannel(limit: options.maxSendsWaitingForReconnect)
        let (channel, handler) = current.withLock { ($0.channel, $0.handler) }
        if message.delivery == .unreliable, !channel.isWritable { return }
        if !channel.isWritable {
            try await channel.eventLoop.flatSubmit { handler.value.whenWritable() }.get()
        }
        let shared = self.shared
        // Numbered and sealed on the channel's event loop right before the write, so two senders cannot swap, at
        // the epoch of the channel it goes out on: what dies with a lost channel leaves a gap that the next
        // message's higher epoch explains.
        try await channel.eventLoop.submit {
            let sealed = try seal.seal(message, from: sender, epoch: UInt32(truncatingIfNeeded: handler.value.epoch))
            let frame = try SessionCodec.encode(.appMessage(sealed), allocator: channel.allocator,
                                                linkReportFrames: shared.linkReportFrames.load(ordering: .relaxed))
            channel.writeAndFlush(frame, promise: nil)
        }.get()
    }

    /// The others' app messages that opened in their place and came in order, payloads opened; what did not is
    /// counted in `appDataDrops`, and the person is told once (a notice of kind `appDataAltered`).
    public func appMessages() -> AsyncStream<IncomingAppMessage> { shared.opened.subscribe() }

    /// The app messages this connection dropped (altered, replayed, reordered, late) or found missing so far.
    public var appDataDrops: AppMessageDrops { shared.appData?.drops ?? AppMessageDrops() }

    /// Sends an app message, checked against `Options.maxMessageSize` and `maxMessagesPerSecond`, sealed like a
    /// messenger's (`sendAppMessage(_: OutgoingAppMessage)`): receivers see it in `appMessages()`. Raw bytes, without
    /// the messenger's type tag.
    public func sendAppMessage(_ payload: Data, to recipients: Recipients = .all,
                               delivery: MessageDelivery = .reliable) async throws {
        if delivery == .unreliable, payload.count > MessageDelivery.maxUnreliableSize {
            throw TandemClientError.unreliableMessageTooLarge(size: payload.count, limit: MessageDelivery.maxUnreliableSize)
        }
        let sequence: UInt64
        do { sequence = try appMessageGate.admit(size: payload.count) } catch {
            switch error {
            case .tooLarge(let size, let limit): throw TandemClientError.messageTooLarge(size: size, limit: limit)
            case .rateLimited: throw TandemClientError.rateLimited(limit: options.maxMessagesPerSecond)
            }
        }
        try await sendAppMessage(OutgoingAppMessage(recipients: recipients, delivery: delivery, sequence: sequence,
                                                    payload: payload))
    }

    /// Uploads a journal attachment sealed as a `GroupSessionJournal` seals it (records of `attachmentChunkSize`
    /// plaintext bytes, the name sealed), in chunks with the sealed stream's SHA-256; returns what others will see
    /// on the wire (the sealed name, size and digest).
    @discardableResult
    public func uploadAttachment(_ data: Data, name: String, id: String = UUID().uuidString) async throws -> AttachmentInfo {
        let limit: Int64 = 100 * 1024 * 1024
        guard Int64(data.count) <= limit else { throw TandemClientError.attachmentTooLarge(size: data.count, limit: limit) }
        let sealed = try appDataCipher.sealRecords(data, pieceSize: options.attachmentChunkSize,
                                                   owner: localParticipantID, id: id)
        let digest = SHA256Hex.digest(sealed)
        let info = AttachmentInfo(id: id, owner: localParticipantID,
                                  name: try appDataCipher.sealName(name, owner: localParticipantID, id: id),
                                  size: Int64(sealed.count), sha256: digest)
        try await send(.journal(.begin(info)))
        var offset = 0
        while offset < sealed.count {
            let end = min(offset + options.attachmentChunkSize, sealed.count)
            try await send(.journal(.chunk(id: id, offset: Int64(offset), bytes: sealed.subdata(in: offset..<end))))
            offset = end
        }
        try await send(.journal(.commit(id: id)))
        return info
    }
}
