import TandemCrypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TandemCore

/// The server's UDP side: a socket bound beside the TCP listener (same address and port) that takes members'
/// unreliable app messages as datagrams and relays unreliable messages to members whose UDP endpoint works.
///
/// A connection gets a channel id and a key at `accepted` (`DatagramKey`); once it has joined it is registered here
/// with its participant. Its UDP endpoint is learned only from an authenticated hello; the server never sends a
/// datagram anywhere else, and each member has one endpoint at a time. Every datagram is checked (size, format,
/// channel, tag, replay window, the member's datagram rate) before anything else happens; a rejected one is counted
/// and dropped, and nothing else changes.
final class DatagramRelay: Sendable {
    /// One registered connection. Sendable by hand: `key` (a `SymmetricKey`) is immutable; the rest is Sendable.
    struct Member: @unchecked Sendable {
        let key: SymmetricKey
        let session: HostedSession
        let participant: ParticipantID
        let connection: ServerConnection
        var endpoint: SocketAddress?
        /// When the latest authenticated hello arrived, and whether it asked for datagrams.
        var lastHello: LocalInstant?
        var wantsDatagrams = false
        /// Whether the latest hello asked for copies of timelines (a clock ping leaves it as it was).
        var wantsTimelines = false
        /// Whether the latest hello asked for each clock answer's send stamp (a clock ping leaves it as it was).
        var wantsSendStamps = false
        /// Whether the latest hello shared this member's endpoint with the session's other members that share theirs
        /// (a clock ping leaves it as it was), and when the latest such hello came.
        var wantsDirect = false
        var lastDirectHello: LocalInstant?
        /// Whether the latest hello asked for the others' local endpoints, and the one it gave as its own.
        var wantsLocal = false
        var localEndpoint: SocketAddress?
        var replay = ReplayWindow()
        var sendSequence: UInt64 = 0
        var rate: DatagramRateLimit
    }

    /// Counters of what happened to datagrams (`SessionServer.datagramStatistics`).
    struct Counters: Sendable, Hashable {
        var received = 0
        var sent = 0
        var oversized = 0
        var malformed = 0
        var unknownChannel = 0
        var badAuthentication = 0
        var replayed = 0
        var rateLimited = 0
        var clockPingsAnswered = 0
        var clockPingsKernelStamped = 0
        /// Clock answers whose departure the kernel stamped and sent after them (`clockPongStamp`).
        var clockPongsSendStamped = 0
        /// Copies of timelines sent as datagrams (beside their TCP frames).
        var timelineCopies = 0
        /// Copies of timeline requests taken as datagrams (acted on only when they came before their TCP frame).
        var requestCopies = 0
        /// Lists of direct peers sent (`directPeers`, answering hellos with the direct flag).
        var directLists = 0
    }

    private let members = Mutex<[UInt64: Member]>([:])
    /// The channels registered for each session, so that a direct list looks at one session's members only.
    private let sessionChannels = Mutex<[ObjectIdentifier: Set<UInt64>]>([:])
    private let counters = Mutex(Counters())
    private let channel = Mutex<(any Channel)?>(nil)
    /// The socket clock answers leave from when their send is stamped (`KernelSendStamps`), beside the channel's.
    private let sendStamps = Mutex<KernelSendStamps?>(nil)
    private let configuration: ServerConfiguration
    private let clock: any MonotonicClock
    /// Test hook: drop every incoming datagram before looking at it (a blocked UDP path).
    let dropsIncoming = Atomic<Bool>(false)
    /// Test hook: stamp clock answers but send no `clockPongStamp` after them (stamps lost on the way).
    let withholdsSendStamps = Atomic<Bool>(false)

    init(configuration: ServerConfiguration, clock: any MonotonicClock) {
        self.configuration = configuration
        self.clock = clock
    }

    /// Binds the UDP socket on `host:port` (the TCP listener's); nil when it cannot (the server then offers no
    /// datagrams and unreliable messages go over TCP).
    static func start(host: String, port: Int, group: any EventLoopGroup, configuration: ServerConfiguration,
                      clock: any MonotonicClock, logger: Logger) async -> DatagramRelay? {
        let relay = DatagramRelay(configuration: configuration, clock: clock)
        let handler = DatagramServerHandler(relay: relay, clock: clock)
        let bootstrap = DatagramBootstrap(group: group)
            // One byte more than the largest datagram accepted, so a longer one shows as oversized, not cut.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DatagramCodec.maxDatagramSize + 1))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        do {
            let channel: any Channel
            if configuration.kernelReceiveStamps, KernelReceiveStamps.applies(to: clock) {
                let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
                let sending = configuration.kernelSendStamps && !KernelSendStamps.turnedOff
                let stamps = try KernelReceiveStamps.boundSocket(at: address, sharing: sending)
                handler.stamps = stamps
                // Opened before the channel reads anything, so that every datagram already goes to the channel.
                let sender = sending ? KernelSendStamps.open(beside: stamps.descriptor) : nil
                relay.sendStamps.withLock { $0 = sender }
                channel = try await bootstrap.withBoundSocket(stamps.descriptor).get()
            } else {
                channel = try await bootstrap.bind(host: host, port: port).get()
            }
            relay.channel.withLock { $0 = channel }
            return relay
        } catch {
            logger.warning("no UDP socket beside the listener: unreliable messages go over TCP",
                           metadata: ["port": "\(port)", "error": "\(error)"])
            return nil
        }
    }

    func close() async {
        sendStamps.withLock { $0 }?.close()
        try? await channel.withLock { $0 }?.close()
    }

    var statistics: Counters { counters.withLock { $0 } }

    /// A fresh channel id for a connection that has just authenticated (53 bits, so that JSON readers in any
    /// language keep it exact).
    static func newChannelID() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return UInt64.random(in: 1...(1 << 53 - 1), using: &generator)
    }

    func register(channel id: UInt64, key: SymmetricKey, session: HostedSession, participant: ParticipantID,
                  connection: ServerConnection) {
        let member = Member(key: key, session: session, participant: participant, connection: connection,
                            rate: DatagramRateLimit(perSecond: configuration.datagramsPerSecond,
                                                    burst: configuration.datagramsPerSecond, now: clock.now))
        members.withLock { $0[id] = member }
        sessionChannels.withLock { $0[ObjectIdentifier(session), default: []].insert(id) }
    }

    func unregister(channel id: UInt64) {
        guard let member = members.withLock({ $0.removeValue(forKey: id) }) else { return }
        let session = ObjectIdentifier(member.session)
        sessionChannels.withLock { channels in
            channels[session]?.remove(id)
            if channels[session]?.isEmpty == true { channels.removeValue(forKey: session) }
        }
    }

    var memberCount: Int { members.withLock { $0.count } }

    private func count(_ rejection: DatagramRejection) {
        counters.withLock { c in
            switch rejection {
            case .oversized: c.oversized += 1
            case .malformed: c.malformed += 1
            case .unknownChannel: c.unknownChannel += 1
            case .badAuthentication: c.badAuthentication += 1
            case .replayed: c.replayed += 1
            case .rateLimited: c.rateLimited += 1
            }
        }
    }

    // MARK: Receiving

    /// One datagram from `sender` (on the UDP channel's loop), read at `receivedAt`: a clock probe's t2, the
    /// kernel's stamp of its arrival where there is one (`arrival`), else the clock read first thing, as the TCP
    /// path takes it when the frame is read.
    func receive(_ datagram: ByteBuffer, from sender: SocketAddress, receivedAt: LocalInstant,
                 arrival: ClockStampSource = .user, allocator: ByteBufferAllocator) {
        if dropsIncoming.load(ordering: .relaxed) { return }
        do {
            try handle(datagram, from: sender, receivedAt: receivedAt, arrival: arrival, allocator: allocator)
            counters.withLock { $0.received += 1 }
        } catch {
            count(error)
        }
    }

    private func handle(_ datagram: ByteBuffer, from sender: SocketAddress, receivedAt: LocalInstant,
                        arrival: ClockStampSource, allocator: ByteBufferAllocator) throws(DatagramRejection) {
        let header = try DatagramCodec.header(of: datagram)
        guard let key = members.withLock({ $0[header.channel]?.key }) else { throw .unknownChannel }
        let body = try DatagramCodec.open(datagram, header: header, key: key, direction: .clientToServer)
        // Only an authenticated datagram moves the replay window, the rate and the endpoint.
        let now = clock.now
        let member: Member = try members.withLock { members throws(DatagramRejection) -> Member in
            guard var member = members[header.channel] else { throw .unknownChannel }
            guard member.replay.accept(header.sequence) else {
                members[header.channel] = member
                throw .replayed
            }
            guard member.rate.admit(now: now) else {
                members[header.channel] = member
                throw .rateLimited
            }
            if header.type == .hello {
                guard let flags = body.getInteger(at: body.readerIndex, as: UInt8.self) else {
                    members[header.channel] = member
                    throw .malformed
                }
                member.endpoint = sender
                member.lastHello = now
                member.wantsDatagrams = flags & DatagramHelloFlags.unreliable != 0
                member.wantsTimelines = flags & DatagramHelloFlags.timelines != 0
                member.wantsSendStamps = flags & DatagramHelloFlags.sendStamps != 0
                member.wantsDirect = flags & DatagramHelloFlags.direct != 0
                if member.wantsDirect { member.lastDirectHello = now }
                member.wantsLocal = member.wantsDirect && flags & DatagramHelloFlags.local != 0
                member.localEndpoint = member.wantsLocal ? DirectPeerList.localEndpoint(inHello: body) : nil
            } else if header.type == .clockPing {
                // Revision 3: a ping does a hello's work — a client pings over UDP only while datagrams reach it —
                // so that a client that pings needs no hellos in between.
                member.endpoint = sender
                member.lastHello = now
                member.wantsDatagrams = true
            }
            members[header.channel] = member
            return member
        }
        switch header.type {
        case .hello:
            var ack = allocator.buffer(capacity: 8)
            ack.writeInteger(header.sequence)
            send(.helloAck, body: ack, channel: header.channel, to: sender)
            if member.wantsDirect {
                let body = DirectPeerList.encode(directPeers(of: header.channel, now: now),
                                                 withLocal: member.wantsLocal, allocator: allocator)
                if send(.directPeers, body: body, channel: header.channel, to: sender) {
                    counters.withLock { $0.directLists += 1 }
                }
            }
        case .appMessage:
            let frame = Frame(kind: .appMessage, body: body)
            guard case .appMessage(let app)? = try? SessionCodec.decodeClientMessage(frame),
                  app.delivery == .unreliable else { throw .malformed }
            let session = member.session
            let participant = member.participant
            let connection = member.connection
            session.loop.execute {
                session.receive(.appMessage(app), from: participant, via: connection)
            }
        case .timelineRequest:
            guard case .timelineRequest(let request)? = try? SessionCodec.decodeClientMessage(Frame(kind: .session, body: body)),
                  request.copy != nil else { throw .malformed }
            let session = member.session
            let participant = member.participant
            let connection = member.connection
            counters.withLock { $0.requestCopies += 1 }
            session.loop.execute {
                session.receive(.timelineRequest(request), from: participant, via: connection)
            }
        case .clockPing:
            // Answered to the address it came from (as a hello), like a TCP ping: t2 when it was read, t3 just
            // before the answer is sealed. The answer is no larger than two pings; with its send stamp after it
            // (revision 5, to a member that asked) the two are less than three.
            guard body.readableBytes == 12, let sequence = body.getInteger(at: body.readerIndex, as: UInt32.self),
                  let t1 = body.getInteger(at: body.readerIndex + 4, as: Int64.self) else { throw .malformed }
            var pong = allocator.buffer(capacity: 28)
            pong.writeInteger(sequence)
            pong.writeInteger(t1)
            pong.writeInteger(receivedAt.nanoseconds)
            pong.writeInteger(clock.now.nanoseconds)
            let stamped = member.wantsSendStamps ? sendStamps.withLock({ $0 }) : nil
            let departure = send(.clockPong, body: pong, channel: header.channel, to: sender, stampedBy: stamped)
            if let departure, !withholdsSendStamps.load(ordering: .relaxed) {
                // Its t3 as the kernel stamped it, for the member to take in place of the one in the answer.
                var stamp = allocator.buffer(capacity: 12)
                stamp.writeInteger(sequence)
                stamp.writeInteger(departure.nanoseconds)
                send(.clockPongStamp, body: stamp, channel: header.channel, to: sender)
            }
            counters.withLock {
                $0.clockPingsAnswered += 1
                if arrival == .kernel { $0.clockPingsKernelStamped += 1 }
                if departure != nil { $0.clockPongsSendStamped += 1 }
            }
        case .helloAck, .clockPong, .timeline, .clockPongStamp, .directPeers, .directPing, .directPong,
             .directProposal:
            throw .malformed
        }
    }

    // MARK: Direct paths

    /// The other members of `id`'s session that shared their endpoint in a hello within
    /// `datagramEndpointTimeout`, by participant (at most `DirectPeerList.maxEntries` go in a list). A pair where
    /// exactly one endpoint is a loopback address is left out: the other cannot reach it. A member's local endpoint
    /// goes with it where `DirectPeerList.listedLocal` says (`id` asked for them and is behind the same router).
    func directPeers(of id: UInt64, now: LocalInstant) -> [DirectPeerList.Entry] {
        let timeout = configuration.datagramEndpointTimeout
        return members.withLock { members -> [DirectPeerList.Entry] in
            guard let me = members[id], let mine = me.endpoint else { return [] }
            let channels = sessionChannels.withLock { $0[ObjectIdentifier(me.session)] ?? [] }
            let loopback = DirectPeerList.isLoopback(mine)
            var entries: [DirectPeerList.Entry] = []
            for channel in channels where channel != id {
                guard let other = members[channel], other.session === me.session, other.wantsDirect,
                      let endpoint = other.endpoint, let last = other.lastDirectHello, now - last <= timeout,
                      DirectPeerList.isLoopback(endpoint) == loopback else { continue }
                let local = DirectPeerList.listedLocal(other.localEndpoint, of: endpoint, to: mine,
                                                       recipientTakesLocal: me.wantsLocal)
                entries.append(DirectPeerList.Entry(participant: other.participant, channel: channel,
                                                    endpoint: endpoint, local: local))
            }
            return entries.sorted { $0.participant < $1.participant }
        }
    }

    // MARK: Sending

    /// Sends an unreliable app message to the member on `connection` as a datagram, when its UDP endpoint works
    /// (a recent hello asking for datagrams); false when it must go over TCP.
    func sendUnreliable(_ message: ServerMessage, over connection: ServerConnection) -> Bool {
        let id = connection.datagramChannel.load(ordering: .relaxed)
        guard id != 0, let channel = channel.withLock({ $0 }) else { return false }
        let now = clock.now
        let timeout = configuration.datagramEndpointTimeout
        let usable = members.withLock { members -> Bool in
            guard let member = members[id], member.wantsDatagrams, member.endpoint != nil,
                  let last = member.lastHello, now - last <= timeout else { return false }
            return true
        }
        guard usable, let frame = try? SessionCodec.encode(message, allocator: channel.allocator),
              frame.body.readableBytes + DatagramCodec.headerSize + DatagramCodec.tagSize
                <= DatagramCodec.maxSentDatagramSize else { return false }
        return send(.appMessage, body: frame.body, channel: id, to: nil)
    }

    /// Sends a copy of a timeline's `session` frame (already encoded for TCP) to the member on `connection` as a
    /// datagram, when it asked for copies and its UDP endpoint works; the TCP frame goes as well, whatever this
    /// returns.
    @discardableResult
    func sendTimelineCopy(_ frame: Frame, over connection: ServerConnection) -> Bool {
        let id = connection.datagramChannel.load(ordering: .relaxed)
        guard id != 0, frame.kind == .session,
              frame.body.readableBytes + DatagramCodec.headerSize + DatagramCodec.tagSize
                <= DatagramCodec.maxSentDatagramSize else { return false }
        let now = clock.now
        let timeout = configuration.datagramEndpointTimeout
        let usable = members.withLock { members -> Bool in
            guard let member = members[id], member.wantsDatagrams, member.wantsTimelines, member.endpoint != nil,
                  let last = member.lastHello, now - last <= timeout else { return false }
            return true
        }
        guard usable, send(.timeline, body: frame.body, channel: id, to: nil) else { return false }
        counters.withLock { $0.timelineCopies += 1 }
        return true
    }

    /// Seals and sends one datagram on `id`'s channel, to `address` (or the member's endpoint).
    @discardableResult
    private func send(_ type: DatagramType, body: ByteBuffer, channel id: UInt64, to address: SocketAddress?) -> Bool {
        sealAndSend(type, body: body, channel: id, to: address, stampedBy: nil).sent
    }

    /// Sends a datagram from `sender` (when there is one), and returns when it left by the kernel's stamp; nil when
    /// it was sent without a stamp, or could not be sent.
    private func send(_ type: DatagramType, body: ByteBuffer, channel id: UInt64, to address: SocketAddress?,
                      stampedBy sender: KernelSendStamps?) -> LocalInstant? {
        sealAndSend(type, body: body, channel: id, to: address, stampedBy: sender).departure
    }

    private func sealAndSend(_ type: DatagramType, body: ByteBuffer, channel id: UInt64, to address: SocketAddress?,
                             stampedBy sender: KernelSendStamps?) -> (sent: Bool, departure: LocalInstant?) {
        guard let channel = channel.withLock({ $0 }) else { return (false, nil) }
        let next = members.withLock { members -> (SymmetricKey, UInt64, SocketAddress)? in
            guard var member = members[id], let target = address ?? member.endpoint else { return nil }
            member.sendSequence += 1
            members[id] = member
            return (member.key, member.sendSequence, target)
        }
        guard let (key, sequence, target) = next,
              let datagram = try? DatagramCodec.seal(type, channel: id, sequence: sequence, body: body, key: key,
                                                     direction: .serverToClient, allocator: channel.allocator)
        else { return (false, nil) }
        counters.withLock { $0.sent += 1 }
        if let sender {
            let result = sender.send(datagram, to: target)
            if result.sent { return (true, result.departure) }
        }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: datagram), promise: nil)
        return (true, nil)
    }
}

/// Hands the UDP socket's datagrams to the relay, with the kernel's arrival stamp for a clock probe.
///
/// Sendable by hand: `stamps` is set once, before the socket becomes a channel (so before any read).
private final class DatagramServerHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let relay: DatagramRelay
    let clock: any MonotonicClock
    var stamps: KernelReceiveStamps?

    init(relay: DatagramRelay, clock: any MonotonicClock) {
        self.relay = relay
        self.clock = clock
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Only a probe needs the kernel's stamp; the relay checks everything else, as for any datagram.
        let arrival = KernelReceiveStamps.arrival(of: envelope.data, ifType: .clockPing, stamps: stamps, now: clock.now)
        relay.receive(envelope.data, from: envelope.remoteAddress, receivedAt: arrival.at, arrival: arrival.source,
                      allocator: context.channel.allocator)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket reports ICMP errors for earlier sends here; they concern one peer, not the socket.
    }
}
