import NIOCore
import TandemCore
import TandemNet

/// A simulated network path for one connection: how long each chunk of bytes takes to cross it in each direction.
///
/// There is no network impairment in the kernel to lean on (no netem), so benchmarks and drills put this between
/// the socket and the frame codec of a client connection (`TandemClient.Options.impair(with:)`). The real session
/// server and client code run unchanged above it.
public protocol NetworkImpairment: Sendable {
    /// Extra one-way delay (ns) for the next chunk going to the server; nil when the chunk is "lost" and must be
    /// retransmitted (it then arrives after `retransmissionTimeout`, holding back what follows, as TCP does).
    func nextUpDelay() -> Int64?
    /// The same for the next chunk coming from the server.
    func nextDownDelay() -> Int64?
    /// How long a lost chunk takes to be retransmitted (ns).
    var retransmissionTimeout: Int64 { get }
}

/// Delays what crosses a channel according to a `NetworkImpairment`, keeping each direction in order.
///
/// Outbound writes are held and written (and flushed) at their release time; inbound reads are handed on at
/// theirs. A chunk never overtakes the one before it in its direction, so a loss holds back what follows, like
/// TCP's head-of-line blocking. The end of the connection (or an error) is passed on when it happens, after every
/// read still on its way is handed on at once (a closed channel's handlers leave its pipeline: nothing delayed past
/// the close would arrive).
final class NetworkImpairmentHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let impairment: any NetworkImpairment
    private let clock: any MonotonicClock
    private var lastUpRelease: Int64 = .min
    private var lastDownRelease: Int64 = .min

    /// `clock` must read CLOCK_MONOTONIC: release times become NIO deadlines.
    init(impairment: any NetworkImpairment, clock: any MonotonicClock = SystemMonotonicClock()) {
        self.impairment = impairment
        self.clock = clock
    }

    private func release(after last: inout Int64, delay: Int64?) -> Int64 {
        let now = clock.now.nanoseconds
        let wanted = now + (delay ?? impairment.retransmissionTimeout)
        last = max(wanted, last)
        return last
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let at = release(after: &lastUpRelease, delay: impairment.nextUpDelay())
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, at)))) {
            bound.value.writeAndFlush(data, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        // Each write is flushed when it is released.
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let at = release(after: &lastDownRelease, delay: impairment.nextDownDelay())
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, at)))) {
            bound.value.handler.releaseFirstRead(context: bound.value.context)
        }
        pendingReads.append((task, data))
    }

    /// Reads on their way, oldest first (released in order; each task releases the oldest).
    private var pendingReads: [(task: Scheduled<Void>, data: NIOAny)] = []

    private func releaseFirstRead(context: ChannelHandlerContext) {
        guard !pendingReads.isEmpty else { return }
        context.fireChannelRead(pendingReads.removeFirst().data)
    }

    /// Hands on every read still on its way at once: the channel is closing, and once it is closed its handlers
    /// leave the pipeline, so nothing released later would arrive (the last message before a close, e.g. `ended`,
    /// would be lost and the close itself unseen).
    private func releaseAllReads(context: ChannelHandlerContext) {
        let all = pendingReads
        pendingReads.removeAll()
        for (task, data) in all {
            task.cancel()
            context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Reads are handed on one by one at their release times.
    }

    /// An error (a reset when the far end closes with unread data) comes after the reads before it.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        releaseAllReads(context: context)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        releaseAllReads(context: context)
        context.fireChannelInactive()
    }
}

extension TandemClient.Options {
    /// Puts a simulated network path between the client and the server: whole frames are delayed (or held back by a
    /// loss) on their way in each direction; arrival times are taken on this side of the path. The path is the TCP
    /// connection's, so clock probes stay on it (a datagram's kernel receive stamp would be taken before its simulated
    /// delay): clock sync runs over the simulated path. Datagrams (unreliable messages, copies of timelines) cross
    /// the same path, each delayed on its own, and a lost one is gone.
    public mutating func impair(with impairment: any NetworkImpairment) {
        transportHandlers = { [NetworkImpairmentHandler(impairment: impairment)] }
        clockProbesOverDatagrams = false
        // Datagrams cross the same path: each its own delay, and a lost one is gone (no retransmission).
        datagramDelays = { toServer in toServer ? impairment.nextUpDelay() : impairment.nextDownDelay() }
    }
}
