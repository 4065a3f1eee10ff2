import NIOCore
import Synchronization
import TandemCore

/// Hands the client's UDP socket's datagrams to its link, with the kernel's arrival stamp for a clock answer.
///
/// Sendable by hand: `stamps` is set once, before the socket becomes a channel (so before any read).
final class ClientDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let link = Mutex<ClientDatagramLink?>(nil)
    let clock: any MonotonicClock
    var stamps: KernelReceiveStamps?
    let delays: (@Sendable (_ toServer: Bool) -> Int64?)?

    init(clock: any MonotonicClock, delays: (@Sendable (_ toServer: Bool) -> Int64?)?) {
        self.clock = clock
        self.delays = delays
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // A direct datagram from another peer was delayed by the whole simulated path when it was sent.
        if let delays, (try? DatagramCodec.header(of: envelope.data))?.type.isDirect != true {
            // A simulated path: the datagram arrives after its delay (stamped then, by the loop), or is lost.
            guard let delay = delays(false) else { return }
            context.eventLoop.scheduleTask(in: .nanoseconds(max(0, delay))) { [self] in
                link.withLock { $0 }?.receive(envelope.data, from: envelope.remoteAddress, receivedAt: clock.now,
                                              arrival: .user)
            }
            return
        }
        // Only a clock answer needs the kernel's stamp.
        let arrival = KernelReceiveStamps.arrival(of: envelope.data, ifType: .clockPong, stamps: stamps, now: clock.now)
        link.withLock { $0 }?.receive(envelope.data, from: envelope.remoteAddress, receivedAt: arrival.at,
                                      arrival: arrival.source)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors for earlier sends (the server's UDP port unreachable): the missing answers say the same.
    }
}
