import NIOCore

extension ServerConnectionHandler {
    // MARK: - Framing: the connection's bytes into frames, in this handler (`FrameReader`)

    /// Frames what has arrived and handles each whole frame in order, all stamped with the read's time.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .closed = state { return }
        reader.append(unwrapInboundIn(data))
        let now = clock.now
        do {
            while let frame = try reader.next(maxFrameSize: frameLimit.value, receivedAt: now) {
                receive(frame, context: context)
                if case .closed = state {
                    reader.reset()
                    return
                }
            }
        } catch {
            logger.debug("bad frame", metadata: ["error": "\(error)"])
            closeAfterSending(error.code, error.description, immediately: true)
            return
        }
        reader.finishRead(allocator: context.channel.allocator)
    }
}
