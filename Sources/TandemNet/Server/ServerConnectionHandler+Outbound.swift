import TandemCrypto
import Foundation
import Logging
import NIOCore
import TandemCore

extension ServerConnectionHandler {
    // MARK: - Outbound queue, paced by writability and bounded

    /// What an item counts against `maxQueuedBytesPerConnection`. Journal messages share their bytes with the
    /// journal (itself bounded by the attachment limit) and are encoded only when the socket can take them, so
    /// they count only their place in the queue.
    static let queuedMessageCost = 64

    static func cost(of item: Outbound) -> Int {
        switch item {
        case .frame(let frame): return frame.body.readableBytes + 5
        case .message, .storedChunk: return queuedMessageCost
        }
    }

    func adjustQueued(by delta: Int) {
        guard delta != 0 else { return }
        queuedBytes += delta
        server.queuedBytesChanged(by: delta, connectionTotal: queuedBytes)
    }

    func releaseQueue() {
        outbound.removeAll()
        adjustQueued(by: -queuedBytes)
    }

    /// Writes at once while the socket keeps up; otherwise keeps the order and waits for writability. Over the
    /// bound, unreliable app messages are dropped first, then the connection is closed as a slow consumer.
    func enqueue(_ item: Outbound) {
        if case .closed = state { return }
        // Nothing waiting and the socket takes it: a frame is written at once, as the pump below would write it,
        // without passing through the queue (its bytes would be counted in and out again in the same call). A
        // frame of the fan-out — its shared bytes built, within the limit, not the welcome — goes straight from
        // those bytes; the channel is the one kept here, not found through the pipeline for every write.
        if outbound.isEmpty, case .frame(let frame) = item, let writable = channel?.isWritable, writable, let context {
            if frame.kind != .session, let wire = frame.wire, wire.readableBytes - 4 <= configuration.maxFrameSize {
                sentSinceHeartbeat = true
                context.write(wrapOutboundOut(wire), promise: nil)
            } else {
                guard let checked = encodeChecked(item, context: context) else { return }
                context.write(frameBytes(checked), promise: nil)
            }
            flushThisTick(context)
            return
        }
        let cost = Self.cost(of: item)
        outbound.append((item, cost))
        adjustQueued(by: cost)
        pumpOutbound()
        if queuedBytes > configuration.maxQueuedBytesPerConnection { shed() }
    }

    func shed() {
        let before = outbound.count
        var kept = CircularBuffer<(item: Outbound, cost: Int)>(initialCapacity: outbound.count)
        var freed = 0
        for entry in outbound {
            if case .frame(let frame) = entry.item, frame.kind == .appMessage,
               frame.body.getInteger(at: frame.body.readerIndex, as: UInt8.self) == 1 {
                freed += entry.cost
            } else {
                kept.append(entry)
            }
        }
        outbound = kept
        adjustQueued(by: -freed)
        server.noteDroppedUnreliable(before - kept.count)
        guard queuedBytes > configuration.maxQueuedBytesPerConnection else { return }
        var metadata: Logger.Metadata = ["address": "\(address)", "queued": "\(queuedBytes)"]
        if case .joined(let session, let participant) = state {
            metadata["session"] = "\(session.id)"
            metadata["participant"] = "\(participant)"
        }
        logger.info("slow consumer disconnected", metadata: metadata)
        server.noteSlowConsumer()
        closeAfterSending(.slowConsumer,
                          "could not keep up: more than \(configuration.maxQueuedBytesPerConnection) bytes waiting to be sent",
                          immediately: true)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pumpOutbound() }
        context.fireChannelWritabilityChanged()
    }

    /// The frame for `item`, or nil when it cannot be encoded or exceeds the frame limit (then it is dropped
    /// and logged; a welcome that is too large closes this joiner instead).
    func encodeChecked(_ item: Outbound, context: ChannelHandlerContext) -> Frame? {
        let frame: Frame
        switch item {
        case .frame(let f): frame = f
        case .message(let boxed):
            guard let f = try? SessionCodec.encode(boxed.message, allocator: context.channel.allocator) else { return nil }
            frame = f
        case .storedChunk(let stored):
            guard let message = stored.load(),
                  let f = try? SessionCodec.encode(message, allocator: context.channel.allocator) else { return nil }
            frame = f
        }
        let isWelcome: Bool
        if case .joined = state, !welcomeSent, frame.kind == .session {
            welcomeSent = true
            isWelcome = true
        } else {
            isWelcome = false
        }
        guard frame.body.readableBytes + 1 <= configuration.maxFrameSize else {
            logger.warning("dropped an outgoing frame over the frame limit",
                           metadata: ["kind": "\(frame.kind)", "size": "\(frame.body.readableBytes + 1)",
                                      "limit": "\(configuration.maxFrameSize)", "welcome": "\(isWelcome)"])
            if isWelcome {
                closeAfterSending(.frameTooLarge,
                                  "the session's state is larger than the \(configuration.maxFrameSize)-byte frame limit; it cannot be sent to you")
            }
            return nil
        }
        return frame
    }

    func pumpOutbound() {
        guard let context else { return }
        var wrote = false
        // Only while the socket takes it: what NIO holds stays under the high watermark (plus one frame), and
        // the rest waits here, where it is counted and bounded.
        while !outbound.isEmpty, context.channel.isWritable {
            let (item, cost) = outbound.removeFirst()
            adjustQueued(by: -cost)
            guard let frame = encodeChecked(item, context: context) else {
                if case .closed = state { return }
                continue
            }
            context.write(frameBytes(frame), promise: nil)
            wrote = true
        }
        // One flush per connection per loop tick, however many frames the tick's reads fanned out to it. What the
        // socket has not taken still counts against the writability high watermark (NIO counts unflushed bytes),
        // so the loop above stops at the same point as with a flush per frame.
        if wrote { flushThisTick(context) }
    }

    /// Asks for this connection's one flush of the tick, unless it is asked for already.
    func flushThisTick(_ context: ChannelHandlerContext) {
        guard !flushRequested else { return }
        flushRequested = true
        flusher.flushSoon(self, on: context.eventLoop)
    }

    /// The tick's flush (from `TickFlusher`).
    func flushRequestedWrites() {
        flushRequested = false
        context?.flush()
    }
}
