import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// Each bad input gets an error frame and a closed connection, while the session's participants carry on.
@Suite("Bad input affects only the offender")
struct BadInputTests {
    /// A server with a session of two chatting participants, for checking that they are unaffected.
    struct Bystanders {
        let server: SessionServer
        let invite: Invite
        let a: TandemClientConnection
        let b: TandemClientConnection

        static func start(maxFramesPerSecond: Int = 2_000) async throws -> Bystanders {
            let server = try await startTestServer(maxFramesPerSecond: maxFramesPerSecond)
            let invite = try server.createSession(id: "party")
            let a = try await TandemClient.connect(invite: invite, name: "a", options: clientOptions())
            let b = try await TandemClient.connect(invite: invite, name: "b", options: clientOptions())
            return Bystanders(server: server, invite: invite, a: a, b: b)
        }

        func expectStillTalking(_ text: String = "still fine") async throws {
            let stream = b.serverMessages()
            try await a.sendAppMessage(Data(text.utf8))
            let got = await collectAppMessages(stream, count: 1, within: 3, opening: b)
            #expect(got.first?.payload == Data(text.utf8), "bystanders stopped exchanging messages")
            #expect(a.closedReason == nil && b.closedReason == nil)
        }
    }

    @Test("garbage bytes")
    func garbage() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let code = await peer.closingErrorCode(within: 3)
        #expect(code == .frameTooLarge || code == .unknownFrameKind || code == .malformedFrame)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("a truncated frame, then the peer hangs up")
    func truncated() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.send([0, 0, 0, 100, FrameKind.hello.rawValue, 0x7b])
        try await peer.channel.close(mode: .output)
        let bytes = await peer.bytesUntilClosed(within: 3)
        #expect(bytes != nil, "the server did not close the half-closed connection")
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("a 4 GB length prefix is refused before anything is allocated")
    func hugeLengthPrefix() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.send([0xff, 0xff, 0xff, 0xff, FrameKind.hello.rawValue])
        #expect(await peer.closingErrorCode(within: 3) == .frameTooLarge)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("an unknown frame kind")
    func unknownKind() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.sendFrame(0x7e, [1, 2, 3])
        #expect(await peer.closingErrorCode(within: 3) == .unknownFrameKind)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("a newer protocol version")
    func newerVersion() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.sendJSONFrame(.hello, Hello(protocolVersion: tandemProtocolVersion + 1, session: "party"))
        #expect(await peer.closingErrorCode(within: 3) == .protocolVersion)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("a wrong secret (raw proof)")
    func wrongSecret() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.sendJSONFrame(.hello, Hello(protocolVersion: tandemProtocolVersion, session: "party"))
        try await Task.sleep(nanoseconds: 50_000_000)
        try await peer.sendJSONFrame(.authProof, AuthProof(clientNonce: Data(count: 32), proof: Data(count: 32)))
        #expect(await peer.closingErrorCode(within: 3) == .authenticationFailed)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("an idle connection that never says hello")
    func idleNoHello() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        #expect(await peer.closingErrorCode(within: 3) == .helloTimeout)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("a session frame before authenticating")
    func sessionFrameBeforeAuth() async throws {
        let world = try await Bystanders.start()
        let peer = try await RawPeer.connect(port: world.server.port)
        try await peer.sendJSONFrame(.session, ClientMessage.leave)
        #expect(await peer.closingErrorCode(within: 3) == .malformedFrame)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }

    @Test("a flood of messages from one participant")
    func flood() async throws {
        let world = try await Bystanders.start(maxFramesPerSecond: 300)
        var options = clientOptions()
        options.maxMessagesPerSecond = 100_000
        let flooder = try await TandemClient.connect(invite: world.invite, name: "flooder", options: options)
        let stream = flooder.serverMessages()
        for i in 0..<2_000 {
            do { try await flooder.sendAppMessage(Data("\(i)".utf8), to: .only([flooder.localParticipantID])) } catch { break }
        }
        let invalidated = await firstMessage(in: stream, within: 3) { message in
            if case .invalidated = message { return true }
            return false
        }
        #expect(invalidated != nil)
        #expect(flooder.closedReason != nil)
        try await world.expectStillTalking()
        await world.server.shutdown()
    }
}
