import Foundation
import TandemCrypto
import NIOCore
import TandemCore
import TandemTesting
import Testing
@testable import TandemNet

/// Direct datagram paths between the peers of one session, with real sockets on 127.0.0.1.
@Suite(.serialized) struct DirectPathTests {
    static func proposal(from participant: ParticipantID, requestID: UInt64 = 7) -> DirectProposal {
        DirectProposal(from: participant, requestID: requestID,
                       timeline: Timeline(generation: 3, itemID: "film", rate: 1,
                                          anchorSessionTime: SessionInstant(nanoseconds: 5_000_000_000),
                                          anchorItemTime: ItemTime(nanoseconds: 0), status: .playing,
                                          originator: participant))
    }

    static func connect(_ invite: Invite, _ name: String,
                        options: TandemClient.Options = DatagramTests.options()) async throws -> TandemClientConnection {
        try await TandemClient.connect(invite: invite, name: name, options: options)
    }

    @Test func twoPeersFindADirectPathAndAProposalCrossesIt() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession(id: "direct")
        let ann = try await Self.connect(invite, "ann")
        let bob = try await Self.connect(invite, "bob")
        #expect(await waitUntil(10) {
            ann.directPaths().map(\.participant) == [bob.localParticipantID]
                && bob.directPaths().map(\.participant) == [ann.localParticipantID]
        })
        for path in ann.directPaths() + bob.directPaths() {
            #expect(path.oneWayDelay >= .zero && path.oneWayDelay < .milliseconds(50))
        }
        let proposals = bob.directProposals()
        let sent = Self.proposal(from: ann.localParticipantID)
        // Unreliable: sent again until it arrives.
        let sender = Task {
            while !Task.isCancelled {
                ann.sendDirect(sent, to: [bob.localParticipantID])
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        let received = await firstElement(in: proposals, within: 10)
        sender.cancel()
        #expect(received == sent)
        #expect(bob.datagramStatus.directProposalsReceived >= 1)
        #expect(bob.datagramStatus.directRejected == 0)
        #expect((server.datagramStatistics?.directLists ?? 0) > 0)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func aPeerThatDoesNotShareItsEndpointIsNotListedAndHasNoPaths() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession(id: "private")
        var off = DatagramTests.options()
        off.directPaths = false
        let ann = try await Self.connect(invite, "ann")
        let bob = try await Self.connect(invite, "bob")
        let cid = try await Self.connect(invite, "cid", options: off)
        #expect(await waitUntil(10) { ann.directPaths().count == 1 && bob.directPaths().count == 1 })
        // A few more hello rounds: still only each other.
        try await Task.sleep(for: .seconds(1))
        #expect(ann.directPaths().map(\.participant) == [bob.localParticipantID])
        #expect(ann.datagramStatus.directPeers == 1 && bob.datagramStatus.directPeers == 1)
        #expect(cid.unreliablePath == .udp)
        #expect(cid.directPaths().isEmpty)
        #expect(cid.datagramStatus.directPeers == 0 && cid.datagramStatus.directSent == 0)
        await ann.close()
        await bob.close()
        await cid.close()
        await server.shutdown()
    }

    @Test func aSimulatedPathIsCountedOnceEachWay() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession(id: "homes")
        // Each home is one link of 40 ms from anywhere: a direct datagram takes 40 ms, a round trip 80 ms.
        var options = DatagramTests.options()
        options.datagramAckTimeout = .seconds(2)
        options.datagramDelays = { _ in 40_000_000 }
        let ann = try await Self.connect(invite, "ann", options: options)
        let bob = try await Self.connect(invite, "bob", options: options)
        #expect(await waitUntil(15) {
            ann.datagramStatus.directPathsUp == 1 && ann.datagramStatus.directReceived >= 8
        })
        let delay = try #require(ann.directPaths().first).oneWayDelay
        #expect(delay >= .milliseconds(35) && delay < .milliseconds(70), "measured \(delay.seconds) s")
        await ann.close()
        await bob.close()
        await server.shutdown()
    }
}

/// The direct side of one link on its own: what it accepts, answers and rejects.
@Suite struct DirectPeeringTests {
    static let secret = "the-secret"
    static let session = "direct"
    static let endpoint = try! SocketAddress(ipAddress: "127.0.0.1", port: 40_001)

    final class Sink: Sendable {
        let written = Locked<[(ByteBuffer, SocketAddress)]>([])
        let delivered = Locked<[DirectProposal]>([])
    }

    static func peering(clock: ManualClock, sink: Sink) -> DirectPeering {
        let peering = DirectPeering(secret: secret, session: session, channel: 2, clock: clock,
                                    write: { datagram, address in sink.written.withLock { $0.append((datagram, address)) } },
                                    deliver: { proposal in sink.delivered.withLock { $0.append(proposal) } })
        peering.replacePeers([DirectPeerList.Entry(participant: ParticipantID("ann"), channel: 1, endpoint: endpoint)])
        return peering
    }

    static func datagram(_ type: DatagramType, body: ByteBuffer, channel: UInt64 = 1, sequence: UInt64,
                         secret: String = secret) throws -> ByteBuffer {
        try DatagramCodec.seal(type, channel: channel, sequence: sequence, body: body,
                               key: DirectKey.derive(secret: secret, session: session, channel: channel),
                               direction: .direct, allocator: ByteBufferAllocator())
    }

    static func proposalBody(from participant: String) throws -> ByteBuffer {
        ByteBuffer(data: try JSONEncoder().encode(DirectPathTests.proposal(from: ParticipantID(participant))))
    }

    static func receive(_ datagram: ByteBuffer, by peering: DirectPeering, at now: LocalInstant,
                        from sender: SocketAddress = endpoint) throws {
        peering.receive(datagram, header: try DatagramCodec.header(of: datagram), from: sender, receivedAt: now)
    }

    @Test func forgedReplayedUnlistedAndMisattributedDatagramsAreRejected() throws {
        let clock = ManualClock(1_000_000_000)
        let sink = Sink()
        let peering = Self.peering(clock: clock, sink: sink)
        let good = try Self.datagram(.directProposal, body: Self.proposalBody(from: "ann"), sequence: 1)
        try Self.receive(good, by: peering, at: clock.now)
        #expect(sink.delivered.value.map(\.from) == [ParticipantID("ann")])
        // The same datagram again.
        try Self.receive(good, by: peering, at: clock.now)
        // Sealed with a key from another secret (what the server, holding SHA-256 of it, could at best do).
        try Self.receive(try Self.datagram(.directProposal, body: Self.proposalBody(from: "ann"), sequence: 2,
                                           secret: "another"), by: peering, at: clock.now)
        // From a channel the server did not list (sealed with that channel's right key).
        try Self.receive(try Self.datagram(.directProposal, body: Self.proposalBody(from: "ann"), channel: 3,
                                           sequence: 1), by: peering, at: clock.now)
        // A proposal naming another participant than the one listed for its channel.
        try Self.receive(try Self.datagram(.directProposal, body: Self.proposalBody(from: "bob"), sequence: 3),
                         by: peering, at: clock.now)
        // The server's direction under the right key.
        try Self.receive(try DatagramCodec.seal(.directProposal, channel: 1, sequence: 4,
                                                body: Self.proposalBody(from: "ann"),
                                                key: DirectKey.derive(secret: Self.secret, session: Self.session,
                                                                      channel: 1),
                                                direction: .serverToClient, allocator: ByteBufferAllocator()),
                         by: peering, at: clock.now)
        #expect(sink.delivered.value.count == 1)
        #expect(peering.counters.rejected == 5)
        #expect(peering.counters.proposalsReceived == 1)
        #expect(sink.written.value.isEmpty)
    }

    @Test("a ping that comes from another port than the listed one (a NAT that mapped this way anew) is answered there, and later pings and proposals go there; a forged one moves nothing")
    func theAddressAPeerIsSeenAtWins() throws {
        let clock = ManualClock(1_000_000_000)
        let sink = Sink()
        let peering = Self.peering(clock: clock, sink: sink)
        let remapped = try SocketAddress(ipAddress: "127.0.0.1", port: 40_777)
        let ping = DirectProbe(sequence: 1, t1: 5).encoded(allocator: ByteBufferAllocator())
        // Forged (another secret) from a third address: dropped, nothing sent there.
        try Self.receive(try Self.datagram(.directPing, body: ping, sequence: 1, secret: "not-it"), by: peering,
                         at: clock.now, from: try SocketAddress(ipAddress: "127.0.0.9", port: 9))
        #expect(sink.written.value.isEmpty)
        try Self.receive(try Self.datagram(.directPing, body: ping, sequence: 2), by: peering, at: clock.now, from: remapped)
        #expect(sink.written.value.map(\.1) == [remapped])
        peering.tickForTesting()
        #expect(sink.written.value.suffix(2).map(\.1) == [remapped, Self.endpoint],
                "the next ping goes where the peer was seen (and, until its path is up, to its listed endpoint too)")
    }

    @Test func aPingIsAnsweredAtTheListedEndpointAndPongsMakeAPath() throws {
        let clock = ManualClock(1_000_000_000)
        let sink = Sink()
        let peering = Self.peering(clock: clock, sink: sink)
        #expect(peering.paths().isEmpty)
        let ping = DirectProbe(sequence: 9, t1: 123).encoded(allocator: ByteBufferAllocator())
        try Self.receive(try Self.datagram(.directPing, body: ping, sequence: 1), by: peering, at: clock.now)
        let written = sink.written.value
        #expect(written.count == 1 && written.first?.1 == Self.endpoint)
        // The pong is sealed with this peer's own key (channel 2), and echoes the probe.
        if let (pong, _) = written.first {
            let header = try DatagramCodec.header(of: pong)
            #expect(header.type == .directPong && header.channel == 2)
            let body = try DatagramCodec.open(pong, header: header,
                                              key: DirectKey.derive(secret: Self.secret, session: Self.session,
                                                                    channel: 2), direction: .direct)
            #expect(DirectProbe(body) == DirectProbe(sequence: 9, t1: 123))
        }
        // Round trips of 10, 20 and 30 ms: the path's one-way delay is half the median.
        for (index, ms) in [10, 30, 20].enumerated() {
            let t1 = clock.now.nanoseconds - Int64(ms) * 1_000_000
            let pong = DirectProbe(sequence: UInt32(index), t1: t1).encoded(allocator: ByteBufferAllocator())
            try Self.receive(try Self.datagram(.directPong, body: pong, sequence: UInt64(2 + index)), by: peering,
                             at: clock.now)
        }
        #expect(peering.paths() == [DirectPath(participant: ParticipantID("ann"), oneWayDelay: .milliseconds(10))])
        // Without pongs for more than 3 s the path is down.
        clock.advance(by: .milliseconds(3_100) as Duration)
        #expect(peering.paths().isEmpty)
        // A new list without the peer forgets it; its datagrams are then unlisted.
        peering.replacePeers([])
        try Self.receive(try Self.datagram(.directPing, body: ping, sequence: 10), by: peering, at: clock.now)
        #expect(sink.written.value.count == 1)
        #expect(peering.counters.rejected == 1)
    }

    @Test func aPeersDatagramsAreBoundedByItsRate() throws {
        let clock = ManualClock(1_000_000_000)
        let sink = Sink()
        let peering = Self.peering(clock: clock, sink: sink)
        let ping = DirectProbe(sequence: 1, t1: 0).encoded(allocator: ByteBufferAllocator())
        for sequence in 1...60 {
            try Self.receive(try Self.datagram(.directPing, body: ping, sequence: UInt64(sequence)), by: peering,
                             at: clock.now)
        }
        #expect(sink.written.value.count == DirectPeering.datagramsPerSecond)
        #expect(peering.counters.rejected == 60 - DirectPeering.datagramsPerSecond)
    }
}

/// The server's list of direct peers, as it goes over the wire.
@Suite struct DirectPeerListTests {
    static func entry(_ index: Int, id: String? = nil, v6: Bool = false) throws -> DirectPeerList.Entry {
        let address = v6 ? try SocketAddress(ipAddress: "2001:db8::\(index + 1)", port: 5000 + index)
            : try SocketAddress(ipAddress: "192.0.2.\(index + 1)", port: 5000 + index)
        return DirectPeerList.Entry(participant: ParticipantID(id ?? "peer-\(index)"), channel: UInt64(100 + index),
                                    endpoint: address)
    }

    @Test func aListRoundTripsAndHoldsAtMostSixteenEntries() throws {
        let entries = try (0..<20).map { try Self.entry($0, v6: $0 % 2 == 1) }
        let body = DirectPeerList.encode(entries, allocator: ByteBufferAllocator())
        #expect(body.readableBytes + DatagramCodec.headerSize + DatagramCodec.tagSize <= DatagramCodec.maxSentDatagramSize)
        let decoded = try #require(DirectPeerList.decode(body))
        #expect(decoded == Array(entries.prefix(16)))
        #expect(DirectPeerList.decode(DirectPeerList.encode([], allocator: ByteBufferAllocator())) == [])
    }

    @Test func longIdsAreLeftOutAndTheBodyStaysWithinADatagram() throws {
        let long = String(repeating: "x", count: 65)
        let limit = String(repeating: "y", count: 64)
        let entries = [try Self.entry(0, id: long), try Self.entry(1, id: limit)]
        let decoded = try #require(DirectPeerList.decode(DirectPeerList.encode(entries, allocator: ByteBufferAllocator())))
        #expect(decoded == [entries[1]])
        // Sixteen IPv6 entries with 64-byte ids would not fit one datagram: the list stops before.
        let big = try (0..<16).map { try Self.entry($0, id: String(repeating: "\($0 % 10)", count: 64), v6: true) }
        let body = DirectPeerList.encode(big, allocator: ByteBufferAllocator())
        #expect(body.readableBytes <= DirectPeerList.maxBodySize)
        let fitted = try #require(DirectPeerList.decode(body))
        #expect(fitted.count < 16 && fitted == Array(big.prefix(fitted.count)))
    }

    @Test func truncatedOrOverlongBodiesAreRejected() throws {
        let body = DirectPeerList.encode(try (0..<3).map { try Self.entry($0) }, allocator: ByteBufferAllocator())
        for cut in 1..<body.readableBytes {
            #expect(DirectPeerList.decode(body.getSlice(at: 0, length: cut)!) == nil)
        }
        var extra = body
        extra.writeInteger(UInt8(0))
        #expect(DirectPeerList.decode(extra) == nil)
        var tooMany = ByteBufferAllocator().buffer(capacity: 1)
        tooMany.writeInteger(UInt8(17))
        #expect(DirectPeerList.decode(tooMany) == nil)
        #expect(DirectPeerList.decode(ByteBuffer()) == nil)
    }

    @Test func loopbackAddressesAreRecognised() throws {
        #expect(DirectPeerList.isLoopback(try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        #expect(DirectPeerList.isLoopback(try SocketAddress(ipAddress: "127.5.0.9", port: 1)))
        #expect(DirectPeerList.isLoopback(try SocketAddress(ipAddress: "::1", port: 1)))
        #expect(DirectPeerList.isLoopback(try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 1)))
        #expect(!DirectPeerList.isLoopback(try SocketAddress(ipAddress: "192.0.2.1", port: 1)))
        #expect(!DirectPeerList.isLoopback(try SocketAddress(ipAddress: "2001:db8::1", port: 1)))
    }

    @Test func theDirectKeyDependsOnSecretSessionAndChannel() {
        let key = DirectKey.derive(secret: "s", session: "a", channel: 1)
        let data = { (k: SymmetricKey) in k.withUnsafeBytes { Data($0) } }
        #expect(data(key) == data(DirectKey.derive(secret: "s", session: "a", channel: 1)))
        #expect(data(key) != data(DirectKey.derive(secret: "t", session: "a", channel: 1)))
        #expect(data(key) != data(DirectKey.derive(secret: "s", session: "b", channel: 1)))
        #expect(data(key) != data(DirectKey.derive(secret: "s", session: "a", channel: 2)))
    }
}
