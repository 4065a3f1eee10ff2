import NIOCore

extension ServerConnectionHandler {
    // MARK: - Framing: the connection's bytes into frames, in this handler

    /// Frames what has arrived and handles each whole frame in order. The framing is done here rather than by a
    /// generic decoder in front of this handler: that one ran unspecialised (its type's metadata looked up at run
    /// time for every read) and passed each frame on boxed, the largest per-message costs left on the read path.
    ///
    /// Bounded as before: a frame's length is checked against the connection's limit as soon as its first bytes
    /// are in, so what is held here is at most one frame within the limit plus one read. Every frame of a read
    /// is stamped with the read's time.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .closed = state { return }
        var bytes = unwrapInboundIn(data)
        if inbound == nil {
            inbound = bytes
        } else {
            inbound!.writeBuffer(&bytes)
        }
        let now = clock.now
        do {
            while let frame = try FrameDecoder.nextFrame(from: &inbound!, maxFrameSize: frameLimit.value, receivedAt: now) {
                receive(frame, context: context)
                if case .closed = state {
                    inbound = nil
                    return
                }
            }
        } catch {
            inbound = nil
            logger.debug("bad frame", metadata: ["error": "\(error)"])
            closeAfterSending(error.code, error.description, immediately: true)
            return
        }
        keepRemainder(allocator: context.channel.allocator)
    }

    /// After a read: lets go of the read's buffer when every byte was framed, and otherwise keeps only the part
    /// of a frame still to come, in a buffer of this handler's own (so the read's buffer can be used again).
    private func keepRemainder(allocator: ByteBufferAllocator) {
        guard var rest = inbound, rest.readableBytes > 0 else {
            inbound = nil
            return
        }
        guard rest.readerIndex > 0 else { return }  // nothing framed from it yet: it is all the partial frame
        var compact = allocator.buffer(capacity: rest.readableBytes)
        compact.writeBuffer(&rest)
        inbound = compact
    }
}
