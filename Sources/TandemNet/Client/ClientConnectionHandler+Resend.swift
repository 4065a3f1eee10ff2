import NIOCore
import TandemCore

// Answering a `resend` request (docs/PROTOCOL.md, "Resending"): the kept messages a receiver lacks, as they were
// sealed, to it alone, then `resent(to:)` — written at once on this channel's event loop, so nothing this peer sends
// later goes before them.
extension ClientConnectionHandler {
    func resend(_ mark: AppMessageMark, context: ChannelHandlerContext) {
        guard let appData = shared.appData else { return }
        let allocator = context.channel.allocator
        for message in appData.resend(to: mark.participant, after: mark) {
            guard let frame = try? SessionCodec.encode(.appMessage(message), allocator: allocator) else { continue }
            context.write(wrapOutboundOut(frame), promise: nil)
        }
        if let done = try? FrameCodec.json(.session, ClientMessage.resent(to: mark.participant), allocator: allocator) {
            context.write(wrapOutboundOut(done), promise: nil)
        }
        context.flush()
    }
}

extension ClientConnectionHandler {
    /// The most senders a reconnect's `join.received` names (a session holds 32 participants by default).
    static let maxResendMarks = 64
}
