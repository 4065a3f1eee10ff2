import CTandemTLS
import NIOCore
import NIOTLS

/// TLS in a channel's pipeline, from OpenSSL's libssl over memory buffers: ciphertext below it, plaintext above.
///
/// A client starts the handshake as soon as the channel is active (or at once when added to an active channel, as
/// after STARTTLS); what is written before the handshake is done waits, and goes out encrypted after it. When the
/// handshake is done (and a pinned certificate matched) the handler fires `TLSUserEvent.handshakeCompleted`. A
/// failure is fired as `TandemTLSError` and closes the channel; so does a connection that ends without the peer's
/// close_notify (`uncleanShutdown`). Closing sends close_notify and closes the socket when the peer's comes back
/// (what arrives meanwhile is read and dropped, so nothing unread makes the close a reset that could lose what was
/// just sent), or `shutdownTimeout` after; a second close, or one through the context below this handler, is at once.
/// What it holds is bounded by what the peer sends in one read (at most one incomplete TLS record, 16 KiB, waits).
public final class TLSHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State { case idle, handshaking, open, closing, closed }

    private let context: TLSContext
    private let tls: OpaquePointer
    private let isServer: Bool
    private let pin: [UInt8]?
    private var state = State.idle
    /// Writes made before the handshake was done, in order.
    private var waiting: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var flushWaiting = false
    /// While closing: the close's promise, and when it goes ahead without the peer's close_notify.
    private var closePromise: EventLoopPromise<Void>?
    private var closeDeadline: Scheduled<Void>?
    /// How long a close waits for the peer's close_notify.
    public static let shutdownTimeout = TimeAmount.seconds(2)

    /// A server's end of a connection, with `context`'s certificate.
    public static func server(context: TLSContext) throws(TandemTLSError) -> TLSHandler {
        try TLSHandler(context: context, server: true, peerName: nil, pin: nil)
    }

    /// A client's end. `serverName` (a host name or a literal address) is what `context` checks the certificate
    /// against, and names the server (SNI); `pinnedSHA256`, with a pinning context, is the SHA-256 the DER of the
    /// server's certificate must have.
    public static func client(context: TLSContext, serverName: String?,
                              pinnedSHA256: [UInt8]? = nil) throws(TandemTLSError) -> TLSHandler {
        try TLSHandler(context: context, server: false, peerName: serverName, pin: pinnedSHA256)
    }

    private init(context: TLSContext, server: Bool, peerName: String?, pin: [UInt8]?) throws(TandemTLSError) {
        guard let tls = tdm_tls_new(context.pointer, server ? 1 : 0, peerName) else {
            let name = peerName.map { " for \($0)" } ?? ""
            throw .configuration("cannot start TLS\(name) (out of memory, or a name TLS cannot use)")
        }
        self.context = context
        self.tls = tls
        self.isServer = server
        self.pin = pin
    }

    deinit { tdm_tls_free(tls) }

    // MARK: Inbound

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard state != .closed else { return }
        let bytes = unwrapInboundIn(data)
        if state == .idle { state = .handshaking }
        let fed = bytes.withUnsafeReadableBytes { raw in
            raw.isEmpty ? 1 : tdm_tls_feed(tls, raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
        }
        guard fed == 1 else {
            fail(context, .failed("out of memory for TLS input"))
            return
        }
        if state == .closing { drainWhileClosing(context) } else { advance(context) }
    }

    /// What arrives after our close_notify is read and dropped, until the peer's (or a failure) ends the close.
    private func drainWhileClosing(_ context: ChannelHandlerContext) {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while state == .closing {
            let result = tdm_tls_read(tls, &scratch, scratch.count)
            if result == 0 { return }
            if result < 0 { finishClose(context) }
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        let ended = state
        state = .closed
        failWaiting(ChannelError.ioOnClosedChannel)
        closeDeadline?.cancel()
        closePromise.take()?.succeed()
        if ended == .handshaking || ended == .open {
            context.fireErrorCaught(TandemTLSError.uncleanShutdown)
        }
        context.fireChannelInactive()
    }

    // MARK: Outbound

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = unwrapOutboundIn(data)
        switch state {
        case .idle, .handshaking:
            waiting.append((bytes, promise))
        case .open:
            encrypt(context, bytes, promise: promise)
        case .closing, .closed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        if state == .open {
            context.flush()
        } else {
            flushWaiting = true
        }
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch (state, mode) {
        case (_, .input):
            context.close(mode: mode, promise: promise)
        case (.open, .output):
            tdm_tls_shutdown(tls)
            sendPending(context, promise: nil)
            context.flush()
            context.close(mode: mode, promise: promise)
        case (.open, .all):
            tdm_tls_shutdown(tls)
            sendPending(context, promise: nil)
            context.flush()
            state = .closing
            closePromise = promise
            closeDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.shutdownTimeout) {
                self.finishClose(context)
            }
        case (.closing, .all):
            if let promise { closePromise?.futureResult.cascade(to: promise) }
            finishClose(context)
        case (.closing, .output):
            promise?.succeed()
        default:
            if mode == .all {
                state = .closed
                failWaiting(ChannelError.ioOnClosedChannel)
            }
            context.close(mode: mode, promise: promise)
        }
    }

    /// Closes the socket after close_notify went out (the peer's came back, or it was not waited for).
    private func finishClose(_ context: ChannelHandlerContext) {
        guard state == .closing else { return }
        state = .closed
        closeDeadline?.cancel()
        closeDeadline = nil
        context.close(promise: closePromise.take())
    }

    // MARK: Inside

    private func start(_ context: ChannelHandlerContext) {
        guard !isServer, state == .idle else { return }
        state = .handshaking
        advance(context)
    }

    /// Moves the handshake on, then hands up what can be decrypted, and sends what OpenSSL has for the peer.
    private func advance(_ context: ChannelHandlerContext) {
        if state == .handshaking {
            let step = tdm_tls_handshake(tls)
            sendPending(context, promise: nil)
            context.flush()
            switch step {
            case 1:
                if let pin {
                    var digest = [UInt8](repeating: 0, count: 32)
                    guard tdm_tls_peer_sha256(tls, &digest) == 1, digest == pin else {
                        fail(context, .pinMismatch)
                        return
                    }
                }
                state = .open
                context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: nil))
                guard state == .open else { return }
                let pending = waiting
                waiting = []
                for (bytes, promise) in pending { encrypt(context, bytes, promise: promise) }
                if flushWaiting || !pending.isEmpty {
                    flushWaiting = false
                    context.flush()
                }
            case 0:
                return
            default:
                fail(context, .handshake(lastError()))
                return
            }
        }
        var buffer = context.channel.allocator.buffer(capacity: 16 * 1024)
        while state == .open {
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 16 * 1024) { raw in
                result = tdm_tls_read(tls, raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
                return max(result, 0)
            }
            if result > 0 {
                context.fireChannelRead(wrapInboundOut(buffer))
                buffer = context.channel.allocator.buffer(capacity: 16 * 1024)
            } else if result == -2 {
                // The peer's close_notify: ours goes back, and the connection closes.
                tdm_tls_shutdown(tls)
                sendPending(context, promise: nil)
                context.flush()
                state = .closed
                failWaiting(ChannelError.ioOnClosedChannel)
                context.close(promise: nil)
                return
            } else if result == -1 {
                fail(context, .failed(lastError()))
                return
            } else {
                break
            }
        }
        if state == .open, tdm_tls_pending(tls) > 0 {  // a key update or a ticket's answer
            sendPending(context, promise: nil)
            context.flush()
        }
    }

    private func encrypt(_ context: ChannelHandlerContext, _ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) {
        let written = bytes.withUnsafeReadableBytes { raw in
            raw.isEmpty ? 1 : tdm_tls_write(tls, raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
        }
        guard written == 1 else {
            promise?.fail(TandemTLSError.failed(lastError()))
            fail(context, .failed(lastError()))
            return
        }
        sendPending(context, promise: promise)
    }

    /// Writes what OpenSSL has for the peer (without flushing); `promise` completes with it.
    private func sendPending(_ context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let pending = tdm_tls_pending(tls)
        guard pending > 0 else {
            promise?.succeed()
            return
        }
        var out = context.channel.allocator.buffer(capacity: pending)
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { raw in
            tdm_tls_take(tls, raw.bindMemory(to: UInt8.self).baseAddress, pending)
        }
        context.write(wrapOutboundOut(out), promise: promise)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: TandemTLSError) {
        guard state != .closed else { return }
        state = .closed
        failWaiting(error)
        closeDeadline?.cancel()
        sendPending(context, promise: nil)  // an alert OpenSSL wrote, if any
        context.flush()
        context.fireErrorCaught(error)
        context.close(promise: closePromise.take())
    }

    private func failWaiting(_ error: any Error) {
        let pending = waiting
        waiting = []
        for (_, promise) in pending { promise?.fail(error) }
    }

    private func lastError() -> String {
        var text = [CChar](repeating: 0, count: 256)
        tdm_tls_error(tls, &text, text.count)
        return TandemTLS.text(text)
    }
}
