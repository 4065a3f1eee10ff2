import NIOCore
import NIOPosix

/// Flushes the server's connections once per event-loop tick. A burst of reads (several frames from one socket,
/// or many senders whose messages fan out to the same recipients) queues writes on many connections; each
/// connection is flushed once (one `writev`) when the loop has handled the burst, not once per frame.
///
/// One flusher per event-loop thread; it is only touched on that thread.
final class TickFlusher {
    // nonisolated(unsafe): each thread reads and writes only its own value, and a flusher never leaves its thread.
    nonisolated(unsafe) private static let perThread = ThreadSpecificVariable<TickFlusher>()
    /// Connections to flush this tick: each once, since a handler asks only while its `flushRequested` is off.
    private var pending: [ServerConnectionHandler] = []
    private var flushing: [ServerConnectionHandler] = []
    private var scheduled = false

    /// The flusher of the calling thread (an event loop's).
    static var current: TickFlusher {
        if let flusher = perThread.currentValue { return flusher }
        let flusher = TickFlusher()
        perThread.currentValue = flusher
        return flusher
    }

    /// Flushes `handler` once the loop has run what is queued now (reads of this tick and the tasks they queued).
    func flushSoon(_ handler: ServerConnectionHandler, on loop: any EventLoop) {
        pending.append(handler)
        guard !scheduled else { return }
        scheduled = true
        let bound = NIOLoopBound(self, eventLoop: loop)
        loop.execute { bound.value.flushAll() }
    }

    private func flushAll() {
        scheduled = false
        // Two lists used in turn, so a tick allocates nothing; a flush that writes again queues on the other list.
        swap(&pending, &flushing)
        for handler in flushing { handler.flushRequestedWrites() }
        flushing.removeAll(keepingCapacity: true)
    }
}
