import Crypto
import Foundation
import Logging
import NIOCore
import TandemCore

/// A session's handle on one participant's connection; safe to use from the session's loop.
final class ServerConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<ServerConnectionHandler>

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
        let handler = self.handler
        // Directly when possible, so the handler knows its id before the welcome (queued next) goes out.
        if channel.eventLoop.inEventLoop {
            handler.value.didJoin(as: participant)
        } else {
            channel.eventLoop.execute { handler.value.didJoin(as: participant) }
        }
    }

}

/// Runs one server-side connection: handshake, heartbeats, clock pongs, flood control, and hand-off of
/// session messages to the session's loop.
final class ServerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = Frame

    private enum State {
        case awaitingHello
        case awaitingProof(session: String, create: Bool, nonce: Data)
        case awaitingJoin(HostedSession, wantsHost: Bool)
        case joining(HostedSession, pending: [ClientMessage])
        case joined(HostedSession, ParticipantID)
        case closed
    }

    private let server: SessionServer
    private let configuration: ServerConfiguration
    private let clock: any MonotonicClock
    private let logger: Logger
    private var state = State.awaitingHello
    private var context: ChannelHandlerContext?
    private var connection: ServerConnection?
    private var lastReceived: Int64 = 0
    private var heartbeat: RepeatedTask?
    private var handshakeTimer: Scheduled<Void>?
    private var floodWindowStart: Int64 = 0
    private var floodWindowCount = 0
    /// Outbound traffic waiting for the socket, in order.
    private var outbound = CircularBuffer<Outbound>()

    enum Outbound {
        case frame(Frame)
        case message(ServerMessage)
    }

    init(server: SessionServer, configuration: ServerConfiguration, clock: any MonotonicClock, logger: Logger) {
        self.server = server
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        connection = ServerConnection(channel: context.channel, handler: self)
        lastReceived = clock.now()
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard handshakeTimer == nil else { return }
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        handshakeTimer = context.eventLoop.scheduleTask(in: .nanoseconds(configuration.handshakeTimeout)) {
            let handler = loopBoundSelf.value
            switch handler.state {
            case .awaitingHello, .awaitingProof:
                handler.closeAfterSending(.helloTimeout, "no hello and authentication within \(Nanos.toSeconds(handler.configuration.handshakeTimeout)) s")
            default: break
            }
        }
        let interval = TimeAmount.nanoseconds(configuration.heartbeatInterval)
        heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            loopBoundSelf.value.heartbeatTick()
        }
    }

    private func heartbeatTick() {
        guard let context else { return }
        if case .closed = state { return }
        if clock.now() - lastReceived > configuration.heartbeatTimeout {
            closeAfterSending(.heartbeatTimeout, "nothing heard for \(Nanos.toSeconds(configuration.heartbeatTimeout)) s")
            return
        }
        context.writeAndFlush(wrapOutboundOut(FrameCodec.empty(.heartbeatPing, allocator: context.channel.allocator)),
                              promise: nil)
    }

    /// Tells the session this participant's connection is gone (at most once: callers then set `.closed`).
    private func notifySessionOfLoss() {
        guard let connection else { return }
        switch state {
        case .joined(let session, let participant):
            session.loop.execute { session.connectionLost(participant, via: connection) }
        case .joining(let session, _):
            // The join is queued on the session's loop before this, so the session finds the connection.
            session.loop.execute { session.connectionLostDuringJoin(connection) }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        heartbeat?.cancel()
        handshakeTimer?.cancel()
        notifySessionOfLoss()
        state = .closed
        outbound.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let frameError = error as? FrameError {
            logger.debug("bad frame", metadata: ["error": "\(frameError)"])
            closeAfterSending(frameError.code, frameError.description)
        } else if case .closed = state {
            return
        } else {
            logger.debug("connection error", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if case .closed = state { return }
        lastReceived = frame.receivedAt
        // Journal chunks are bounded by the attachment size limit instead, so a large upload is not a flood.
        if frame.kind != .journalChunk, floodExceeded(now: frame.receivedAt) {
            closeAfterSending(.flood, "more than \(configuration.maxFramesPerSecond) frames per second")
            return
        }
        do {
            try handle(frame, context: context)
        } catch let error as FrameError {
            closeAfterSending(error.code, error.description)
        } catch {
            closeAfterSending(.malformedFrame, "\(error)")
        }
    }

    private func floodExceeded(now: Int64) -> Bool {
        if now - floodWindowStart > 1_000_000_000 {
            floodWindowStart = now
            floodWindowCount = 0
        }
        floodWindowCount += 1
        return floodWindowCount > configuration.maxFramesPerSecond
    }

    private func handle(_ frame: Frame, context: ChannelHandlerContext) throws {
        switch frame.kind {
        case .heartbeatPing:
            context.writeAndFlush(wrapOutboundOut(FrameCodec.empty(.heartbeatPong, allocator: context.channel.allocator)), promise: nil)
            return
        case .heartbeatPong:
            return
        case .close:
            context.close(promise: nil)
            return
        case .error:
            context.close(promise: nil)
            return
        case .clockPing:
            switch state {
            case .awaitingJoin, .joining, .joined: break
            default: throw unexpected(frame)
            }
            let (sequence, t1) = try FrameCodec.parseClockPing(frame)
            var body = context.channel.allocator.buffer(capacity: 28)
            body.writeInteger(sequence)
            body.writeInteger(t1)
            body.writeInteger(frame.receivedAt)
            let t3Index = body.writerIndex
            body.writeInteger(Int64(0))
            // t3 is stamped as late as possible: just before the frame goes to the encoder and the socket.
            body.setInteger(clock.now(), at: t3Index)
            context.writeAndFlush(wrapOutboundOut(Frame(kind: .clockPong, body: body)), promise: nil)
            return
        default:
            break
        }

        switch state {
        case .awaitingHello:
            guard frame.kind == .hello else { throw unexpected(frame) }
            let hello = try FrameCodec.decode(Hello.self, from: frame)
            guard hello.protocolVersion == tandemProtocolVersion else {
                closeAfterSending(.protocolVersion,
                                  "this server speaks protocol version \(tandemProtocolVersion), the client \(hello.protocolVersion); update the older side")
                return
            }
            guard Invite.isValidSessionID(hello.session) else {
                closeAfterSending(.noSuchSession, "\"\(hello.session)\" is not a valid session name")
                return
            }
            let nonce = SessionAuth.nonce()
            state = .awaitingProof(session: hello.session, create: hello.create ?? false, nonce: nonce)
            context.writeAndFlush(wrapOutboundOut(try FrameCodec.json(.challenge, Challenge(nonce: nonce),
                                                                       allocator: context.channel.allocator)), promise: nil)

        case .awaitingProof(let sessionID, let create, let nonce):
            guard frame.kind == .authProof else { throw unexpected(frame) }
            let proof = try FrameCodec.decode(AuthProof.self, from: frame)
            guard proof.clientNonce.count >= 16 else {
                closeAfterSending(.authenticationFailed, "client nonce too short")
                return
            }
            let session: HostedSession?
            switch findOrCreateSession(sessionID, create: create, key: proof.sessionKey) {
            case .success(let found): session = found
            case .failure(let refusal):
                closeAfterSending(refusal.code, refusal.message)
                return
            }
            guard let session else {
                closeAfterSending(.noSuchSession, "no session \(sessionID) on this server (it may have ended)")
                return
            }
            guard SessionAuth.verify(proof: proof.proof, key: session.key, serverNonce: nonce, session: sessionID,
                                     clientNonce: proof.clientNonce) else {
                closeAfterSending(.authenticationFailed, "wrong secret for session \(sessionID); check the invite")
                return
            }
            handshakeTimer?.cancel()
            state = .awaitingJoin(session, wantsHost: proof.host ?? false)
            let accepted = Accepted(heartbeatIntervalMs: Int(configuration.heartbeatInterval / 1_000_000),
                                    heartbeatTimeoutMs: Int(configuration.heartbeatTimeout / 1_000_000),
                                    maxFrameSize: configuration.maxFrameSize)
            context.writeAndFlush(wrapOutboundOut(try FrameCodec.json(.accepted, accepted, allocator: context.channel.allocator)),
                                  promise: nil)

        case .awaitingJoin(let session, let wantsHost):
            guard frame.kind.carriesSessionMessage else { throw unexpected(frame) }
            let message = try SessionCodec.decodeClientMessage(frame)
            guard case .join(let name, let reconnectAs, let reconnectToken, let preroll) = message else {
                throw FrameError.malformedBody(kind: .session, detail: "the first session message must be join")
            }
            state = .joining(session, pending: [])
            let connection = self.connection!
            // The authority cleans and bounds the name and checks the reconnect token.
            session.loop.execute {
                session.join(connection, name: name, reconnectAs: reconnectAs, reconnectToken: reconnectToken,
                             prerollEstimate: preroll, wantsHost: wantsHost)
            }

        case .joining(let session, var pending):
            guard frame.kind.carriesSessionMessage else { throw unexpected(frame) }
            pending.append(try SessionCodec.decodeClientMessage(frame))
            state = .joining(session, pending: pending)

        case .joined(let session, let participant):
            guard frame.kind.carriesSessionMessage else { throw unexpected(frame) }
            let message = try SessionCodec.decodeClientMessage(frame)
            if case .join = message {
                throw FrameError.malformedBody(kind: .session, detail: "already joined")
            }
            let connection = self.connection!
            session.loop.execute { session.receive(message, from: participant, via: connection) }

        case .closed:
            return
        }
    }

    private struct Refusal: Error {
        var code: WireErrorCode
        var message: String
    }

    private func findOrCreateSession(_ id: String, create: Bool, key: Data?) -> Result<HostedSession?, Refusal> {
        if let existing = server.session(named: id) { return .success(existing) }
        guard create, let key else { return .success(nil) }
        guard configuration.allowsRemoteSessionCreation else {
            return .failure(Refusal(code: .noSuchSession, message: "this server does not let clients create sessions"))
        }
        do {
            return .success(try server.createSession(id: id, key: SymmetricKey(data: key)))
        } catch {
            switch error {
            case .serverFull: return .failure(Refusal(code: .serverFull, message: error.description))
            default: return .failure(Refusal(code: .sessionExists, message: error.description))
            }
        }
    }

    private func unexpected(_ frame: Frame) -> FrameError {
        .malformedBody(kind: frame.kind, detail: "not expected at this point of the protocol")
    }

    /// Called (on this loop) once the session has admitted the connection.
    func didJoin(as participant: ParticipantID) {
        guard case .joining(let session, let pending) = state else { return }
        state = .joined(session, participant)
        let connection = self.connection!
        for message in pending {
            session.loop.execute { session.receive(message, from: participant, via: connection) }
        }
    }

    /// Sends an error (or close) frame, then closes. Safe to call more than once.
    func closeAfterSending(_ code: WireErrorCode, _ message: String, kind: FrameKind = .error) {
        guard let context else { return }
        if case .closed = state { return }
        notifySessionOfLoss()
        state = .closed
        heartbeat?.cancel()
        handshakeTimer?.cancel()
        // What was queued before the close still goes out first (e.g. the invalidation that explains it).
        while let item = outbound.popFirst() {
            switch item {
            case .frame(let frame): context.write(wrapOutboundOut(frame), promise: nil)
            case .message(let message):
                if let frame = try? SessionCodec.encode(message, allocator: context.channel.allocator) {
                    context.write(wrapOutboundOut(frame), promise: nil)
                }
            }
        }
        let frame = FrameCodec.error(code, message, kind: kind, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in context.close(promise: nil) }
    }

    // MARK: - Outbound queue, paced by writability

    /// Writes at once while the socket keeps up; otherwise keeps the order and waits for writability.
    func enqueue(_ item: Outbound) {
        if case .closed = state { return }
        outbound.append(item)
        pumpOutbound()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pumpOutbound() }
        context.fireChannelWritabilityChanged()
    }

    private func pumpOutbound() {
        guard let context else { return }
        var wrote = false
        while !outbound.isEmpty, context.channel.isWritable || !wrote {
            let frame: Frame
            switch outbound.removeFirst() {
            case .frame(let f): frame = f
            case .message(let message):
                guard let f = try? SessionCodec.encode(message, allocator: context.channel.allocator) else { continue }
                frame = f
            }
            context.write(wrapOutboundOut(frame), promise: nil)
            wrote = true
        }
        if wrote { context.flush() }
    }
}
