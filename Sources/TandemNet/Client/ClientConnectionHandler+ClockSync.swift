import Foundation
import NIOCore
import TandemCore

/// Clock sync on a client's connection: probes over TCP and as datagrams, their answers into the estimator.
extension ClientConnectionHandler {
    func startClockSync(context: ChannelHandlerContext) {
        // The link report (one-way delay, clock error) is the playback coordinator's to send: it reads
        // `clockQuality()` on its ticks.
        sendPing()
    }

    /// An answer to one of this channel's clock probes, over TCP or as a datagram: one more sample for the estimator.
    func clockPongArrived(sequence: UInt32, _ sample: ClockSample, viaDatagram: Bool = false) {
        if case .closed = state { return }
        // Pings overlap when the round trip is longer than the ping interval (a burst, or acquisition on a
        // long path): the answer to an earlier ping is as good a sample as any, since it carries its own t1.
        // Only answers to pings never sent (or from long ago) are ignored.
        guard pingSequence &- sequence < Self.pingsInFlight else { return }
        if viaDatagram { unansweredDatagramPingSince = nil }
        estimator.add(sample)
        shared.deliver(sample)
        let snapshot = ClientShared.ClockState(mapping: estimator.mapping, errorBound: estimator.errorBound,
                                               roundTrip: estimator.roundTrip,
                                               returnDelaySpread: estimator.returnDelaySpread)
        shared.clock.withLock { $0 = snapshot }
    }

    /// Sends the next clock probe: as a datagram while the UDP path works (it does not wait behind the TCP stream),
    /// over TCP otherwise, and over both while datagram probes have gone unanswered for `datagramAckTimeout`.
    func sendPing() {
        guard let context, case .joined = state else { return }
        pingSequence &+= 1
        estimator.pingSent()
        let now = clock.now
        var overTCP = true
        if options.clockProbesOverDatagrams, let link = datagramLink, link.sendClockPing(sequence: pingSequence) {
            let since = unansweredDatagramPingSince ?? now
            unansweredDatagramPingSince = since
            overTCP = options.clockProbesAlsoOverTCP || now - since > options.datagramAckTimeout
        }
        var t1 = now
        if overTCP {
            let frame = FrameCodec.clockPing(sequence: pingSequence, t1: .zero, allocator: context.channel.allocator)
            var body = frame.body
            // t1 is stamped as late as possible, just before the frame goes to the encoder and the socket.
            t1 = clock.now
            body.setInteger(t1.nanoseconds, at: body.readerIndex + 4)
            sentSinceHeartbeat = true
            context.writeAndFlush(wrapOutboundOut(Frame(kind: .clockPing, body: body)), promise: nil)
        }
        lastPing = t1
        var next = estimator.nextPingTime(lastPing: t1)
        // Steady probes (a second apart, 250 ms on a short path) move by up to a tenth of their spacing either way,
        // so that peers that joined together (or came back together after the server restarted) do not probe in
        // lockstep: a server, or a machine running many peers, would get every probe of a batch in one burst.
        let spacing = next - t1
        if spacing >= .milliseconds(100) {
            next = next + TimeSpan(nanoseconds: Int64.random(in: -spacing.nanoseconds / 10...spacing.nanoseconds / 10))
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        pingTimer = context.eventLoop.scheduleTask(in: TimeAmount(max(.milliseconds(1), next - clock.now))) {
            bound.value.sendPing()
        }
    }
}
