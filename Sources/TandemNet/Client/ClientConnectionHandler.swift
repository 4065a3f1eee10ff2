import TandemCrypto
import Foundation
import NIOCore
import TandemTLS
import TandemCore

/// Runs the client side of one connection on its event loop: handshake, join, heartbeats, clock sync,
/// checking journal attachments on arrival, and handing session messages to subscribers.
final class ClientConnectionHandler: ChannelDuplexHandler {
    /// The connection's bytes, framed here (`channelRead`), not by a generic decoder in front of this handler.
    typealias InboundIn = ByteBuffer
    /// The largest frame a server may send (a welcome with a large state, an attachment's chunk).
    static let maxFrameSize = 1 << 20
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    enum State {
        case awaitingChallenge
        case awaitingAccepted
        case awaitingWelcome
        case joined
        case closed
    }

    private let invite: Invite
    private let name: String
    let options: TandemClient.Options
    let shared: ClientShared
    private let welcomePromise: EventLoopPromise<SessionSnapshot>
    let clock: any MonotonicClock
    var state = State.awaitingChallenge
    var context: ChannelHandlerContext?
    private var lastReceived = LocalInstant.zero
    /// The connection's bytes, framed here (`channelRead`).
    private var reader = FrameReader()
    private var heartbeatTimeout = TimeSpan.seconds(2)
    private var heartbeatInterval = TimeSpan.milliseconds(500)
    private var heartbeat: RepeatedTask?
    /// Whether a frame went out since the last heartbeat tick (the client's own, or this handler's).
    var sentSinceHeartbeat = false
    var estimator: ClockSyncEstimator
    var pingSequence: UInt32 = 0
    /// How many of the latest pings may still be answered.
    static let pingsInFlight: UInt32 = 1024
    var lastPing: LocalInstant?
    var pingTimer: Scheduled<Void>?
    private var writabilityWaiters: [EventLoopPromise<Void>] = []
    /// Attachments arriving: their running SHA-256 and the one announced.
    var incoming: [String: (hasher: SHA256, sha256: String)] = [:]
    /// Which of the connection's successive channels this is (a reconnect opens the next one).
    /// Which of the connection's channels this is (0, then one more for every reconnect attempt).
    let epoch: Int
    /// This channel takes the place of a lost one: its welcome must keep the participant's identity.
    private let resuming: Bool
    /// Whether this channel got its welcome; only then does losing it concern the connection.
    private var joined = false
    /// The last silence longer than the heartbeat timeout: when it began and when a frame ended it. After this
    /// process was stopped, the frames that waited for it are read first and the loss shows only then.
    private var lastSilence: (from: LocalInstant, until: LocalInstant)?
    /// This channel's datagram key (from the handshake's nonces) and channel id (from `accepted`), and its UDP side.
    private var datagramKey: SymmetricKey?
    private var datagramChannel: UInt64?
    var datagramLink: ClientDatagramLink?
    /// The first clock probe sent as a datagram since the last datagram answer (nil: none outstanding).
    var unansweredDatagramPingSince: LocalInstant?

    init(invite: Invite, name: String, options: TandemClient.Options, shared: ClientShared,
         welcome: EventLoopPromise<SessionSnapshot>, clock: any MonotonicClock, epoch: Int = 0,
         resuming: Bool = false) {
        self.invite = invite
        self.name = name
        self.options = options
        self.shared = shared
        self.welcomePromise = welcome
        self.clock = clock
        self.epoch = epoch
        self.resuming = resuming
        self.estimator = ClockSyncEstimator(configuration: options.clockSync)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { sendHello(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendHello(context: context)
        context.fireChannelActive()
    }

    private var helloSent = false
    private func sendHello(context: ChannelHandlerContext) {
        guard !helloSent else { return }
        helloSent = true
        lastReceived = clock.now
        let hello = Hello(protocolVersion: tandemProtocolVersion, session: invite.session,
                          create: options.createSession ? true : nil)
        if let frame = try? FrameCodec.json(.hello, hello, allocator: context.channel.allocator) {
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        }
    }

    /// Frames what has arrived (`FrameReader`) and handles each whole frame in order, all stamped with the read's
    /// time.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A channel given up on (its goodbye may still be on its way out) has nothing more to say: in particular a
        // late close frame must not end a connection that has moved on to a new channel.
        if case .closed = state { return }
        reader.append(unwrapInboundIn(data))
        let now = clock.now
        do {
            while let frame = try reader.next(maxFrameSize: Self.maxFrameSize, receivedAt: now) {
                receive(frame, context: context)
                if case .closed = state {
                    reader.reset()
                    return
                }
            }
        } catch {
            errorCaught(context: context, error: error)
            return
        }
        reader.finishRead(allocator: context.channel.allocator)
    }

    private func receive(_ frame: Frame, context: ChannelHandlerContext) {
        if frame.receivedAt - lastReceived > heartbeatTimeout { lastSilence = (lastReceived, frame.receivedAt) }
        lastReceived = frame.receivedAt
        do {
            try handle(frame, context: context)
        } catch {
            fail(.refused(code: WireErrorCode.malformedFrame.rawValue, message: "\(error)"),
                 reason: InvalidationReason(code: .protocolError, message: "the server sent something unreadable: \(error)"),
                 sendCode: .malformedFrame)
        }
    }

    private func handle(_ frame: Frame, context: ChannelHandlerContext) throws {
        switch frame.kind {
        case .heartbeatPing:
            sentSinceHeartbeat = true
            context.writeAndFlush(wrapOutboundOut(FrameCodec.empty(.heartbeatPong, allocator: context.channel.allocator)),
                                  promise: nil)
        case .heartbeatPong:
            break
        case .error, .close:
            let body = (try? FrameCodec.decode(ErrorBody.self, from: frame))
                ?? ErrorBody(code: .internalError, message: "closed by the server")
            let reason = InvalidationReason(wire: body.code, message: body.message)
            welcomePromise.fail(TandemClientError(code: body.code, message: body.message))
            state = .closed
            // The server timing us out is a lost link (a reconnect may follow); any other close is its decision.
            endLink(reason, final: body.code != .heartbeatTimeout && body.code != .connectionLost)
            stopTimers()
            context.close(promise: nil)
        case .challenge:
            guard case .awaitingChallenge = state else { throw FrameError.malformedBody(kind: .challenge, detail: "unexpected") }
            let challenge = try FrameCodec.decode(Challenge.self, from: frame)
            let key = options.handshakeKey?.symmetricKey ?? SessionAuth.key(forSecret: invite.secret)
            let clientNonce = SessionAuth.nonce()
            let proof = SessionAuth.proof(key: key, serverNonce: challenge.nonce, session: invite.session,
                                          clientNonce: clientNonce)
            datagramKey = DatagramKey.derive(sessionKey: key, serverNonce: challenge.nonce, clientNonce: clientNonce)
            let body = AuthProof(clientNonce: clientNonce, proof: proof,
                                 sessionKey: options.createSession ? key.withUnsafeBytes { Data($0) } : nil,
                                 host: options.asHost ? true : nil,
                                 createToken: options.createSession ? options.createToken : nil,
                                 probe: options.createSession && options.creationProbe ? true : nil)
            state = .awaitingAccepted
            context.writeAndFlush(wrapOutboundOut(try FrameCodec.json(.authProof, body, allocator: context.channel.allocator)),
                                  promise: nil)
        case .accepted:
            guard case .awaitingAccepted = state else { throw FrameError.malformedBody(kind: .accepted, detail: "unexpected") }
            let accepted = try FrameCodec.decode(Accepted.self, from: frame)
            if options.creationProbe {
                // A server that does not know probes created the session: leave it unjoined (it expires).
                state = .closed
                welcomePromise.fail(CreationProbeAnswer.created)
                leaveQuietly(context: context, join: false)
                return
            }
            heartbeatTimeout = TimeSpan(nanoseconds: Int64(accepted.heartbeatTimeoutMs) * 1_000_000)
            datagramChannel = accepted.datagramChannel
            shared.linkReportFrames.store(accepted.linkReportFrames ?? false, ordering: .relaxed)
            shared.serverTakesRequestCopies.store(accepted.timelineCopies ?? false, ordering: .relaxed)
            startHeartbeat(context: context,
                           interval: TimeSpan(nanoseconds: Int64(accepted.heartbeatIntervalMs) * 1_000_000))
            state = .awaitingWelcome
            // Resends (a server that offers them, app data sealed): on a reconnect, where this peer stands with
            // each sender, so that each sends it again what it missed.
            let resends = accepted.appMessageResend == true ? shared.appData : nil
            let marks = resuming ? resends?.marks(limit: Self.maxResendMarks) : nil
            let join = ClientMessage.join(name: name, reconnectAs: options.reconnectAs,
                                          reconnectToken: options.reconnectToken,
                                          prerollEstimate: options.prerollEstimate,
                                          waiting: options.waitsToJoin ? true : nil,
                                          lazyJournal: options.lazyAttachments ? true : nil, via: options.via,
                                          resends: resends == nil ? nil : true, received: marks?.isEmpty == false ? marks : nil)
            context.writeAndFlush(wrapOutboundOut(try FrameCodec.json(.session, join, allocator: context.channel.allocator)),
                                  promise: nil)
        case .session, .appMessage, .journalChunk:
            let message = try SessionCodec.decodeServerMessage(frame)
            switch state {
            case .awaitingWelcome:
                guard case .welcome(let snapshot) = message else {
                    throw FrameError.malformedBody(kind: .session, detail: "expected welcome first")
                }
                state = .joined
                if resuming {
                    // Taking the place of a lost channel: only as the same participant, and only while the
                    // connection still wants it (it may have been closed meanwhile).
                    let kept = snapshot.localParticipant.id == options.reconnectAs
                    guard kept, shared.resume(epoch: epoch, welcome: snapshot, channel: context.channel,
                                              handler: NIOLoopBound(self, eventLoop: context.eventLoop)) else {
                        state = .closed
                        stopTimers()
                        let error: any Error = kept
                            ? TandemClientError.closed(InvalidationReason(code: .left, message: "closed meanwhile"))
                            : ReconnectIdentityLost(givenID: snapshot.localParticipant.id)
                        welcomePromise.fail(error)
                        leaveQuietly(context: context)
                        return
                    }
                }
                joined = true
                shared.timelineCopies.withLock { $0.reset(to: snapshot.timeline) }
                welcomePromise.succeed(snapshot)
                startClockSync(context: context)
                startDatagrams(context: context)
            case .joined:
                if case .resend(let mark) = message { return resend(mark, context: context) }
                if case .appMessage(let app) = message, let tap = shared.appTap.withLock({ $0 }) {
                    tap.handler(app, frame.receivedAt)
                    return
                }
                if case .timeline(let timeline) = message {
                    // Passed on unless its datagram copy came first.
                    return shared.deliver(timeline, viaDatagram: false)
                }
                deliver(checked(message))
            default:
                throw FrameError.malformedBody(kind: .session, detail: "session message before joining")
            }
        case .clockPong:
            let pong = try FrameCodec.parseClockPong(frame)
            clockPongArrived(sequence: pong.sequence,
                             ClockSample(t1: pong.t1, t2: pong.t2, t3: pong.t3, t4: frame.receivedAt))
        case .mediaRequest, .mediaChunk:
            shared.media.withLock { $0 }?(frame)
        case .hello, .authProof, .clockPing, .linkReport:
            throw FrameError.malformedBody(kind: frame.kind, detail: "a server never sends this")
        }
    }

    private func deliver(_ message: ServerMessage) {
        shared.deliver(message)
        if case .invalidated(let reason) = message {
            shared.channelEnded(epoch: epoch, reason, final: true, announce: false)
        }
    }

    /// This channel is gone. Once joined, the connection hears of it: a `final` end (the server's decision)
    /// closes the session for this peer; any other may be followed by a reconnect. Before the welcome only the
    /// pending connect fails.
    private func endLink(_ reason: InvalidationReason, final: Bool) {
        guard joined else { return }
        joined = false  // reported once
        var silentSince = lastReceived
        if let silence = lastSilence, clock.now - silence.until < heartbeatTimeout { silentSince = silence.from }
        shared.channelEnded(epoch: epoch, reason, final: final, silentSince: silentSince)
    }

    /// Leaves a session joined by mistake (another identity than the one to take back) and closes.
    private func leaveQuietly(context: ChannelHandlerContext, join: Bool = true) {
        if join, let leave = try? FrameCodec.json(.session, ClientMessage.leave, allocator: context.channel.allocator) {
            context.write(wrapOutboundOut(leave), promise: nil)
        }
        let frame = FrameCodec.error(.left, "left", kind: .close, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in context.close(promise: nil) }
    }

    // MARK: Timers

    private func startHeartbeat(context: ChannelHandlerContext, interval: TimeSpan) {
        heartbeatInterval = interval
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: TimeAmount(interval),
                                                           delay: TimeAmount(interval)) { _ in
            bound.value.heartbeatTick()
        }
    }

    private func heartbeatTick() {
        guard let context else { return }
        if case .closed = state { return }
        let silence = clock.now - lastReceived
        if silence > heartbeatTimeout {
            fail(.closed(InvalidationReason(code: .connectionLost, message: "lost the server")),
                 reason: InvalidationReason(code: .connectionLost,
                                            message: "nothing heard from the server for \(heartbeatTimeout.seconds) s"),
                 sendCode: .heartbeatTimeout, final: false)
            return
        }
        if Heartbeat.shouldPing(sentSinceLastTick: sentSinceHeartbeat, silence: silence, interval: heartbeatInterval) {
            context.writeAndFlush(wrapOutboundOut(FrameCodec.empty(.heartbeatPing, allocator: context.channel.allocator)),
                                  promise: nil)
        }
        sentSinceHeartbeat = false
    }

    /// Every frame the client writes on the channel passes here on its way to the encoder.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        sentSinceHeartbeat = true
        context.write(data, promise: promise)
    }

    /// Opens this channel's UDP side when the server offers one (and the options allow it).
    private func startDatagrams(context: ChannelHandlerContext) {
        let shared = self.shared
        guard options.datagrams, let id = datagramChannel, let key = datagramKey,
              let server = context.channel.remoteAddress else {
            let why = options.datagrams ? "the server offers no UDP" : "datagrams are turned off"
            shared.datagrams.withLock { $0 = (nil, why) }
            return
        }
        shared.datagrams.withLock { $0 = (nil, "opening a UDP socket") }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        // Direct paths need the secret: their key comes from it (a handshake key alone has none).
        let direct = options.directPaths && options.handshakeKey == nil
            ? ClientDatagramLink.DirectSetup(secret: invite.secret, session: invite.session,
                                             deliver: { shared.directProposals.send($0) })
            : nil
        ClientDatagramLink.start(server: server, id: id, key: key, options: options, eventLoop: eventLoop,
                                 deliver: { message, receivedAt in
            if case .appMessage(let app) = message, let tap = shared.appTap.withLock({ $0 }) {
                tap.handler(app, receivedAt)
            } else {
                shared.deliver(message)
            }
        }, clockPong: { sequence, sample in
            // The UDP socket shares this channel's event loop.
            eventLoop.execute { bound.value.clockPongArrived(sequence: sequence, sample, viaDatagram: true) }
        }, deliverTimeline: { timeline in
            shared.deliver(timeline, viaDatagram: true)
        }, direct: direct).whenComplete { result in
            switch result {
            case .success(let link):
                guard case .joined = bound.value.state else { return link.close() }
                bound.value.datagramLink = link
                shared.datagrams.withLock { $0 = (link, "") }
            case .failure(let error):
                shared.datagrams.withLock { $0 = (nil, "cannot open a UDP socket: \(error)") }
            }
        }
    }

    private func stopTimers() {
        if let link = datagramLink {
            link.close()
            datagramLink = nil
            shared.datagrams.withLock { if $0.link === link { $0 = (nil, "the connection is down") } }
        }
        heartbeat?.cancel()
        pingTimer?.cancel()
        for waiter in writabilityWaiters { waiter.fail(TandemClientError.closed(shared.closedReason ?? InvalidationReason(code: .connectionLost, message: "closed"))) }
        writabilityWaiters.removeAll()
    }

    // MARK: Writability

    func whenWritable() -> EventLoopFuture<Void> {
        guard let context else { return welcomePromise.futureResult.eventLoop.makeSucceededVoidFuture() }
        if context.channel.isWritable { return context.eventLoop.makeSucceededVoidFuture() }
        if case .closed = state {
            return context.eventLoop.makeFailedFuture(TandemClientError.closed(
                shared.closedReason ?? InvalidationReason(code: .connectionLost, message: "closed")))
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        writabilityWaiters.append(promise)
        return promise.futureResult
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            let waiters = writabilityWaiters
            writabilityWaiters.removeAll()
            for waiter in waiters { waiter.succeed() }
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Closing

    func closeAfterSending(_ code: WireErrorCode, _ message: String) {
        guard let context else { return }
        if case .closed = state { return }
        state = .closed
        stopTimers()
        shared.finish(InvalidationReason(code: .left, message: message), announce: true)
        let frame = FrameCodec.error(code, message, kind: .close, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in context.close(promise: nil) }
    }

    private func fail(_ error: TandemClientError, reason: InvalidationReason, sendCode: WireErrorCode,
                      final: Bool = true) {
        guard let context else { return }
        if case .closed = state { return }
        state = .closed
        stopTimers()
        welcomePromise.fail(error)
        endLink(reason, final: final)
        let frame = FrameCodec.error(sendCode, reason.message, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case .closed = state { return }
        let tlsFailure = error is TandemTLSError
        let clientError: TandemClientError = tlsFailure ? .tls("\(error)") : .unreachable("\(error)")
        fail(clientError, reason: InvalidationReason(code: .connectionLost, message: "connection failed: \(error)"),
             sendCode: .malformedFrame, final: false)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .closed = state {} else {
            state = .closed
            stopTimers()
            welcomePromise.fail(TandemClientError.unreachable("the server closed the connection during the handshake"))
            endLink(InvalidationReason(code: .connectionLost, message: "the connection to the server was lost"),
                    final: false)
        }
        context.fireChannelInactive()
    }
}

/// What a creation probe learnt other than from a `close` frame.
enum CreationProbeAnswer: Error {
    /// The server does not know probes and created the session (nobody joins it, so it expires).
    case created
}

/// A reconnect's welcome named another participant: the server no longer knew the one to take back.
struct ReconnectIdentityLost: Error {
    let givenID: ParticipantID
}
