import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

@Suite("The client frames its bytes however they are cut")
struct ClientFramingTests {
    @Test("a client whose server's bytes arrive in pieces of 1 to 7 bytes joins, and gets every message whole and in order")
    func choppedStream() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let proxy = try await BreakableProxy.start(forwardingTo: invite.port, choppingReplies: true)
        var viaProxy = invite
        viaProxy.host = "127.0.0.1"
        viaProxy.port = proxy.port
        let alice = try await TandemClient.connect(invite: invite, name: "alice", options: clientOptions(asHost: true))
        let bob = try await TandemClient.connect(invite: viaProxy, name: "bob", options: clientOptions())
        let stream = bob.serverMessages()
        let payloads = (0..<30).map { index in
            Data((0..<(index % 3 == 0 ? 2_500 : 10 + index)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
        }
        for payload in payloads { try await alice.sendAppMessage(payload) }
        let got = await collectAppMessages(stream, count: payloads.count, within: 10, opening: bob)
        #expect(got.map(\.payload) == payloads)
        #expect(bob.closedReason == nil)
        await alice.close()
        await bob.close()
        await proxy.stop()
        await server.shutdown()
    }
}
