import TandemCrypto
import Foundation
import NIOCore
import Synchronization
import TandemCore

/// A link's direct paths to the session's other peers (docs/PROTOCOL.md, "Datagrams", direct paths): the peers the
/// server listed (`directPeers`), pinged every `pingInterval` at their listed endpoints (and, for a peer behind the
/// same router, its local one), and the proposals that come from them.
///
/// Every direct datagram is sealed with its sender's direct key (`DirectKey`, from the secret, of the sender's own
/// channel id) and its own sequence numbers. A datagram is taken only from a listed channel, authenticated, fresh
/// (the peer's `ReplayWindow`) and within the peer's rate; anything else is counted and dropped. A ping is answered
/// where it came from, and pings and proposals go where the peer's latest authenticated datagram came from, else to
/// its listed endpoint: a router in front of a peer may give its datagrams to another peer a port other than the
/// one the server saw (a Linux NAT does when a packet from that peer came in first), and only an answer to that port
/// gets through. Only a participant (the secret) can make a datagram that authenticates.
///
/// Sendable by hand: the keys are immutable after `init`; everything that changes is in `state`.
final class DirectPeering: @unchecked Sendable {
    struct Peer {
        let participant: ParticipantID
        let endpoint: SocketAddress
        /// Its address on the network it shares with this peer, when the server listed one (behind the same router).
        let local: SocketAddress?
        /// Where its latest authenticated, fresh datagram came from.
        var seenAt: SocketAddress?
        let key: SymmetricKey
        var replay = ReplayWindow()
        var rate: DatagramRateLimit
        /// The latest round trips (at most `roundTripsKept`), and when the latest pong came.
        var roundTrips: [TimeSpan] = []
        var lastPong: LocalInstant?
    }

    struct Counters: Sendable, Hashable {
        var sent = 0
        var received = 0
        var rejected = 0
        var proposalsReceived = 0
    }

    private struct State {
        var peers: [UInt64: Peer] = [:]
        var sendSequence: UInt64 = 0
        var pingSequence: UInt32 = 0
        var counters = Counters()
        var timer: RepeatedTask?
        var ownLocal: SocketAddress?
    }

    /// How often each listed peer is pinged.
    static let pingInterval = TimeSpan.milliseconds(500)
    /// A path is up while a pong came within this.
    static let pathTimeout = TimeSpan.seconds(3)
    static let roundTripsKept = 8
    /// Direct datagrams taken from one peer per second (and in a burst).
    static let datagramsPerSecond = 50

    let channel: UInt64
    private let secret: String
    private let session: String
    private let key: SymmetricKey
    private let clock: any MonotonicClock
    private let allocator = ByteBufferAllocator()
    /// Sends a sealed datagram to an address (the link applies a simulated path, if any).
    private let write: @Sendable (ByteBuffer, SocketAddress) -> Void
    /// Where an accepted proposal goes.
    private let deliver: @Sendable (DirectProposal) -> Void
    private let state = Mutex(State())
    /// This link's own local endpoint (`LocalEndpoint`), given in its hellos; set before `start`.
    var ownLocal: SocketAddress? {
        get { state.withLock { $0.ownLocal } }
        set { state.withLock { $0.ownLocal = newValue } }
    }

    init(secret: String, session: String, channel: UInt64, clock: any MonotonicClock,
         write: @escaping @Sendable (ByteBuffer, SocketAddress) -> Void,
         deliver: @escaping @Sendable (DirectProposal) -> Void) {
        self.secret = secret
        self.session = session
        self.channel = channel
        self.clock = clock
        self.write = write
        self.deliver = deliver
        key = DirectKey.derive(secret: secret, session: session, channel: channel)
    }

    /// Pings the listed peers every `pingInterval` on `eventLoop` until `stop()`.
    func start(on eventLoop: any EventLoop) {
        let interval = TimeAmount.nanoseconds(Self.pingInterval.nanoseconds)
        let timer = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] task in
            guard let self else { return task.cancel() }
            self.pingAll()
        }
        state.withLock { $0.timer = timer }
    }

    func stop() {
        state.withLock { $0.timer }?.cancel()
    }

    var counters: Counters { state.withLock { $0.counters } }

    /// Adds the direct counters to a link's status.
    func fill(_ status: inout DatagramStatus) {
        let now = clock.now
        state.withLock { state in
            status.directPeers = state.peers.count
            status.directPathsUp = state.peers.values.filter { Self.isUp($0, now: now) }.count
            status.directSent = state.counters.sent
            status.directReceived = state.counters.received
            status.directRejected = state.counters.rejected
            status.directProposalsReceived = state.counters.proposalsReceived
        }
    }

    // MARK: The list

    /// The server's latest list replaces the one before (an empty list clears it); a peer listed again with the
    /// same participant and endpoints keeps its key, replay window and round trips.
    func replacePeers(_ entries: [DirectPeerList.Entry]) {
        let now = clock.now
        state.withLock { state in
            var peers: [UInt64: Peer] = [:]
            for entry in entries.prefix(DirectPeerList.maxEntries) where entry.channel != channel {
                if let kept = state.peers[entry.channel], kept.participant == entry.participant,
                   kept.endpoint == entry.endpoint, kept.local == entry.local {
                    peers[entry.channel] = kept
                } else {
                    peers[entry.channel] = Peer(
                        participant: entry.participant, endpoint: entry.endpoint, local: entry.local,
                        key: DirectKey.derive(secret: secret, session: session, channel: entry.channel),
                        rate: DatagramRateLimit(perSecond: Self.datagramsPerSecond, burst: Self.datagramsPerSecond,
                                                now: now))
                }
            }
            state.peers = peers
        }
    }

    // MARK: Paths

    private static func isUp(_ peer: Peer, now: LocalInstant) -> Bool {
        guard let last = peer.lastPong, !peer.roundTrips.isEmpty else { return false }
        return now - last <= pathTimeout
    }

    /// The paths up now, with half the median of their latest round trips.
    func paths() -> [DirectPath] {
        let now = clock.now
        return state.withLock { state in
            state.peers.values.filter { Self.isUp($0, now: now) }.map { peer in
                DirectPath(participant: peer.participant, oneWayDelay: Self.median(peer.roundTrips) / Int64(2))
            }
        }.sorted { $0.participant < $1.participant }
    }

    static func median(_ spans: [TimeSpan]) -> TimeSpan {
        let sorted = spans.sorted()
        guard !sorted.isEmpty else { return .zero }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / Int64(2)
    }

    // MARK: Sending

    /// One round of pings now (tests; the timer does it every `pingInterval`).
    func tickForTesting() { pingAll() }

    /// While a peer's path is up, where it was last seen; otherwise there too and at its listed endpoint and its
    /// local one, if any (whichever answers first is where it is seen next).
    private func pingAll() {
        let now = clock.now
        let targets = state.withLock { state -> [(UInt32, SocketAddress)] in
            state.peers.values.flatMap { peer in
                var endpoints = peer.seenAt.map { [$0] } ?? []
                if !Self.isUp(peer, now: now) {
                    for candidate in [peer.endpoint, peer.local] {
                        if let candidate, !endpoints.contains(candidate) { endpoints.append(candidate) }
                    }
                }
                return endpoints.map { endpoint in
                    state.pingSequence &+= 1
                    return (state.pingSequence, endpoint)
                }
            }
        }
        for (sequence, endpoint) in targets {
            let probe = DirectProbe(sequence: sequence, t1: clock.now.nanoseconds)
            send(.directPing, body: probe.encoded(allocator: allocator), to: endpoint)
        }
    }

    /// Sends `proposal` to each of `participants` with a path up (one datagram each, no retry).
    func send(_ proposal: DirectProposal, to participants: [ParticipantID]) {
        guard let json = try? JSONEncoder().encode(proposal),
              json.count + DatagramCodec.headerSize + DatagramCodec.tagSize <= DatagramCodec.maxSentDatagramSize
        else { return }
        let wanted = Set(participants)
        let now = clock.now
        let endpoints = state.withLock { state in
            state.peers.values.filter { wanted.contains($0.participant) && Self.isUp($0, now: now) }
                .map { $0.seenAt ?? $0.endpoint }
        }
        for endpoint in endpoints {
            var body = allocator.buffer(capacity: json.count)
            body.writeBytes(json)
            send(.directProposal, body: body, to: endpoint)
        }
    }

    private func send(_ type: DatagramType, body: ByteBuffer, to endpoint: SocketAddress) {
        let sequence = state.withLock { state -> UInt64 in
            state.sendSequence += 1
            state.counters.sent += 1
            return state.sendSequence
        }
        guard let datagram = try? DatagramCodec.seal(type, channel: channel, sequence: sequence, body: body, key: key,
                                                     direction: .direct, allocator: allocator) else { return }
        write(datagram, endpoint)
    }

    // MARK: Receiving

    /// One direct datagram (its header already read), at `receivedAt`.
    func receive(_ datagram: ByteBuffer, header: DatagramCodec.Header, from sender: SocketAddress,
                 receivedAt: LocalInstant) {
        do {
            try handle(datagram, header: header, from: sender, receivedAt: receivedAt)
        } catch {
            state.withLock { $0.counters.rejected += 1 }
        }
    }

    private func handle(_ datagram: ByteBuffer, header: DatagramCodec.Header, from sender: SocketAddress,
                        receivedAt: LocalInstant) throws(DatagramRejection) {
        guard header.type.isDirect else { throw .malformed }
        guard let peer = state.withLock({ $0.peers[header.channel] }) else { throw .unknownChannel }
        let body = try DatagramCodec.open(datagram, header: header, key: peer.key, direction: .direct)
        let now = clock.now
        // Only an authenticated datagram moves the replay window and the rate.
        try state.withLock { state throws(DatagramRejection) in
            guard var listed = state.peers[header.channel], listed.participant == peer.participant else {
                throw .unknownChannel
            }
            defer { state.peers[header.channel] = listed }
            guard listed.replay.accept(header.sequence) else { throw .replayed }
            guard listed.rate.admit(now: now) else { throw .rateLimited }
            listed.seenAt = sender
        }
        switch header.type {
        case .directPing:
            guard let probe = DirectProbe(body) else { throw .malformed }
            state.withLock { $0.counters.received += 1 }
            // Answered where it came from: it authenticated as the listed peer's.
            send(.directPong, body: probe.encoded(allocator: allocator), to: sender)
        case .directPong:
            guard let probe = DirectProbe(body) else { throw .malformed }
            let roundTrip = receivedAt - LocalInstant(nanoseconds: probe.t1)
            guard roundTrip >= .zero, roundTrip <= Self.pathTimeout else { throw .malformed }
            state.withLock { state in
                state.counters.received += 1
                guard var listed = state.peers[header.channel] else { return }
                listed.roundTrips.append(roundTrip)
                if listed.roundTrips.count > Self.roundTripsKept { listed.roundTrips.removeFirst() }
                listed.lastPong = receivedAt
                state.peers[header.channel] = listed
            }
        case .directProposal:
            guard datagram.readableBytes <= DatagramCodec.maxSentDatagramSize,
                  let proposal = try? JSONDecoder().decode(DirectProposal.self, from: Data(body.readableBytesView)),
                  proposal.from == peer.participant else { throw .malformed }
            state.withLock {
                $0.counters.received += 1
                $0.counters.proposalsReceived += 1
            }
            deliver(proposal)
        default:
            throw .malformed
        }
    }
}
