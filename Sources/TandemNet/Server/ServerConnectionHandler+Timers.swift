import NIOCore
import TandemCore

/// A connection's timers: the handshake deadline, then the join deadline, and its heartbeat.
extension ServerConnectionHandler {
    /// Starts the handshake timer (it covers the TLS handshake too: it starts when the socket does) and the
    /// heartbeat (the loop's `HeartbeatSweep`). Both hold the handler until `handlerRemoved` lets go (or the
    /// handshake timer fires): strong references, not a weak one, which would give the handler a side table and
    /// send every retain of it (one per recipient of every message) down the run time's slow path.
    func start(context: ChannelHandlerContext) {
        guard handshakeTimer == nil else { return }
        if case .closed = state { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let deadline = handshakeDeadline ?? .now() + TimeAmount(configuration.handshakeTimeout)
        handshakeTimer = context.eventLoop.scheduleTask(deadline: deadline) {
            let handler = bound.value
            guard handler.context != nil else { return }
            switch handler.state {
            case .awaitingHello, .awaitingProof:
                handler.closeAfterSending(.helloTimeout,
                                          "no hello and authentication within \(handler.configuration.handshakeTimeout.seconds) s",
                                          immediately: true)
            default: break
            }
        }
        let sweep = HeartbeatSweep.current(interval: configuration.heartbeatInterval)
        sweepPosition = sweep.add(self, on: context.eventLoop)
        heartbeatSweep = sweep
    }

    /// Replaces the handshake timer with the join deadline (`joinTimeout` from now).
    func scheduleJoinDeadline(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        handshakeTimer = context.eventLoop.scheduleTask(in: TimeAmount(configuration.joinTimeout)) {
            let handler = bound.value
            guard handler.context != nil, case .awaitingJoin = handler.state else { return }
            handler.closeAfterSending(.helloTimeout,
                                      "no join within \(handler.configuration.joinTimeout.seconds) s of authenticating",
                                      immediately: true)
        }
    }

    func stopTimers() {
        if let position = sweepPosition { heartbeatSweep?.remove(at: position) }
        sweepPosition = nil
        heartbeatSweep = nil
        handshakeTimer?.cancel()
        handshakeTimer = nil
    }

    /// One heartbeat interval has passed (`HeartbeatSweep`).
    func heartbeatTick() {
        guard let context else { return }
        if case .closed = state { return }
        let silence = clock.now - lastReceived
        if silence > configuration.heartbeatTimeout {
            closeAfterSending(.heartbeatTimeout, "nothing heard for \(configuration.heartbeatTimeout.seconds) s",
                              immediately: true)
            return
        }
        if Heartbeat.shouldPing(sentSinceLastTick: sentSinceHeartbeat, silence: silence,
                                interval: configuration.heartbeatInterval) {
            context.writeAndFlush(frameBytes(FrameCodec.empty(.heartbeatPing, allocator: context.channel.allocator)),
                                  promise: nil)
        }
        sentSinceHeartbeat = false
    }
}
