import TandemCrypto
import Foundation
import Logging
import NIOCore
import Synchronization
import TandemCore

/// A session's handle on one participant's connection; safe to use from the session's loop.
final class ServerConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<ServerConnectionHandler>
    /// The connection's datagram channel id once it has joined (0: none), for the session's unreliable relay.
    let datagramChannel = Atomic<UInt64>(0)
    /// The highest numbers of the reliable app messages the relay read from this link, in the `everyone` and the
    /// `some` lane (0: none), for a resend when the link dies (`HostedSession.resendJoined`). The session's loop
    /// writes them.
    let relayedEveryone = Atomic<UInt64>(0)
    /// The `copy` numbers of the timeline requests that came on this connection, by TCP or as a datagram: each is
    /// acted on once (`TimelineRequest.copy`). The session's loop uses it.
    let requestCopies = Mutex(ReplayWindow())
    let relayedSome = Atomic<UInt64>(0)

    init(channel: any Channel, handler: ServerConnectionHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// Queues an encoded frame behind everything queued before it.
    func send(_ frame: Frame) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            handler.value.enqueue(.frame(frame))
        } else {
            channel.eventLoop.execute { handler.value.enqueue(.frame(frame)) }
        }
    }

    /// Queues a message to be encoded when the socket can take it (journal replay).
    func send(_ message: ServerMessage) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            handler.value.enqueue(.message(message))
        } else {
            channel.eventLoop.execute { handler.value.enqueue(.message(message)) }
        }
    }

    /// Queues a journal chunk read from `spool` when the socket can take it (journal replay from the spool).
    func sendStoredChunk(_ chunk: ServerConnectionHandler.Outbound.StoredChunk) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            handler.value.enqueue(.storedChunk(chunk))
        } else {
            channel.eventLoop.execute { handler.value.enqueue(.storedChunk(chunk)) }
        }
    }

    /// A reliable app message numbered `sequence` came from this link, in the `everyone` lane or the `some` lane.
    @inline(__always)
    func noteRelayed(_ sequence: UInt64, everyone: Bool) {
        if everyone {
            if sequence > relayedEveryone.load(ordering: .relaxed) { relayedEveryone.store(sequence, ordering: .relaxed) }
        } else if sequence > relayedSome.load(ordering: .relaxed) {
            relayedSome.store(sequence, ordering: .relaxed)
        }
    }

    /// The peer's address, as the server's bounds count it.
    var address: String { channel.remoteAddress?.ipAddress ?? "unknown" }

    func close(_ code: WireErrorCode, _ message: String) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.closeAfterSending(code, message, kind: .close) }
    }

    /// Tells the participant its session is over for it (`invalidated`), then closes with a close frame.
    func invalidate(_ reason: InvalidationReason) {
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.enqueue(.message(.invalidated(reason)))
            handler.value.closeAfterSending(WireErrorCode(reason.code), reason.message, kind: .close)
        }
    }

    func joined(as participant: ParticipantID, session: HostedSession) {
        session.noteJoined()
        let handler = self.handler
        // Directly when possible, so the handler knows its id before the welcome (queued next) goes out.
        if channel.eventLoop.inEventLoop {
            handler.value.didJoin(as: participant)
        } else {
            channel.eventLoop.execute { handler.value.didJoin(as: participant) }
        }
    }

}
