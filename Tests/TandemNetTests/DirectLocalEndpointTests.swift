import Foundation
import NIOCore
import TandemCore
import TandemTesting
import Testing
@testable import TandemNet

/// Local endpoints (revision 7): two peers behind the same router reach each other at their addresses on the
/// network they share, which the server lists only to a member seen at the same address.
@Suite struct DirectLocalEndpointTests {
    static let lan = try! SocketAddress(ipAddress: "192.168.2.21", port: 40_100)
    static let lanV6 = try! SocketAddress(ipAddress: "fd00::21", port: 40_101)

    static func hello(flags: UInt8, _ trailer: (inout ByteBuffer) -> Void = { _ in }) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(flags)
        trailer(&body)
        return body
    }

    @Test func aListWithLocalEndpointsRoundTripsAndOneWithoutIsUnchanged() throws {
        var entries = try (0..<4).map { try DirectPeerListTests.entry($0, v6: $0 == 3) }
        entries[0].local = Self.lan
        entries[3].local = Self.lanV6
        let body = DirectPeerList.encode(entries, withLocal: true, allocator: ByteBufferAllocator())
        #expect(body.getInteger(at: 0, as: UInt8.self) == UInt8(0x84), "a decoder of revision 6 refuses it (count > 16)")
        #expect(DirectPeerList.decode(body) == entries)
        // To a member that did not ask: the revision-6 body, local endpoints left out.
        let plain = DirectPeerList.encode(entries, allocator: ByteBufferAllocator())
        #expect(plain.getInteger(at: 0, as: UInt8.self) == 4)
        #expect(DirectPeerList.decode(plain)?.allSatisfy { $0.local == nil } == true)
        #expect(plain.readableBytes + 7 + 1 + 1 + 19 == body.readableBytes, "an endpoint each, or a byte for none")
        // Sixteen entries, each with an IPv6 local endpoint, still fit one datagram.
        let full = try (0..<20).map { index -> DirectPeerList.Entry in
            var entry = try DirectPeerListTests.entry(index, v6: true)
            entry.local = Self.lanV6
            return entry
        }
        let fullBody = DirectPeerList.encode(full, withLocal: true, allocator: ByteBufferAllocator())
        #expect(fullBody.readableBytes <= DirectPeerList.maxBodySize)
        #expect(DirectPeerList.decode(fullBody)?.count == 16)
    }

    @Test func aListWithABadLocalEndpointIsRefused() throws {
        let entry = try DirectPeerListTests.entry(0)
        var body = DirectPeerList.encode([entry], allocator: ByteBufferAllocator())
        body.setInteger(UInt8(0x81), at: 0)
        #expect(DirectPeerList.decode(body) == nil, "the flag set but no local family")
        for family: UInt8 in [5, 255] {
            var bad = body
            bad.writeInteger(family)
            #expect(DirectPeerList.decode(bad) == nil)
        }
        var truncated = body
        truncated.writeInteger(UInt8(4))
        truncated.writeBytes([192, 168])
        #expect(DirectPeerList.decode(truncated) == nil)
        var none = body
        none.writeInteger(UInt8(0))
        #expect(DirectPeerList.decode(none) == [entry])
        none.writeInteger(UInt8(0))
        #expect(DirectPeerList.decode(none) == nil, "a byte left over")
        var tooMany = ByteBuffer()
        tooMany.writeInteger(UInt8(0x80 | 17))
        #expect(DirectPeerList.decode(tooMany) == nil)
    }

    @Test func aHelloCarriesALocalEndpointOnlyWhenItIsOne() throws {
        let flags = DatagramHelloFlags.direct | DatagramHelloFlags.local
        for endpoint in [Self.lan, Self.lanV6] {
            #expect(DirectPeerList.localEndpoint(inHello: Self.hello(flags: flags) {
                DirectPeerList.writeEndpoint(endpoint, to: &$0)
            }) == endpoint)
        }
        #expect(DirectPeerList.localEndpoint(inHello: Self.hello(flags: flags)) == nil, "none given")
        for refused in [try SocketAddress(ipAddress: "127.0.0.1", port: 5), try SocketAddress(ipAddress: "::1", port: 5),
                        try SocketAddress(ipAddress: "0.0.0.0", port: 5), try SocketAddress(ipAddress: "::", port: 5),
                        try SocketAddress(ipAddress: "192.168.2.21", port: 0)] {
            #expect(DirectPeerList.localEndpoint(inHello: Self.hello(flags: flags) {
                DirectPeerList.writeEndpoint(refused, to: &$0)
            }) == nil, "\(refused)")
        }
        #expect(DirectPeerList.localEndpoint(inHello: Self.hello(flags: flags) {
            DirectPeerList.writeEndpoint(Self.lan, to: &$0)
            $0.writeInteger(UInt8(1))
        }) == nil, "a byte left over")
        #expect(DirectPeerList.localEndpoint(inHello: Self.hello(flags: flags) {
            $0.writeInteger(UInt8(4))
            $0.writeBytes([192, 168, 2])
        }) == nil, "truncated")
    }

    @Test func aLocalEndpointIsListedOnlyToAMemberBehindTheSameRouter() throws {
        let router = try SocketAddress(ipAddress: "11.0.113.8", port: 61_001)
        let sameRouter = try SocketAddress(ipAddress: "11.0.113.8", port: 61_002)
        let elsewhere = try SocketAddress(ipAddress: "11.0.113.9", port: 61_001)
        #expect(DirectPeerList.listedLocal(Self.lan, of: router, to: sameRouter, recipientTakesLocal: true) == Self.lan)
        #expect(DirectPeerList.listedLocal(Self.lan, of: router, to: elsewhere, recipientTakesLocal: true) == nil)
        #expect(DirectPeerList.listedLocal(Self.lan, of: router, to: sameRouter, recipientTakesLocal: false) == nil)
        #expect(DirectPeerList.listedLocal(nil, of: router, to: sameRouter, recipientTakesLocal: true) == nil)
        #expect(DirectPeerList.listedLocal(router, of: router, to: sameRouter, recipientTakesLocal: true) == nil,
                "not behind a router: the address the server sees is its own")
    }

    @Test("a peer listed with a local endpoint is pinged there and at its listed one until it answers; then only where it answered from, and at all of them again once its path is down")
    func aLocalEndpointIsPingedUntilThePeerIsSeen() throws {
        let clock = ManualClock(1_000_000_000)
        let sink = DirectPeeringTests.Sink()
        let peering = DirectPeeringTests.peering(clock: clock, sink: sink)
        peering.replacePeers([DirectPeerList.Entry(participant: ParticipantID("ann"), channel: 1,
                                                   endpoint: DirectPeeringTests.endpoint, local: Self.lan)])
        peering.tickForTesting()
        #expect(sink.written.value.map(\.1) == [DirectPeeringTests.endpoint, Self.lan])
        // Ann answers from her local endpoint.
        let pong = DirectProbe(sequence: 1, t1: clock.now.nanoseconds - 2_000_000).encoded(allocator: ByteBufferAllocator())
        try DirectPeeringTests.receive(try DirectPeeringTests.datagram(.directPong, body: pong, sequence: 1), by: peering,
                                    at: clock.now, from: Self.lan)
        #expect(peering.paths().map(\.participant) == [ParticipantID("ann")])
        sink.written.withLock { $0.removeAll() }
        peering.tickForTesting()
        #expect(sink.written.value.map(\.1) == [Self.lan])
        // No answer for more than 3 s: the path is down, and every way to her is tried again.
        clock.advance(by: .milliseconds(3_100) as Duration)
        sink.written.withLock { $0.removeAll() }
        peering.tickForTesting()
        #expect(sink.written.value.map(\.1) == [Self.lan, DirectPeeringTests.endpoint])
        // Listed again with the same endpoints: kept as it was (seen at the local one).
        peering.replacePeers([DirectPeerList.Entry(participant: ParticipantID("ann"), channel: 1,
                                                   endpoint: DirectPeeringTests.endpoint, local: Self.lan)])
        sink.written.withLock { $0.removeAll() }
        peering.tickForTesting()
        #expect(sink.written.value.first?.1 == Self.lan)
    }

    @Test func theLocalEndpointTowardsAServerIsTheRoutesSourceAndNeverLoopback() throws {
        #expect(LocalEndpoint.toward(try SocketAddress(ipAddress: "127.0.0.1", port: 7420), port: 5000) == nil)
        #expect(LocalEndpoint.toward(try SocketAddress(ipAddress: "::1", port: 7420), port: 5000) == nil)
        #expect(LocalEndpoint.toward(try SocketAddress(ipAddress: "127.0.0.1", port: 7420), port: nil) == nil)
        #expect(LocalEndpoint.toward(try SocketAddress(ipAddress: "127.0.0.1", port: 7420), port: 0) == nil)
    }
}
