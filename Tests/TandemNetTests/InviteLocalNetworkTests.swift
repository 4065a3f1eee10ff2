import Foundation
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// An invite's `?lan=`: the server's address on the host's own network, dialled when the invite's host cannot be
/// connected to (a joiner in the host's home, behind a router that does not take its public port back in).
@Suite("Invites: the host's address on its network")
struct InviteLocalNetworkTests {
    @Test("lan= round-trips (IPv4, IPv6, beside a pin) and a malformed one says what to do")
    func lanRoundTrip() throws {
        var invite = Invite(host: "11.0.113.7", port: 7420, session: "film", secret: "s3cret")
        invite.localNetworkAddress = ("192.168.1.20", 7421)
        #expect(invite.description == "tandem://11.0.113.7:7420/film?lan=192.168.1.20:7421#s3cret")
        let parsed = try Invite(parsing: invite.description)
        #expect(parsed == invite)
        #expect(parsed.localNetworkAddress?.host == "192.168.1.20" && parsed.localNetworkAddress?.port == 7421)
        var v6 = Invite(host: "relay.example.org", port: 9000, session: "film", secret: "x", tls: true,
                        pinnedCertificateSHA256: [UInt8](repeating: 1, count: 32))
        v6.localNetworkAddress = ("fd00::20", 9000)
        #expect(v6.description.contains("&lan=%5Bfd00::20%5D:9000") || v6.description.contains("&lan=[fd00::20]:9000"),
                "\(v6.description)")
        #expect(try Invite(parsing: v6.description) == v6)
        #expect(try Invite(parsing: "tandem://h:1/s#x").localNetworkAddress == nil)
        for bad in ["host.example:7420", "192.168.1.20", "192.168.1.20:0", "192.168.1.20:70000", "192.168.1:7420",
                    "[not-v6]:7420", "fd00::20:7420", ""] {
            #expect(throws: InviteError.badLocalNetworkAddress(bad), "\(bad)") {
                try Invite(parsing: "tandem://h:1/s?lan=\(bad)#x")
            }
        }
        #expect(InviteError.badLocalNetworkAddress("x").description.contains("lan=192.168.1.20:7420"))
    }

    /// A loopback port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let channel = try ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).wait()
        let port = channel.localAddress?.port ?? 9
        try channel.close().wait()
        return port
    }

    @Test("a joiner that cannot connect to the invite's host dials its lan address and joins; without one, or when both fail, the host's failure is what it is told")
    func theLocalAddressIsDialledWhenTheHostCannotBe() async throws {
        let server = try await startTestServer()
        var invite = try server.createSession(id: "lan")
        let closed = try Self.closedPort()
        var unreachable = invite
        unreachable.port = closed
        // Without lan= the closed port is the end of it.
        do {
            _ = try await TandemClient.connect(invite: unreachable, name: "ann", options: DatagramTests.options())
            Issue.record("joined through a closed port")
        } catch {
            #expect(error.description.contains("127.0.0.1:\(closed)"), "\(error)")
        }
        // With the server's own address as lan=: joined there, datagrams too.
        var viaLAN = unreachable
        viaLAN.localNetworkAddress = ("127.0.0.1", invite.port)
        let ann = try await TandemClient.connect(invite: viaLAN, name: "ann", options: DatagramTests.options())
        #expect(await waitUntil(10) { ann.unreliablePath == .udp })
        #expect(ann.welcome.participants.count == 1)
        // Both closed: the host's failure is reported, not the lan address's.
        var neither = unreachable
        neither.localNetworkAddress = ("127.0.0.1", try Self.closedPort())
        do {
            _ = try await TandemClient.connect(invite: neither, name: "bob", options: DatagramTests.options())
            Issue.record("joined through two closed ports")
        } catch {
            #expect(error.description.contains("127.0.0.1:\(closed)"), "\(error)")
        }
        // An invite whose host works never touches lan= (here a closed port).
        invite.localNetworkAddress = ("127.0.0.1", closed)
        let cid = try await TandemClient.connect(invite: invite, name: "cid", options: DatagramTests.options())
        #expect(cid.welcome.participants.count == 2)
        await ann.close()
        await cid.close()
        await server.shutdown()
    }
}
