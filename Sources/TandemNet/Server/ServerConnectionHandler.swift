import TandemCrypto
import Foundation
import Logging
import NIOCore
import TandemTLS
import TandemCore

/// The one answer to a proof that does not open a session: the same for an unknown session and a wrong secret,
/// so that session names cannot be probed.
let authenticationRefusedText = "the server refused the invite; check it or ask the host for a fresh one"

/// Runs one server-side connection: handshake, heartbeats, clock pongs, flood control, the outbound queue and
/// its bound, and hand-off of session messages to the session's loop.
final class ServerConnectionHandler: ChannelInboundHandler {
    /// The connection's bytes, framed here (`channelRead`), not by a decoder in front of this handler.
    typealias InboundIn = ByteBuffer
    /// Frames go out as their wire bytes, written here (`frameBytes`): a frame fanned out to many connections is one
    /// shared buffer, passed down the pipeline as NIO's own `ByteBuffer` without a handler of its own in between.
    typealias OutboundOut = ByteBuffer

    /// `frame` as the bytes this handler writes.
    /// Every frame this handler writes passes here, so it also notes that the peer hears from us this heartbeat
    /// interval (`heartbeatTick`).
    func frameBytes(_ frame: Frame) -> NIOAny {
        sentSinceHeartbeat = true
        if let wire = frame.wire { return wrapOutboundOut(wire) }  // the common case: no allocator needed
        return wrapOutboundOut(FrameWriter.bytes(of: frame, allocator: context?.channel.allocator ?? ByteBufferAllocator()))
    }

    enum State {
        case awaitingHello
        case awaitingProof(session: String, create: Bool, nonce: Data)
        case awaitingJoin(HostedSession, wantsHost: Bool)
        case joining(HostedSession, pending: [ClientMessage])
        case joined(HostedSession, ParticipantID)
        case closed
    }

    let server: SessionServer
    let configuration: ServerConfiguration
    let clock: any MonotonicClock
    let logger: Logger
    /// The peer's address (for the per-address bounds and the logs).
    let address: String
    /// The decoder's limit, raised from the unauthenticated limit to `maxFrameSize` at `accepted`.
    let frameLimit: FrameSizeLimit
    /// This connection's places among its address's and the unauthenticated ones: the second given back at
    /// `accepted`, both at close.
    let admission: ConnectionAdmission.Ticket?
    /// When the handshake must be over, counted from the connection's start (before TLS, HTTP or a WebSocket
    /// upgrade); nil: the handshake timeout from when this handler starts.
    let handshakeDeadline: NIODeadline?
    var state = State.awaitingHello
    var context: ChannelHandlerContext?
    /// The context's channel, kept for the fan-out's writes (the context finds it through the pipeline each time).
    var channel: (any Channel)?
    var connection: ServerConnection?
    var lastReceived = LocalInstant.zero
    /// Where this connection's heartbeat ticks come from, and its place there (nil: not registered).
    var heartbeatSweep: HeartbeatSweep?
    var sweepPosition: HeartbeatSweep.Position?
    /// Whether a frame went out since the last heartbeat tick.
    var sentSinceHeartbeat = false
    var handshakeTimer: Scheduled<Void>?
    /// The connection's bytes, framed here (`channelRead` in +Reading).
    var reader = FrameReader()
    var floodWindowStart = LocalInstant.zero
    var floodWindowCount = 0
    /// Outbound traffic waiting for the socket, in order, with what each item counts against the bound.
    var outbound = CircularBuffer<(item: Outbound, cost: Int)>()
    /// Bytes counted in `outbound`.
    var queuedBytes = 0
    /// Whether the welcome (the first session frame after the join) has gone out.
    var welcomeSent = false
    /// Whether writes wait for this loop tick's flush (`TickFlusher`).
    var flushRequested = false
    /// This channel's loop's flusher, looked up once (a channel never changes loops).
    lazy var flusher = TickFlusher.current
    /// This connection's datagram channel id and key, from `accepted` on (nil: the server has no UDP socket).
    var datagramTicket: (id: UInt64, key: SymmetricKey)?

    enum Outbound {
        case frame(Frame)
        /// Boxed: a `ServerMessage` is over 300 bytes inline, and every frame the relay queues would be copied at
        /// that size (the queue's entries are as large as this enum's largest case).
        case message(Boxed)

        /// A journal chunk whose bytes are in the session's spool, read when the socket can take them.
        case storedChunk(StoredChunk)

        static func message(_ message: ServerMessage) -> Outbound { .message(Boxed(message)) }

        final class StoredChunk: Sendable {
            let spool: SessionSpool
            let attachment: String
            let offset: Int64
            let length: Int
            init(spool: SessionSpool, attachment: String, offset: Int64, length: Int) {
                self.spool = spool
                self.attachment = attachment
                self.offset = offset
                self.length = length
            }

            /// The chunk's message, or nil when its file is gone (the attachment was removed meanwhile).
            func load() -> ServerMessage? {
                spool.read(attachment: attachment, offset: offset, length: length)
                    .map { .journal(.chunk(id: attachment, offset: offset, bytes: $0)) }
            }
        }

        final class Boxed: Sendable {
            let message: ServerMessage
            init(_ message: ServerMessage) { self.message = message }
        }
    }

    init(server: SessionServer, configuration: ServerConfiguration, clock: any MonotonicClock, logger: Logger,
         address: String = "unknown", frameLimit: FrameSizeLimit? = nil, admission: ConnectionAdmission.Ticket? = nil,
         handshakeDeadline: NIODeadline? = nil) {
        self.handshakeDeadline = handshakeDeadline
        self.server = server
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.address = address
        self.frameLimit = frameLimit ?? FrameSizeLimit(configuration.maxFrameSize)
        self.admission = admission
        server.connectionObjectCreated()
    }

    deinit {
        server.connectionObjectFreed()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        channel = context.channel
        connection = ServerConnection(channel: context.channel, handler: self)
        lastReceived = clock.now
        if context.channel.isActive { start(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimers()
        releaseQueue()
        self.context = nil
        channel = nil
        connection = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    /// Tells the session this participant's connection is gone (at most once: callers then set `.closed`).
    func notifySessionOfLoss(what: String? = nil) {
        guard let connection else { return }
        switch state {
        case .joined(let session, let participant):
            session.loop.execute { session.connectionLost(participant, via: connection, what: what) }
        case .joining(let session, _):
            // The join is queued on the session's loop before this, so the session finds the connection.
            session.loop.execute { session.connectionLostDuringJoin(connection, what: what) }
        case .awaitingJoin(let session, _):
            session.stopWaitingToJoin(connection)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimers()
        unregisterDatagrams()
        if case .closed = state {} else { notifySessionOfLoss() }
        state = .closed
        releaseQueue()
        admission?.release()
        // The session may still hold the `ServerConnection` for a moment; it must not keep this handler (and
        // through it the channel) alive.
        connection = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let frameError = error as? FrameError {
            logger.debug("bad frame", metadata: ["error": "\(frameError)"])
            closeAfterSending(frameError.code, frameError.description, immediately: true)
        } else if case .closed = state {
            return
        } else {
            logger.debug("connection error", metadata: ["error": "\(error)"])
            closeAfterSending(.internalError, "connection error", immediately: true)
        }
    }

    /// One frame of the connection (`channelRead` in +Reading).
    func receive(_ frame: Frame, context: ChannelHandlerContext) {
        lastReceived = frame.receivedAt
        // Journal chunks are bounded by the attachment size limit instead, so a large upload is not a flood.
        if frame.kind != .journalChunk, floodExceeded(now: frame.receivedAt) {
            closeAfterSending(.flood, "more than \(configuration.maxFramesPerSecond) frames per second", immediately: true)
            return
        }
        do {
            try handle(frame, context: context)
        } catch let error as FrameError {
            closeAfterSending(error.code, error.description, immediately: true)
        } catch {
            closeAfterSending(.malformedFrame, "\(error)", immediately: true)
        }
    }

    private func floodExceeded(now: LocalInstant) -> Bool {
        if now - floodWindowStart > .seconds(1) {
            floodWindowStart = now
            floodWindowCount = 0
        }
        floodWindowCount += 1
        return floodWindowCount > configuration.maxFramesPerSecond
    }

    private func handle(_ frame: Frame, context: ChannelHandlerContext) throws {
        switch frame.kind {
        case .heartbeatPing:
            context.writeAndFlush(frameBytes(FrameCodec.empty(.heartbeatPong, allocator: context.channel.allocator)), promise: nil)
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
            body.writeInteger(t1.nanoseconds)
            // The authority's clock is the session clock: t2 and t3 are session instants.
            body.writeInteger(frame.receivedAt.nanoseconds)
            let t3Index = body.writerIndex
            body.writeInteger(Int64(0))
            // t3 is stamped as late as possible: just before the frame goes to the encoder and the socket.
            body.setInteger(clock.now.nanoseconds, at: t3Index)
            context.writeAndFlush(frameBytes(Frame(kind: .clockPong, body: body)), promise: nil)
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
                closeAfterSending(.noSuchSession, "\"\(hello.session.prefix(80))\" is not a valid session name")
                return
            }
            admission?.progressed()
            let nonce = SessionAuth.nonce()
            state = .awaitingProof(session: hello.session, create: hello.create ?? false, nonce: nonce)
            context.writeAndFlush(frameBytes(try FrameCodec.json(.challenge, Challenge(nonce: nonce),
                                                                       allocator: context.channel.allocator)), promise: nil)

        case .awaitingProof(let sessionID, let create, let nonce):
            guard frame.kind == .authProof else { throw unexpected(frame) }
            let proof = try FrameCodec.decode(AuthProof.self, from: frame)
            guard let session = authenticate(proof, session: sessionID, create: create, nonce: nonce),
                  let connection = self.connection else { return }
            if let refusal = session.admitWaitingToJoin(connection) {
                server.logRefusal(refusal.counted, address: address, refusal.why)
                closeAfterSending(refusal.code, refusal.why)
                return
            }
            state = .awaitingJoin(session, wantsHost: proof.host ?? false)
            // Authenticated, it must now join (or enter waiting) in time, or give its place back.
            scheduleJoinDeadline(context: context)
            // Authenticated: no longer counted against the unauthenticated bounds, and full-size frames allowed.
            admission?.authenticated()
            frameLimit.value = configuration.maxFrameSize
            issueDatagramTicket(session: session, serverNonce: nonce, clientNonce: proof.clientNonce)
            let accepted = Accepted(heartbeatIntervalMs: Int(configuration.heartbeatInterval.nanoseconds / 1_000_000),
                                    heartbeatTimeoutMs: Int(configuration.heartbeatTimeout.nanoseconds / 1_000_000),
                                    maxFrameSize: configuration.maxFrameSize, datagramChannel: datagramTicket?.id,
                                    linkReportFrames: true, appMessageResend: true,
                                    timelineCopies: datagramTicket == nil ? nil : true)
            context.writeAndFlush(frameBytes(try FrameCodec.json(.accepted, accepted, allocator: context.channel.allocator)),
                                  promise: nil)

        case .awaitingJoin(let session, let wantsHost):
            guard frame.kind.carriesSessionMessage else { throw unexpected(frame) }
            let message = try SessionCodec.decodeClientMessage(frame)
            guard case .join(let name, let reconnectAs, let reconnectToken, let preroll, let waiting, let lazy, let via,
                             let resends, let received) = message else {
                throw FrameError.malformedBody(kind: .session, detail: "the first session message must be join")
            }
            guard let connection = self.connection else { return }
            session.stopWaitingToJoin(connection)
            handshakeTimer?.cancel()
            handshakeTimer = nil
            state = .joining(session, pending: [])
            // The authority cleans and bounds the name and checks the reconnect token.
            session.loop.execute {
                session.join(connection, name: name, reconnectAs: reconnectAs, reconnectToken: reconnectToken,
                             prerollEstimate: preroll, wantsHost: wantsHost, waiting: waiting ?? false,
                             lazyJournal: lazy ?? false, via: via, resends: resends ?? false, received: received ?? [])
            }

        case .joining(let session, var pending):
            guard frame.kind.carriesSessionMessage else { throw unexpected(frame) }
            pending.append(try SessionCodec.decodeClientMessage(frame))
            state = .joining(session, pending: pending)

        case .joined(let session, let participant):
            if frame.kind == .mediaRequest || frame.kind == .mediaChunk {
                return session.loop.execute { session.receiveMedia(frame, from: participant) }
            }
            guard frame.kind.carriesSessionMessage else { throw unexpected(frame) }
            if let (sequence, payload) = SessionCodec.broadcastAppMessage(frame) {
                guard let connection = self.connection else { return }
                if session.loop.inEventLoop {
                    session.relayBroadcast(sequence: sequence, payload: payload, from: participant, via: connection)
                } else {
                    session.loop.execute {
                        session.relayBroadcast(sequence: sequence, payload: payload, from: participant, via: connection)
                    }
                }
                return
            }
            let message = try SessionCodec.decodeClientMessage(frame)
            if case .join = message {
                throw FrameError.malformedBody(kind: .session, detail: "already joined")
            }
            guard let connection = self.connection else { return }
            // On the session's own loop (`didJoin` hands over what came before in the same way), at once.
            if session.loop.inEventLoop {
                session.receive(message, from: participant, via: connection)
            } else {
                session.loop.execute { session.receive(message, from: participant, via: connection) }
            }

        case .closed:
            return
        }
    }

    private func unexpected(_ frame: Frame) -> FrameError {
        .malformedBody(kind: frame.kind, detail: "not expected at this point of the protocol")
    }

    /// Called (on this loop) once the session has admitted the connection.
    func didJoin(as participant: ParticipantID) {
        guard case .joining(let session, let pending) = state, let connection else { return }
        state = .joined(session, participant)
        registerDatagrams(session: session, participant: participant, connection: connection)
        let here = session.loop.inEventLoop
        for message in pending {
            if here { session.receive(message, from: participant, via: connection); continue }
            session.loop.execute { session.receive(message, from: participant, via: connection) }
        }
    }

    /// Sends an error (or close) frame, then closes. Safe to call more than once.
    ///
    /// `immediately` (timeouts, abuse, a slow consumer) closes at once without waiting for anything to be
    /// written: the error frame goes out only if the socket takes it now, and queued traffic is dropped.
    /// Otherwise what was queued goes out first and the close waits for the writes at most 2 s.
    func closeAfterSending(_ code: WireErrorCode, _ message: String, kind: FrameKind = .error, immediately: Bool = false) {
        guard let context else { return }
        if case .closed = state { return }
        notifySessionOfLoss(what: code == .slowConsumer ? "could not keep up and was disconnected" : nil)
        unregisterDatagrams()
        state = .closed
        stopTimers()
        let frame = FrameCodec.error(code, message, kind: kind, allocator: context.channel.allocator)
        if immediately {
            releaseQueue()
            context.writeAndFlush(frameBytes(frame), promise: nil)
            closeBelowTLS(context)
            return
        }
        // What was queued before the close still goes out first (e.g. the invalidation that explains it).
        while let entry = outbound.popFirst() {
            adjustQueued(by: -entry.cost)
            if let frame = encodeChecked(entry.item, context: context) {
                context.write(frameBytes(frame), promise: nil)
            }
        }
        let channel = context.channel
        let deadline = context.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in deadline.cancel() }
        let viaTLS = (try? context.pipeline.syncOperations.context(handlerType: TLSHandler.self)) != nil
        context.writeAndFlush(frameBytes(frame)).whenComplete { _ in
            guard !viaTLS else {
                channel.close(promise: nil)
                return
            }
            // Plain TCP: end our side after the last byte, so the peer reads everything before the end even if
            // frames it sent are still unread here (a full close would then reset the connection and the peer
            // could lose the reason). The channel closes when the peer closes too, or at the deadline.
            let halfClosed = channel.eventLoop.makePromise(of: Void.self)
            halfClosed.futureResult.whenFailure { _ in channel.close(promise: nil) }
            channel.close(mode: .output, promise: halfClosed)
        }
    }

    /// Closes the socket without going through TLS's orderly shutdown (which would wait for the peer).
    func closeBelowTLS(_ context: ChannelHandlerContext) {
        if let tls = try? context.pipeline.syncOperations.context(handlerType: TLSHandler.self) {
            tls.close(promise: nil)
        } else {
            context.close(promise: nil)
        }
    }
}
