import TandemCrypto
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import TandemCore

/// One TCP connection's UDP side: a socket of its own that says hello to the server's UDP port (same port as the
/// TCP listener) every `helloInterval` (left out when a clock ping went as a datagram within it: the server takes a
/// ping as a hello), takes the server's answers as proof that the path works, and sends unreliable
/// app messages as datagrams while it does. Without an answer for `ackTimeout` the path falls back to TCP (the
/// hellos go on, saying "do not send me datagrams"); the next answer brings it back.
///
/// Sendable by hand: `key` (a `SymmetricKey`) is immutable after `init`; everything that changes is in `state`.
final class ClientDatagramLink: @unchecked Sendable {
    private struct State {
        var status: DatagramStatus
        var sendSequence: UInt64 = 0
        var replay = ReplayWindow()
        var lastAck: LocalInstant?
        /// When the latest clock ping went out as a datagram.
        var lastPing: LocalInstant?
        var started: LocalInstant
        var timer: RepeatedTask?
        /// The kernel's departure stamps of the latest probes, by sequence (at most `departuresKept`).
        var departures: [(sequence: UInt32, at: LocalInstant)] = []
        /// Answers waiting for their send stamp (`clockPongStamp`), by sequence, with the `t3` they carry.
        var held: [UInt32: (sample: ClockSample, t1Stamped: Bool)] = [:]
        /// Whether the server follows its answers with their send stamps: learned from the first stamp that comes,
        /// forgotten after `followUpMissesAllowed` answers in a row went without.
        var followUps = false
        var followUpMisses = 0
    }

    /// How many probes' departure stamps are kept for their answers.
    static let departuresKept = 16
    /// How long an answer waits for its send stamp before it is taken with the `t3` it carries.
    static let followUpWait = TimeSpan.milliseconds(20)
    static let followUpMissesAllowed = 3
    /// The most answers held at once (a probe burst is fewer).
    static let heldAtMost = 8
    /// How much later than the `t3` in an answer its stamped departure may be (the server's seal and send).
    static let plausibleSendDelay = TimeSpan.milliseconds(50)

    private let channel: any Channel
    private let server: SocketAddress
    let id: UInt64
    let key: SymmetricKey
    private let clock: any MonotonicClock
    private let ackTimeout: TimeSpan
    private let helloInterval: TimeSpan
    private let state: Mutex<State>
    /// Where an accepted unreliable app message goes, with its arrival time (ns of the local clock).
    private let deliver: @Sendable (ServerMessage, LocalInstant) -> Void
    /// Where the answer to a clock probe goes (its sequence and the sample), on the link's event loop.
    private let clockPong: @Sendable (UInt32, ClockSample) -> Void
    /// Where a timeline's datagram copy goes (`ClientShared.deliver(_:viaDatagram:)` decides whether it is acted on).
    private let deliverTimeline: @Sendable (Timeline) -> Void
    /// Whether the hellos ask for copies of timelines (`TandemClient.Options.timelinesOverDatagrams`).
    private let wantsTimelines: Bool
    /// The simulated path datagrams cross, if any (`TandemClient.Options.datagramDelays`).
    private let delays: (@Sendable (_ toServer: Bool) -> Int64?)?
    /// The socket probes leave from when their departure is stamped (`KernelSendStamps`), beside the channel's.
    private let sendStamps: KernelSendStamps?
    /// Whether the hellos ask for each answer's send stamp (`TandemClient.Options.kernelSendStamps`).
    private let wantsSendStamps: Bool
    /// The direct paths to the session's other peers, when this link shares its endpoint
    /// (`TandemClient.Options.directPaths`, and a client that knows the secret).
    private(set) var direct: DirectPeering?

    /// What a link needs for direct paths: the invite's secret and session, and where proposals go.
    struct DirectSetup: Sendable {
        var secret: String
        var session: String
        var deliver: @Sendable (DirectProposal) -> Void
    }

    private init(channel: any Channel, server: SocketAddress, id: UInt64, key: SymmetricKey,
                 clock: any MonotonicClock, ackTimeout: TimeSpan, helloInterval: TimeSpan,
                 deliver: @escaping @Sendable (ServerMessage, LocalInstant) -> Void,
                 clockPong: @escaping @Sendable (UInt32, ClockSample) -> Void,
                 deliverTimeline: @escaping @Sendable (Timeline) -> Void, wantsTimelines: Bool,
                 delays: (@Sendable (_ toServer: Bool) -> Int64?)?, sendStamps: KernelSendStamps?,
                 wantsSendStamps: Bool) {
        self.sendStamps = sendStamps
        self.wantsSendStamps = wantsSendStamps
        self.deliverTimeline = deliverTimeline
        self.wantsTimelines = wantsTimelines
        self.delays = delays
        self.channel = channel
        self.server = server
        self.id = id
        self.key = key
        self.clock = clock
        self.ackTimeout = ackTimeout
        self.helloInterval = helloInterval
        self.deliver = deliver
        self.clockPong = clockPong
        state = Mutex(State(status: DatagramStatus(path: .tcp(reason: "waiting for the server's answer over UDP")),
                            started: clock.now))
    }

    /// Binds a UDP socket on the event loop `eventLoop` and starts saying hello to `server`.
    static func start(server: SocketAddress, id: UInt64, key: SymmetricKey, options: TandemClient.Options,
                      eventLoop: any EventLoop,
                      deliver: @escaping @Sendable (ServerMessage, LocalInstant) -> Void,
                      clockPong: @escaping @Sendable (UInt32, ClockSample) -> Void = { _, _ in },
                      deliverTimeline: @escaping @Sendable (Timeline) -> Void = { _ in },
                      direct: DirectSetup? = nil)
        -> EventLoopFuture<ClientDatagramLink> {
        let handler = ClientDatagramHandler(clock: options.clock, delays: options.datagramDelays)
        let bootstrap = DatagramBootstrap(group: eventLoop)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DatagramCodec.maxDatagramSize + 1))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
        let anyAddress = server.protocol == .inet6 ? "::" : "0.0.0.0"
        let bound: EventLoopFuture<any Channel>
        // Send stamps need a clock on CLOCK_MONOTONIC and a real path (a simulated one delays the datagram after
        // the kernel stamped it).
        let wantsSendStamps = options.kernelSendStamps && !KernelSendStamps.turnedOff && options.datagramDelays == nil
        var sender: KernelSendStamps?
        if options.kernelReceiveStamps, KernelReceiveStamps.applies(to: options.clock),
           let address = try? SocketAddress(ipAddress: anyAddress, port: 0),
           let stamps = try? KernelReceiveStamps.boundSocket(at: address, sharing: wantsSendStamps) {
            handler.stamps = stamps
            if wantsSendStamps { sender = KernelSendStamps.open(beside: stamps.descriptor) }
            bound = bootstrap.withBoundSocket(stamps.descriptor)
        } else {
            bound = bootstrap.bind(host: anyAddress, port: 0)
        }
        return bound.map { channel in
            let link = ClientDatagramLink(channel: channel, server: server, id: id, key: key, clock: options.clock,
                                          ackTimeout: options.datagramAckTimeout,
                                          helloInterval: options.datagramHelloInterval, deliver: deliver,
                                          clockPong: clockPong, deliverTimeline: deliverTimeline,
                                          wantsTimelines: options.timelinesOverDatagrams, delays: options.datagramDelays,
                                          sendStamps: sender, wantsSendStamps: wantsSendStamps)
            if let direct {
                let peering = DirectPeering(secret: direct.secret, session: direct.session, channel: id,
                                            clock: options.clock, write: { [weak link] datagram, address in
                    link?.write(datagram, to: address)
                }, deliver: direct.deliver)
                peering.ownLocal = LocalEndpoint.toward(server, port: channel.localAddress?.port)
                link.direct = peering
                peering.start(on: channel.eventLoop)
            }
            handler.link.withLock { $0 = link }
            let interval = TimeAmount.nanoseconds(options.datagramHelloInterval.nanoseconds)
            let timer = channel.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: interval) { [weak link] task in
                guard let link else { return task.cancel() }
                link.tick()
            }
            link.state.withLock { $0.timer = timer }
            return link
        }
    }

    var status: DatagramStatus {
        var status = state.withLock { $0.status }
        direct?.fill(&status)
        return status
    }

    func close() {
        state.withLock { $0.timer }?.cancel()
        direct?.stop()
        sendStamps?.close()
        channel.close(promise: nil)
    }

    /// Sends an unreliable app message as a datagram while the UDP path works; false when it must go over TCP
    /// (the path is down, or the datagram would be larger than `DatagramCodec.maxSentDatagramSize`).
    func sendUnreliable(_ message: ClientMessage) -> Bool {
        guard state.withLock({ $0.status.path == .udp }), let datagram = datagram(for: message) else { return false }
        state.withLock { $0.status.messagesSent += 1 }
        write(datagram)
        return true
    }

    /// The next datagram carrying `message` (it takes the next sequence number), or nil when it would be larger
    /// than `DatagramCodec.maxSentDatagramSize`.
    func datagram(for message: ClientMessage) -> ByteBuffer? {
        guard let frame = try? SessionCodec.encode(message, allocator: channel.allocator),
              frame.body.readableBytes + DatagramCodec.headerSize + DatagramCodec.tagSize
                <= DatagramCodec.maxSentDatagramSize else { return nil }
        return seal(.appMessage, body: frame.body)
    }

    /// Sends a copy of a timeline request (one with its `copy` number) as a datagram while the UDP path works; false
    /// when it did not go (the TCP frame goes in any case).
    @discardableResult
    func sendRequestCopy(_ message: ClientMessage) -> Bool {
        guard state.withLock({ $0.status.path == .udp }),
              let frame = try? SessionCodec.encode(message, allocator: channel.allocator), frame.kind == .session,
              frame.body.readableBytes + DatagramCodec.headerSize + DatagramCodec.tagSize
                <= DatagramCodec.maxSentDatagramSize,
              let datagram = seal(.timelineRequest, body: frame.body) else { return false }
        state.withLock { $0.status.requestsSent += 1 }
        write(datagram)
        return true
    }

    /// Sends a clock probe as a datagram while the UDP path works (`t1` stamped just before it is sealed); false
    /// when it must go over TCP.
    func sendClockPing(sequence: UInt32) -> Bool {
        guard state.withLock({ $0.status.path == .udp }) else { return false }
        var body = channel.allocator.buffer(capacity: 12)
        body.writeInteger(sequence)
        body.writeInteger(clock.now.nanoseconds)
        guard let datagram = seal(.clockPing, body: body) else { return false }
        let now = clock.now
        state.withLock {
            $0.status.clockPingsSent += 1
            $0.lastPing = now
        }
        if let sendStamps, delays == nil {
            let result = sendStamps.send(datagram, to: server)
            if result.sent {
                state.withLock { state in
                    state.status.sent += 1
                    guard let departure = result.departure else { return }
                    state.status.clockPingsSendStamped += 1
                    state.departures.append((sequence, departure))
                    if state.departures.count > Self.departuresKept { state.departures.removeFirst() }
                }
                return true
            }
        }
        write(datagram)
        return true
    }

    // MARK: Timer and hellos

    private func tick() {
        let now = clock.now
        // nil: no hello this time.
        let wantsDatagrams = state.withLock { state -> Bool? in
            switch state.status.path {
            case .udp:
                if let last = state.lastAck, now - last > ackTimeout {
                    state.status.path = .tcp(reason: "UDP answers stopped for \(Self.text(now - last))")
                    state.status.fallbacks += 1
                }
            case .tcp:
                if state.lastAck == nil, now - state.started > ackTimeout {
                    state.status.path = .tcp(reason: "no answer over UDP within \(Self.text(ackTimeout)); is UDP blocked?")
                }
            }
            let udp = state.status.path == .udp
            // A ping within the interval did a hello's work (revision 3): the server took it as one asking for
            // datagrams, and its answer keeps the path up.
            // Not while sharing the endpoint: the server lists only members whose direct hellos are recent.
            if udp, direct == nil, let ping = state.lastPing, now - ping < helloInterval { return nil }
            return udp
        }
        if let wantsDatagrams { sendHello(wantsDatagrams: wantsDatagrams) }
    }

    private static func text(_ span: TimeSpan) -> String { String(format: "%.1f s", span.seconds) }

    private func sendHello(wantsDatagrams: Bool) {
        var body = channel.allocator.buffer(capacity: 1)
        var flags: UInt8 = wantsDatagrams ? DatagramHelloFlags.unreliable : 0
        if wantsTimelines { flags |= DatagramHelloFlags.timelines }
        if wantsSendStamps { flags |= DatagramHelloFlags.sendStamps }
        if direct != nil { flags |= DatagramHelloFlags.direct | DatagramHelloFlags.local }
        body.writeInteger(flags)
        if let local = direct?.ownLocal { DirectPeerList.writeEndpoint(local, to: &body) }
        send(.hello, body: body)
    }

    private func send(_ type: DatagramType, body: ByteBuffer) {
        if let datagram = seal(type, body: body) { write(datagram) }
    }

    func seal(_ type: DatagramType, body: ByteBuffer) -> ByteBuffer? {
        let sequence = state.withLock { state -> UInt64 in
            state.sendSequence += 1
            return state.sendSequence
        }
        return try? DatagramCodec.seal(type, channel: id, sequence: sequence, body: body, key: key,
                                       direction: .clientToServer, allocator: channel.allocator)
    }

    private func write(_ datagram: ByteBuffer) {
        state.withLock { $0.status.sent += 1 }
        write(datagram, to: server)
    }

    /// Writes a datagram to `address`; on a simulated path, after the path's delay towards the server (for a direct
    /// datagram, one whole one-way delay: the receiving peer adds none).
    private func write(_ datagram: ByteBuffer, to address: SocketAddress) {
        let envelope = AddressedEnvelope(remoteAddress: address, data: datagram)
        guard let delays else { return channel.writeAndFlush(envelope, promise: nil) }
        // A simulated path: the datagram leaves after its delay, or is lost.
        guard let delay = delays(true) else { return }
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: .nanoseconds(max(0, delay))) {
            channel.writeAndFlush(envelope, promise: nil)
        }
    }

    // MARK: Receiving

    /// One datagram from `sender`, read at `receivedAt` (the kernel's stamp for a clock answer where there is one,
    /// `arrival` says which).
    func receive(_ datagram: ByteBuffer, from sender: SocketAddress, receivedAt: LocalInstant,
                 arrival: ClockStampSource) {
        do {
            // The header is read once: a direct datagram goes to the peering, anything else must be the server's.
            let header = try DatagramCodec.header(of: datagram)
            if header.type.isDirect, let direct {
                return direct.receive(datagram, header: header, from: sender, receivedAt: receivedAt)
            }
            guard sender == server, header.channel == id else { throw DatagramRejection.unknownChannel }
            let body = try DatagramCodec.open(datagram, header: header, key: key, direction: .serverToClient)
            let fresh = state.withLock { $0.replay.accept(header.sequence) }
            guard fresh else { throw DatagramRejection.replayed }
            switch header.type {
            case .helloAck:
                let cameBack = state.withLock { state -> Bool in
                    state.status.received += 1
                    state.lastAck = receivedAt
                    guard state.status.path != .udp else { return false }
                    state.status.path = .udp
                    return true
                }
                // Tell the server at once that datagrams reach this peer.
                if cameBack { sendHello(wantsDatagrams: true) }
            case .appMessage:
                guard case .appMessage(let app)? = try? SessionCodec.decodeServerMessage(Frame(kind: .appMessage, body: body)),
                      app.delivery == .unreliable else { throw DatagramRejection.malformed }
                state.withLock {
                    $0.status.received += 1
                    $0.status.messagesReceived += 1
                }
                deliver(.appMessage(app), receivedAt)
            case .clockPong:
                guard body.readableBytes == 28, let sequence = body.getInteger(at: body.readerIndex, as: UInt32.self),
                      let t1 = body.getInteger(at: body.readerIndex + 4, as: Int64.self),
                      let t2 = body.getInteger(at: body.readerIndex + 12, as: Int64.self),
                      let t3 = body.getInteger(at: body.readerIndex + 20, as: Int64.self) else {
                    throw DatagramRejection.malformed
                }
                var sample = ClockSample(t1: LocalInstant(nanoseconds: t1), t2: SessionInstant(nanoseconds: t2),
                                         t3: SessionInstant(nanoseconds: t3), t4: receivedAt, arrival: arrival)
                let hold = state.withLock { state -> Bool in
                    state.status.received += 1
                    state.status.clockPongsReceived += 1
                    if arrival == .kernel { state.status.clockPongsKernelStamped += 1 }
                    // An answer like a helloAck: the path works.
                    if state.status.path == .udp { state.lastAck = receivedAt }
                    // The probe's departure as the kernel stamped it, when it is plausibly this probe's: after the
                    // t1 read before it was sealed, and before the answer came.
                    var t1Stamped = false
                    if let index = state.departures.firstIndex(where: { $0.sequence == sequence }) {
                        let departure = state.departures.remove(at: index).at
                        if departure >= sample.t1, departure - sample.t1 <= Self.plausibleSendDelay,
                           (receivedAt - departure) - (sample.t3 - sample.t2) >= .zero {
                            sample.t1 = departure
                            t1Stamped = true
                        }
                    }
                    guard state.followUps, state.held.count < Self.heldAtMost else { return false }
                    state.held[sequence] = (sample, t1Stamped)
                    return true
                }
                guard hold else {
                    clockPong(sequence, sample)
                    return
                }
                // Wait a little for the server's stamp of when this answer left; without it, take it as it is.
                channel.eventLoop.scheduleTask(in: .nanoseconds(Self.followUpWait.nanoseconds)) { [weak self] in
                    self?.releaseHeld(sequence)
                }
            case .clockPongStamp:
                // Only a peer that asked for them (hello bit 2) takes them.
                guard wantsSendStamps, body.readableBytes == 12,
                      let sequence = body.getInteger(at: body.readerIndex, as: UInt32.self),
                      let departure = body.getInteger(at: body.readerIndex + 4, as: Int64.self) else {
                    throw DatagramRejection.malformed
                }
                let ready = state.withLock { state -> ClockSample? in
                    state.status.received += 1
                    state.followUps = true
                    state.followUpMisses = 0
                    guard let (held, t1Stamped) = state.held.removeValue(forKey: sequence) else { return nil }
                    var sample = held
                    let stamped = SessionInstant(nanoseconds: departure)
                    // After the t3 read before the answer was sealed, and leaving a round trip of zero or more.
                    if stamped >= sample.t3, stamped - sample.t3 <= Self.plausibleSendDelay,
                       (sample.t4 - sample.t1) - (stamped - sample.t2) >= .zero {
                        sample.t3 = stamped
                        state.status.clockPongStampsTaken += 1
                        if t1Stamped {
                            sample.departure = .kernel
                            state.status.clockSamplesSendStamped += 1
                        }
                    }
                    return sample
                }
                if let ready { emit(sequence, ready) }
            case .timeline:
                guard case .timeline(let timeline)? = try? SessionCodec.decodeServerMessage(Frame(kind: .session, body: body))
                else { throw DatagramRejection.malformed }
                state.withLock {
                    $0.status.received += 1
                    $0.status.timelinesReceived += 1
                }
                deliverTimeline(timeline)
            case .directPeers:
                guard let direct, let entries = DirectPeerList.decode(body) else { throw DatagramRejection.malformed }
                state.withLock { $0.status.received += 1 }
                direct.replacePeers(entries)
            case .hello, .clockPing, .timelineRequest, .directPing, .directPong, .directProposal:
                throw DatagramRejection.malformed
            }
        } catch {
            state.withLock { $0.status.rejected += 1 }
        }
    }

    /// An answer that waited `followUpWait` for its send stamp and got none: taken with the `t3` it carries.
    private func releaseHeld(_ sequence: UInt32) {
        let sample = state.withLock { state -> ClockSample? in
            guard let sample = state.held.removeValue(forKey: sequence)?.sample else { return nil }
            state.followUpMisses += 1
            if state.followUpMisses >= Self.followUpMissesAllowed { state.followUps = false }
            return sample
        }
        if let sample { emit(sequence, sample) }
    }

    private func emit(_ sequence: UInt32, _ sample: ClockSample) {
        clockPong(sequence, sample)
    }
}
