import TandemCrypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// The server's resource bounds, over real loopback sockets: what a peer can make the server hold is bounded,
/// and exceeding a bound drops the offender alone.
@Suite(.serialized)
struct HardeningServerTests {
    /// A loopback server with test timings; `tweak` adjusts the configuration.
    static func startServer(tls: ServerTLSFiles? = nil,
                            _ tweak: (inout ServerConfiguration) -> Void = { _ in }) async throws -> SessionServer {
        var authority = AuthorityConfiguration()
        authority.maxParticipants = 8
        authority.endsWhenHostLeaves = false
        authority.appMessagesPerSecond = 10_000
        authority.appMessageBurst = 10_000
        var configuration = ServerConfiguration(authority: authority)
        configuration.maxSessions = 16
        configuration.handshakeTimeout = 2_000_000_000
        configuration.maxFramesPerSecond = 20_000
        tweak(&configuration)
        var logger = Logger(label: "tandem.test.server")
        logger.logLevel = .warning
        return try await SessionServer.start(host: "127.0.0.1", port: 0, tls: tls, configuration: configuration,
                                             logger: logger)
    }

    /// Polls `condition` until it holds or `timeout` seconds pass.
    static func eventually(within timeout: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition()
    }

    /// Opens and closes `count` TCP connections, `parallel` at a time, sending nothing; stops after `timeout`.
    static func connectAndClose(port: Int, count: Int, parallel: Int, timeout: Double) async throws -> Int {
        let group = MultiThreadedEventLoopGroup.singleton
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var done = 0
        while done < count, ContinuousClock.now < deadline {
            let batch = min(parallel, count - done)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for _ in 0..<batch {
                    tasks.addTask {
                        let channel = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
                        try? await channel.close()
                    }
                }
                try await tasks.waitForAll()
            }
            done += batch
        }
        return done
    }

    // MARK: - 1. No leak per connection

    @Test("connection objects are freed when their channels close")
    func connectionsAreFreed() async throws {
        let server = try await Self.startServer { $0.maxUnauthenticatedConnectionsPerAddress = 10_000 }
        let invite = try server.createSession(id: "leak")
        let opened = try await Self.connectAndClose(port: server.port, count: 2_000, parallel: 10, timeout: 60)
        #expect(opened == 2_000)
        // Participants that joined and left (the session held their connections) are freed too.
        // (One participant stays, or the session would end when everyone has left.)
        let keeper = try await TandemClient.connect(invite: invite, name: "keeper", options: clientOptions())
        for i in 0..<20 {
            let client = try await TandemClient.connect(invite: invite, name: "p\(i)", options: clientOptions())
            await client.close()
            // The server notices the leave a moment later; until then the seat is taken (8 per session).
            _ = await Self.eventually(within: 5) { server.connectionCount <= 1 }
        }
        await keeper.close()
        let freed = await Self.eventually(within: 5) {
            server.liveConnectionObjects == 0 && server.connectionCount == 0
        }
        #expect(freed, "live connection objects: \(server.liveConnectionObjects), connections: \(server.connectionCount)")
        #expect(server.unauthenticatedConnectionCount == 0)
        await server.shutdown()
    }

    // MARK: - 2. Bounded before authentication

    @Test("a raw TCP peer that never starts TLS is closed within the handshake timeout")
    func tlsNeverStarted() async throws {
        guard let files = try TLSTests.makeCertificate() else {
            Issue.record("openssl is not installed: TLS test skipped")
            return
        }
        defer { TLSTests.removeCertificate(files) }
        let server = try await Self.startServer(tls: files) {
            $0.handshakeTimeout = 1_000_000_000
            $0.heartbeatTimeout = 30_000_000_000
        }
        let peers = try await (0..<5).asyncMap { _ in try await RawPeer.connect(port: server.port) }
        let start = ContinuousClock.now
        for peer in peers {
            #expect(await peer.bytesUntilClosed(within: 4) != nil, "still open after the TLS handshake timeout")
        }
        // 1 s handshake timeout; the heartbeat timeout (30 s) cannot be what closed them.
        #expect(ContinuousClock.now - start < .seconds(4))
        #expect(await Self.eventually(within: 3) { server.connectionCount == 0 && server.liveConnectionObjects == 0 })
        await server.shutdown()
    }

    @Test("at the per-address cap, the address's idlest connection gives way to a newer one; others still join")
    func perAddressCap() async throws {
        let server = try await Self.startServer {
            $0.maxUnauthenticatedConnectionsPerAddress = 4
            $0.handshakeTimeout = 20_000_000_000
            $0.heartbeatTimeout = 30_000_000_000
        }
        let invite = try server.createSession(id: "capped")
        let a = try await TandemClient.connect(invite: invite, name: "a", options: clientOptions())
        var silent: [RawPeer] = []
        for _ in 0..<4 { silent.append(try await RawPeer.connect(port: server.port)) }
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 4 })
        // The oldest has said hello: it has shown more than the others and is not the one to go.
        try await silent[0].sendJSONFrame(.hello, Hello(protocolVersion: tandemProtocolVersion, session: invite.session))
        _ = try await silent[0].waitForFrame(.challenge)
        let fifth = try await RawPeer.connect(port: server.port)
        let evicted = await silent[1].bytesUntilClosed(within: 3)
        #expect(evicted != nil && evicted?.readableBytes == 0, "the oldest idle connection did not give way")
        #expect(await silent[0].bytesUntilClosed(within: 0.3) == nil, "the connection that said hello was closed")
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 4 })
        // The newcomer authenticates; another address is not affected.
        try await fifth.joinAndGoSilent(invite: invite, name: "d")
        let other = try await RawPeer.connect(port: server.port, from: "127.0.0.2")
        try await other.joinAndGoSilent(invite: invite, name: "b")
        #expect(server.admissionCounters.evicted == 1)
        #expect(a.closedReason == nil)
        await server.shutdown()
    }

    @Test("at the global cap, the address holding most places gives way to another's newcomer, not to its own")
    func globalCap() async throws {
        let server = try await Self.startServer {
            $0.maxUnauthenticatedConnections = 3
            $0.handshakeTimeout = 20_000_000_000
            $0.heartbeatTimeout = 30_000_000_000
        }
        var held: [RawPeer] = []
        for _ in 0..<3 { held.append(try await RawPeer.connect(port: server.port)) }
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 3 })
        let fourth = try await RawPeer.connect(port: server.port, from: "127.0.0.3")
        #expect(await held[0].bytesUntilClosed(within: 3) != nil, "the oldest of the crowded address did not give way")
        #expect(await fourth.bytesUntilClosed(within: 0.3) == nil)
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 3 })
        // 127.0.0.1 already holds the most places: its newcomer is refused rather than push out 127.0.0.3's.
        let fifth = try await RawPeer.connect(port: server.port)
        #expect(await fifth.bytesUntilClosed(within: 3) != nil)
        try await held[1].channel.close()
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 2 })
        let sixth = try await RawPeer.connect(port: server.port)
        #expect(await sixth.bytesUntilClosed(within: 0.5) == nil, "a freed place was not given back")
        await server.shutdown()
    }

    @Test("a 1 MiB length prefix in a hello is refused at once with frameTooLarge")
    func largeHello() async throws {
        let server = try await Self.startServer { $0.handshakeTimeout = 20_000_000_000 }
        let peer = try await RawPeer.connect(port: server.port)
        let length = UInt32(1 << 20)
        try await peer.send([UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff),
                             UInt8(length & 0xff), FrameKind.hello.rawValue] + Array(repeating: 0x20, count: 1_000))
        let start = ContinuousClock.now
        // Refused as soon as the length arrives, long before the handshake timeout.
        #expect(await peer.closingErrorCode(within: 5) == .frameTooLarge)
        #expect(ContinuousClock.now - start < .seconds(5))
        await server.shutdown()
    }

    @Test("after authentication the full frame size is accepted")
    func fullFramesAfterAuthentication() async throws {
        let server = try await Self.startServer()
        let invite = try server.createSession(id: "big")
        let a = try await TandemClient.connect(invite: invite, name: "a", options: clientOptions())
        let b = try await TandemClient.connect(invite: invite, name: "b", options: clientOptions())
        let stream = b.serverMessages()
        let payload = Data(repeating: 7, count: 200 * 1024)
        try await a.sendAppMessage(payload)
        #expect(await collectAppMessages(stream, count: 1, within: 5, opening: b).first?.payload == payload)
        await server.shutdown()
    }

    // MARK: - 3. Session creation

    @Test("a creation with a wrong proof creates nothing")
    func wrongProofCreatesNothing() async throws {
        let server = try await Self.startServer { $0.allowsRemoteSessionCreation = true }
        for i in 0..<20 {
            let peer = try await RawPeer.connect(port: server.port)
            try await peer.authenticate(session: "s\(i)", secret: "guess", create: true, suppliedSecret: "other")
            #expect(await peer.closingErrorCode(within: 3) == .authenticationFailed)
        }
        #expect(server.sessionIDs.isEmpty)
        // A real host can still create one.
        var options = clientOptions(asHost: true)
        options.createSession = true
        let host = try await TandemClient.connect(invite: Invite.random(host: "127.0.0.1", port: server.port),
                                                  name: "host", options: options)
        #expect(server.sessionIDs == [host.invite.session])
        await server.shutdown()
    }

    @Test("each address may create a limited number of sessions per minute")
    func creationQuota() async throws {
        let server = try await Self.startServer {
            $0.allowsRemoteSessionCreation = true
            $0.sessionCreationsPerMinute = 2
        }
        var options = clientOptions(asHost: true)
        options.createSession = true
        for i in 0..<2 {
            _ = try await TandemClient.connect(invite: Invite.random(host: "127.0.0.1", port: server.port),
                                               name: "host\(i)", options: options)
        }
        await #expect {
            _ = try await TandemClient.connect(invite: Invite.random(host: "127.0.0.1", port: server.port),
                                               name: "host3", options: options)
        } throws: { error in
            if case TandemClientError.refused(let code, _) = error { return code == "creationRefused" }
            return false
        }
        #expect(server.sessionIDs.count == 2)
        // Another address has its own quota.
        let other = try await RawPeer.connect(port: server.port, from: "127.0.0.2")
        try await other.authenticate(session: "fromtwo", secret: "x", create: true)
        _ = try await other.waitForFrame(.accepted)
        #expect(server.sessionIDs.count == 3)
        await server.shutdown()
    }

    @Test("a server with a creation token refuses creations without it")
    func creationToken() async throws {
        let server = try await Self.startServer {
            $0.allowsRemoteSessionCreation = true
            $0.createToken = "open-sesame"
        }
        var options = clientOptions(asHost: true)
        options.createSession = true
        for token in [nil, "wrong"] as [String?] {
            options.createToken = token
            await #expect {
                _ = try await TandemClient.connect(invite: Invite.random(host: "127.0.0.1", port: server.port),
                                                   name: "host", options: options)
            } throws: { error in
                if case TandemClientError.refused(let code, _) = error { return code == "creationRefused" }
                return false
            }
        }
        #expect(server.sessionIDs.isEmpty)
        options.createToken = "open-sesame"
        let host = try await TandemClient.connect(invite: Invite.random(host: "127.0.0.1", port: server.port),
                                                  name: "host", options: options)
        // Joining an existing session needs no token.
        let guest = try await TandemClient.connect(invite: host.invite, name: "guest", options: clientOptions())
        #expect(guest.closedReason == nil)
        #expect(server.sessionIDs == [host.invite.session])
        await server.shutdown()
    }

    @Test("a created session nobody joins expires; a joined one stays")
    func unjoinedSessionsExpire() async throws {
        let server = try await Self.startServer {
            $0.allowsRemoteSessionCreation = true
            $0.unjoinedSessionLifetime = 400_000_000
            $0.handshakeTimeout = 20_000_000_000
        }
        let creator = try await RawPeer.connect(port: server.port)
        try await creator.authenticate(session: "lonely", secret: "x", create: true)
        _ = try await creator.waitForFrame(.accepted)
        #expect(server.sessionIDs == ["lonely"])
        var options = clientOptions(asHost: true)
        options.createSession = true
        let host = try await TandemClient.connect(invite: Invite.random(host: "127.0.0.1", port: server.port),
                                                  name: "host", options: options)
        #expect(await Self.eventually(within: 3) { server.sessionIDs == [host.invite.session] })
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(server.sessionIDs == [host.invite.session])
        await server.shutdown()
    }

    // MARK: - 4. Outbound queue bound

    @Test("a participant that stops reading is disconnected; the others go on and are told")
    func slowConsumer() async throws {
        let cap = 1 << 20
        let server = try await Self.startServer {
            $0.maxQueuedBytesPerConnection = cap
            $0.heartbeatTimeout = 60_000_000_000
        }
        let invite = try server.createSession(id: "slow")
        let sender = try await TandemClient.connect(invite: invite, name: "alice", options: clientOptions())
        let carol = try await TandemClient.connect(invite: invite, name: "carol", options: clientOptions())
        let notices = carol.serverMessages()
        let bob = try await RawPeer.connect(port: server.port, receiveBuffer: 4096)
        try await bob.joinAndGoSilent(invite: invite, name: "bob")
        try await bob.channel.setOption(ChannelOptions.autoRead, value: false).get()
        let payload = Data(repeating: 0x42, count: 200 * 1024)
        let start = ContinuousClock.now
        var sent = 0
        while server.slowConsumersDisconnected == 0, sent < 150, ContinuousClock.now - start < .seconds(20) {
            try await sender.sendAppMessage(payload)
            sent += 1
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(await Self.eventually(within: 5) { server.slowConsumersDisconnected == 1 }, "bob was not dropped after \(sent) messages")
        let notice = await firstMessage(in: notices, within: 10) { message in
            if case .notice(let notice) = message {
                return notice.text == "bob could not keep up and was disconnected" && notice.kind == .left
            }
            return false
        }
        #expect(notice != nil, "carol was not told that bob left")
        #expect(server.peakQueuedBytesPerConnection <= cap + payload.count + 1_024)
        #expect(sender.closedReason == nil && carol.closedReason == nil)
        // The others still talk.
        let after = carol.serverMessages()
        try await sender.sendAppMessage(Data("after".utf8))
        let got = await firstMessage(in: after, within: 5) { message in
            if case .appMessage(let app) = message { return openedPayload(app, with: carol) == Data("after".utf8) }
            return false
        }
        #expect(got != nil)
        #expect(await Self.eventually(within: 5) { server.queuedOutboundBytes == 0 || server.connectionCount == 2 })
        await server.shutdown()
    }

    // MARK: - 5. Frame limit on write

    @Test("a relayed frame over the frame limit is dropped, not sent")
    func oversizedRelayDropped() async throws {
        let limit = 64 * 1024
        let server = try await Self.startServer {
            $0.maxFrameSize = limit
            $0.heartbeatTimeout = 30_000_000_000
        }
        let invite = try server.createSession(id: "limit")
        let receiver = try await TandemClient.connect(invite: invite, name: "receiver", options: clientOptions())
        let stream = receiver.serverMessages()
        let sender = try await RawPeer.connect(port: server.port)
        try await sender.joinAndGoSilent(invite: invite, name: "sender-with-a-long-name")
        // An inbound frame of exactly the limit: the relayed one adds the source id and would exceed it.
        func appFrame(_ payloadSize: Int, sequence: UInt8, byte: UInt8) -> [UInt8] {
            [0] + [UInt8](repeating: 0, count: 7) + [sequence] + [0xff, 0xff] + [UInt8](repeating: byte, count: payloadSize)
        }
        try await sender.sendFrame(FrameKind.appMessage.rawValue, appFrame(limit - 1 - 11, sequence: 1, byte: 1))
        try await sender.sendFrame(FrameKind.appMessage.rawValue, appFrame(10, sequence: 2, byte: 2))
        let got = await collectAppMessages(stream, count: 1, within: 3)
        #expect(got.first?.payload == Data(repeating: 2, count: 10), "the oversized frame was relayed")
        #expect(receiver.closedReason == nil)
        await server.shutdown()
    }

    @Test("a welcome over the frame limit closes that joiner with frameTooLarge, not the server")
    func oversizedWelcome() async throws {
        let server = try await Self.startServer { $0.maxFrameSize = 2_048 }
        let activity = ActivityEnvelope(activityIdentifier: "Movie", metadata: GroupActivityMetadata(title: "m"),
                                        payload: Data(repeating: 1, count: 4_096), itemID: "m")
        let invite = try server.createSession(id: "huge", activity: activity)
        await #expect {
            _ = try await TandemClient.connect(invite: invite, name: "a", options: clientOptions())
        } throws: { error in
            if case TandemClientError.refused(let code, _) = error { return code == "frameTooLarge" }
            return false
        }
        #expect(await Self.eventually(within: 3) { server.connectionCount == 0 })
        #expect(server.sessionIDs == ["huge"])
        await server.shutdown()
    }

    // MARK: - 6. One answer

    @Test("an unknown session and a wrong secret get the same answer")
    func oneAnswer() async throws {
        let server = try await Self.startServer()
        let invite = try server.createSession(id: "known")
        let unknown = try await RawPeer.connect(port: server.port)
        try await unknown.authenticate(session: "unknown", secret: invite.secret)
        let wrong = try await RawPeer.connect(port: server.port)
        try await wrong.authenticate(session: "known", secret: "not-the-secret")
        let a = await unknown.closingError(within: 3)
        let b = await wrong.closingError(within: 3)
        #expect(a != nil && a?.code == b?.code && a?.message == b?.message)
        #expect(a?.code == .authenticationFailed)
        #expect(a?.message == "the server refused the invite; check it or ask the host for a fresh one")
        var stale = invite
        stale.session = "gone"
        await #expect(throws: TandemClientError.wrongSecret) {
            _ = try await TandemClient.connect(invite: stale, name: "x", options: clientOptions())
        }
        await server.shutdown()
    }
}

extension RawPeer {
    /// Says hello and proves `secret`; when creating, supplies the key of `suppliedSecret` (default `secret`).
    func authenticate(session: String, secret: String, create: Bool = false, suppliedSecret: String? = nil,
                      token: String? = nil) async throws {
        try await sendJSONFrame(.hello, Hello(protocolVersion: tandemProtocolVersion, session: session,
                                              create: create ? true : nil))
        let challenge = try JSONDecoder().decode(Challenge.self, from: try await waitForFrame(.challenge))
        let clientNonce = SessionAuth.nonce()
        let proof = SessionAuth.proof(key: SessionAuth.key(forSecret: secret), serverNonce: challenge.nonce,
                                      session: session, clientNonce: clientNonce)
        let supplied = create ? SessionAuth.key(forSecret: suppliedSecret ?? secret).withUnsafeBytes { Data($0) } : nil
        try await sendJSONFrame(.authProof, AuthProof(clientNonce: clientNonce, proof: proof, sessionKey: supplied,
                                                      createToken: token))
    }

    /// The last error or close frame the server sent before closing.
    func closingError(within timeout: Double) async -> ErrorBody? {
        guard let bytes = await bytesUntilClosed(within: timeout) else { return nil }
        for frame in RawPeer.frames(in: bytes).reversed()
        where frame.kind == FrameKind.error.rawValue || frame.kind == FrameKind.close.rawValue {
            return try? JSONDecoder().decode(ErrorBody.self, from: frame.body)
        }
        return nil
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
