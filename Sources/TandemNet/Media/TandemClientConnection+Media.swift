import Foundation
import NIOCore

extension TandemClientConnection {
    /// Writes a shared-media frame (`MediaFrames`) on the connection's current channel, once it is back if it is
    /// reconnecting and once the socket can take more.
    func sendMedia(_ build: (ByteBufferAllocator) throws -> Frame) async throws {
        if let reason = shared.closedReason { throw reason }
        try await shared.waitForChannel(limit: options.maxSendsWaitingForReconnect)
        let (channel, handler) = current.withLock { ($0.channel, $0.handler) }
        let frame = try build(channel.allocator)
        if !channel.isWritable {
            try await channel.eventLoop.flatSubmit { handler.value.whenWritable() }.get()
        }
        channel.writeAndFlush(frame, promise: nil)
    }

    /// Writes a shared-media frame on the current channel now, without waiting (dropped while reconnecting: its
    /// requester's request times out at the relay). What it can queue is bounded by the relay, which forwards at most
    /// its session's open requests.
    func sendMediaNow(_ build: (ByteBufferAllocator) throws -> Frame) {
        guard shared.closedReason == nil, !isReconnecting else { return }
        let channel = self.channel
        guard let frame = try? build(channel.allocator) else { return }
        channel.writeAndFlush(frame, promise: nil)
    }

    /// Where the shared-media frames the relay passes to this participant go (replacing the previous receiver).
    func receiveMedia(_ receiver: @escaping @Sendable (Frame) -> Void) {
        shared.media.withLock { $0 = receiver }
    }
}
