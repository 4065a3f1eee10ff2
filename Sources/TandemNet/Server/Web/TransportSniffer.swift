import NIOCore
import TandemCore

/// The first handler of a connection on a server that also serves the browser page (after TLS, when TLS is on):
/// tells an HTTP request from a Tandem frame by the first byte and sets the rest of the pipeline up for it.
///
/// A Tandem frame starts with the high byte of its length, which is 0 for any frame a server accepts; an HTTP
/// request starts with its method, in capitals. Until that byte arrives the connection is bounded by the
/// handshake deadline like any other: one that says nothing gets `helloTimeout`, as on a native-only server.
final class TransportSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Adds the handlers for each kind of connection behind the sniffer (synchronously, on the channel's loop).
    struct Setup {
        var native: (any Channel) throws -> Void
        var web: (any Channel) throws -> Void
    }

    private let setup: Setup
    private let deadline: NIODeadline
    private var timer: Scheduled<Void>?
    private var decided = false

    init(setup: Setup, deadline: NIODeadline) {
        self.setup = setup
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startTimer(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(context: context)
        context.fireChannelActive()
    }

    private func startTimer(context: ChannelHandlerContext) {
        guard timer == nil, !decided else { return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let context = bound.value
            var bytes = context.channel.allocator.buffer(capacity: 96)
            let frame = FrameCodec.error(.helloTimeout, "no hello and authentication in time", allocator: context.channel.allocator)
            try? FrameEncoder().encode(data: frame, out: &bytes)
            context.writeAndFlush(NIOAny(bytes), promise: nil)
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return }
        decided = true
        timer?.cancel()
        timer = nil
        let isHTTP = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first)
        do {
            try (isHTTP ? setup.web : setup.native)(context.channel)
        } catch {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
