import NIOCore
import NIOWebSocket

/// Carries the native byte stream over a WebSocket: the payloads of binary (and continuation) frames are the
/// stream, framed by the same connection handler, and every encoded Tandem frame leaves as one binary message.
///
/// The stream is all a browser may send: a text frame, an unmasked frame or a frame with reserved bits set
/// closes the connection (1003 / 1002). Pings are answered; a close is answered and ends the connection.
final class WebSocketBridge: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !closing else { return }
        guard frame.maskKey != nil, frame.reservedBits.isEmpty else {
            close(context: context, code: .protocolError)
            return
        }
        switch frame.opcode {
        case .binary, .continuation:
            let payload = frame.unmaskedData
            if payload.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(payload)) }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            close(context: context, code: .normalClosure)
        default:
            close(context: context, code: .unacceptableData)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = WebSocketFrame(fin: true, opcode: .binary, data: unwrapOutboundIn(data))
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    /// Sends a close frame with `code`, then closes the connection once it is written.
    private func close(context: ChannelHandlerContext, code: WebSocketErrorCode) {
        closing = true
        var body = context.channel.allocator.buffer(capacity: 2)
        body.write(webSocketErrorCode: code)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: body)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
    }
}
