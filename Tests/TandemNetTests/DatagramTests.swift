import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore
import Testing
@_spi(Testing) @testable import TandemNet

/// Unreliable app messages over UDP beside the TCP connection, with real sockets on 127.0.0.1.
@Suite(.serialized) struct DatagramTests {
    static func server(heartbeatTimeout: TimeSpan = .seconds(2), datagramsPerSecond: Int = 1_000,
                       datagrams: Bool = true) async throws -> SessionServer {
        var authority = AuthorityConfiguration()
        authority.endsWhenHostLeaves = false
        authority.appMessagesPerSecond = 10_000
        authority.appMessageBurst = 10_000
        var configuration = ServerConfiguration(authority: authority)
        configuration.maxFramesPerSecond = 20_000
        configuration.heartbeatTimeout = heartbeatTimeout
        configuration.datagramsPerSecond = datagramsPerSecond
        configuration.datagramEndpointTimeout = .seconds(1.5)
        configuration.datagrams = datagrams
        var logger = Logger(label: "tandem.test.server")
        logger.logLevel = .warning
        return try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: logger)
    }

    static func options() -> TandemClient.Options {
        var options = clientOptions()
        options.datagramHelloInterval = .milliseconds(200)
        options.datagramAckTimeout = .seconds(1)
        return options
    }

    /// Two participants whose unreliable messages go over UDP.
    static func pair(on server: SessionServer) async throws -> (TandemClientConnection, TandemClientConnection) {
        let invite = try server.createSession(id: "udp")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: options())
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: options())
        #expect(await waitUntil(10) { ann.unreliablePath == .udp && bob.unreliablePath == .udp })
        return (ann, bob)
    }

    static func unreliableTexts(_ messages: [IncomingAppMessage]) -> [String] {
        messages.filter { $0.delivery == .unreliable }.map { String(decoding: $0.payload, as: UTF8.self) }
    }

    @Test func unreliableMessagesArriveOverUDP() async throws {
        let server = try await Self.server()
        let (ann, bob) = try await Self.pair(on: server)
        let inbox = bob.serverMessages()
        let before = server.datagramStatistics!.received
        for i in 0..<20 {
            try await ann.sendAppMessage(Data("u\(i)".utf8), delivery: .unreliable)
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        let got = await gatherAppMessages(inbox, count: 20, within: 10, opening: bob)
        #expect(Self.unreliableTexts(got).count >= 18)
        #expect(Set(Self.unreliableTexts(got)).isSubset(of: Set((0..<20).map { "u\($0)" })))
        #expect(got.allSatisfy { $0.source == ann.localParticipantID })
        // They went as datagrams both ways: the server took them on UDP and bob read them from UDP.
        #expect(server.datagramStatistics!.received - before >= 18)
        #expect(ann.datagramStatus.messagesSent == 20)
        #expect(bob.datagramStatus.messagesReceived >= 18)
        #expect(server.datagramStatistics!.rejected == 0)
        await ann.close()
        await bob.close()
        // Registrations end with their connections.
        #expect(await waitUntil(5) { server.datagrams!.memberCount == 0 })
        await server.shutdown()
    }

    @Test func unreliableKeepsFlowingWhileTheTCPPathIsStalled() async throws {
        // Long heartbeat timeouts: bob does not read his TCP connection for a while on purpose.
        let server = try await Self.server(heartbeatTimeout: .seconds(30))
        let (ann, bob) = try await Self.pair(on: server)
        // One subscription per phase: a stream whose reader gave up waiting ends.
        let inbox = bob.serverMessages()
        let laterInbox = bob.serverMessages()
        await bob.setTCPReadingPaused(true)
        // 7 MB of reliable messages: more than the socket buffers hold, so the server's TCP queue to bob backs up
        // (and stays under its 8 MiB bound).
        let chunk = Data(repeating: 7, count: 60 * 1024)
        for _ in 0..<120 { try await ann.sendAppMessage(chunk, delivery: .reliable) }
        #expect(await waitUntil(10) { server.queuedOutboundBytes > 0 })
        for i in 0..<10 {
            try await ann.sendAppMessage(Data("during stall \(i)".utf8), delivery: .unreliable)
            try await Task.sleep(nanoseconds: 30_000_000)
        }
        let during = await gatherAppMessages(inbox, count: 10, within: 5, opening: bob)
        #expect(Self.unreliableTexts(during).count >= 8)
        // Nothing reliable got through meanwhile: the TCP path really was stalled.
        #expect(during.allSatisfy { $0.delivery == .unreliable })
        await bob.setTCPReadingPaused(false)
        let after = await gatherAppMessages(laterInbox, count: 120, within: 30, opening: bob, counting: .reliable)
        #expect(after.filter { $0.delivery == .reliable }.count == 120)
        #expect(bob.closedReason == nil && ann.closedReason == nil)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func forgedReplayedAndOversizedDatagramsAreDroppedAndCounted() async throws {
        let server = try await Self.server()
        let (ann, bob) = try await Self.pair(on: server)
        let inbox = bob.serverMessages()
        let raw = try await RawDatagramSocket.open()
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: server.port)
        let annLink = try #require(ann.shared.datagramLink)

        try await raw.send(ByteBuffer(repeating: 0, count: 3000), to: target)                    // oversized
        try await raw.send(ByteBuffer(bytes: [0x54, 0x44, 1, 3, 9]), to: target)                   // malformed
        var unknown = ByteBuffer(bytes: [0x54, 0x44, 1, 1])
        unknown.writeInteger(UInt64(12345))
        unknown.writeInteger(UInt64(1))
        unknown.writeBytes([UInt8](repeating: 1, count: 17))
        try await raw.send(unknown, to: target)                                                    // unknown channel
        var forged = ByteBuffer(bytes: [0x54, 0x44, 1, 1])
        forged.writeInteger(annLink.id)
        forged.writeInteger(UInt64(1 << 40))
        forged.writeBytes([UInt8](repeating: 1, count: 17))
        try await raw.send(forged, to: target)                                                     // forged hello for ann
        // A genuine datagram of ann's, captured and sent twice: it is relayed once, the copy is a replay.
        let message = ClientMessage.appMessage(try #require(ann.shared.appData).seal(OutgoingAppMessage(
            recipients: .all, delivery: .unreliable, sequence: 0, payload: Data("captured".utf8)),
            from: ann.localParticipantID, epoch: ann.shared.sealingEpoch))
        let captured = try #require(annLink.datagram(for: message))
        try await raw.send(captured, to: target)
        try await raw.send(captured, to: target)

        #expect(await waitUntil(10) {
            let s = server.datagramStatistics!
            return s.oversized == 1 && s.malformed == 1 && s.unknownChannel == 1 && s.badAuthentication == 1
                && s.replayed == 1
        })
        let copies = await gatherAppMessages(inbox, count: 2, within: 2, opening: bob)
        #expect(Self.unreliableTexts(copies) == ["captured"])

        // The session goes on: the forged hello did not move ann's endpoint, both still use UDP both ways.
        let annInbox = ann.serverMessages()
        let annReceived = ann.datagramStatus.messagesReceived
        for i in 0..<5 {
            try await bob.sendAppMessage(Data("after \(i)".utf8), delivery: .unreliable)
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let after = await gatherAppMessages(annInbox, count: 5, within: 10, opening: ann)
        #expect(Self.unreliableTexts(after).count >= 4)
        #expect(ann.datagramStatus.messagesReceived - annReceived >= 4)
        #expect(ann.unreliablePath == .udp && bob.unreliablePath == .udp)
        #expect(ann.closedReason == nil && bob.closedReason == nil)
        await raw.close()
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func oversizedUnreliableMessagesAreRefusedBeforeSending() async throws {
        let server = try await Self.server()
        let (ann, bob) = try await Self.pair(on: server)
        let limit = MessageDelivery.maxUnreliableSize
        await #expect(throws: TandemClientError.unreliableMessageTooLarge(size: limit + 1, limit: limit)) {
            try await ann.sendAppMessage(Data(count: limit + 1), delivery: .unreliable)
        }
        let messenger = GroupSessionMessenger(link: ann, deliveryMode: .unreliable)
        await #expect(throws: GroupSessionMessenger.MessengerError.unreliableMessageTooLarge(size: limit + 1,
                                                                                             limit: limit)) {
            try await messenger.send(Data(count: limit))  // plus the messenger's one-byte tag
        }
        // The largest one still fits one datagram.
        let inbox = bob.serverMessages()
        let before = server.datagramStatistics!.received
        try await messenger.send(Data(count: limit - 1))
        let got = await gatherAppMessages(inbox, count: 1, within: 10, opening: bob)
        #expect(got.first?.payload.count == limit)
        #expect(server.datagramStatistics!.received > before)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func eachMemberIsBoundToItsDatagramRate() async throws {
        let server = try await Self.server(datagramsPerSecond: 50)
        let (ann, bob) = try await Self.pair(on: server)
        let inbox = bob.serverMessages()
        let start = ContinuousClock.now
        for i in 0..<300 { try await ann.sendAppMessage(Data("flood \(i)".utf8), delivery: .unreliable) }
        let got = await gatherAppMessages(inbox, count: 300, within: 2, opening: bob)
        let elapsed = Double((ContinuousClock.now - start).components.seconds) + 1
        #expect(server.datagramStatistics!.rateLimited > 0)
        // At most the burst plus the rate over the time it took (generously rounded up).
        #expect(Double(got.count) <= 50 + 50 * elapsed + 10)
        #expect(ann.closedReason == nil && bob.closedReason == nil)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func fallsBackToTCPWhenUDPIsBlockedAndComesBack() async throws {
        let server = try await Self.server()
        let (ann, bob) = try await Self.pair(on: server)
        let inbox = bob.serverMessages()
        server.setDropsIncomingDatagrams(true)
        #expect(await waitUntil(10) {
            if case .tcp = ann.unreliablePath, case .tcp = bob.unreliablePath { return true }
            return false
        })
        #expect(ann.datagramStatus.fallbacks >= 1)
        let receivedWhileBlocked = server.datagramStatistics!.received
        for i in 0..<10 {
            try await ann.sendAppMessage(Data("blocked \(i)".utf8), delivery: .unreliable)
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let blocked = await gatherAppMessages(inbox, count: 10, within: 10, opening: bob)
        #expect(Self.unreliableTexts(blocked).count == 10)  // over TCP, which does not lose them here
        #expect(server.datagramStatistics!.received == receivedWhileBlocked)

        server.setDropsIncomingDatagrams(false)
        #expect(await waitUntil(10) { ann.unreliablePath == .udp && bob.unreliablePath == .udp })
        let inboxAfter = bob.serverMessages()
        let before = server.datagramStatistics!.received
        for i in 0..<10 {
            try await ann.sendAppMessage(Data("back \(i)".utf8), delivery: .unreliable)
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let back = await gatherAppMessages(inboxAfter, count: 10, within: 10, opening: bob)
        #expect(Self.unreliableTexts(back).count >= 9)
        #expect(server.datagramStatistics!.received - before >= 9)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func aReconnectOpensANewDatagramChannelAndForgetsTheOld() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "udp-reconnect")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: Self.options())
        var bobOptions = reconnectingOptions(grace: 10)
        bobOptions.datagramHelloInterval = .milliseconds(200)
        bobOptions.datagramAckTimeout = .seconds(1)
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: bobOptions)
        #expect(await waitUntil(10) { ann.unreliablePath == .udp && bob.unreliablePath == .udp })
        let oldChannel = try #require(bob.shared.datagramLink?.id)
        let events = bob.connectionEvents()

        await bob.dropChannel()
        let back = await firstConnectionEvent(in: events, within: 10) { event in
            if case .reconnected = event { return true } else { return false }
        }
        #expect(back != nil)
        #expect(await waitUntil(10) { bob.unreliablePath == .udp && bob.shared.datagramLink?.id != oldChannel })
        // One registration per joined connection: the lost one's is gone.
        #expect(await waitUntil(5) { server.datagrams!.memberCount == 2 })
        let inbox = bob.serverMessages()
        let before = bob.datagramStatus.messagesReceived
        for i in 0..<5 {
            try await ann.sendAppMessage(Data("again \(i)".utf8), delivery: .unreliable)
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let got = await gatherAppMessages(inbox, count: 5, within: 10, opening: bob)
        #expect(Self.unreliableTexts(got).count >= 4)
        #expect(bob.datagramStatus.messagesReceived - before >= 4)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func withoutUDPOnTheServerUnreliableMessagesGoOverTCP() async throws {
        let server = try await Self.server(datagrams: false)
        #expect(server.datagramStatistics == nil)
        let invite = try server.createSession(id: "tcp-only")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: Self.options())
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: Self.options())
        #expect(ann.unreliablePath == .tcp(reason: "the server offers no UDP"))
        let inbox = bob.serverMessages()
        try await ann.sendAppMessage(Data("over tcp".utf8), delivery: .unreliable)
        let got = await gatherAppMessages(inbox, count: 1, within: 10, opening: bob)
        #expect(Self.unreliableTexts(got) == ["over tcp"])
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test func datagramFormatAndReplayWindow() throws {
        let key = DatagramKey.derive(sessionKey: SessionAuth.key(forSecret: "s"), serverNonce: Data(count: 32),
                                     clientNonce: Data(count: 16))
        var body = ByteBuffer()
        body.writeString("hello")
        let sealed = try DatagramCodec.seal(.appMessage, channel: 7, sequence: 3, body: body, key: key,
                                            direction: .clientToServer, allocator: ByteBufferAllocator())
        #expect(sealed.readableBytes == DatagramCodec.headerSize + 5 + DatagramCodec.tagSize)
        let header = try DatagramCodec.header(of: sealed)
        #expect(header == DatagramCodec.Header(type: .appMessage, channel: 7, sequence: 3))
        #expect(try DatagramCodec.open(sealed, header: header, key: key, direction: .clientToServer) == body)
        // The other direction's nonce, or any changed byte (header included), does not open.
        #expect(throws: DatagramRejection.badAuthentication) {
            try DatagramCodec.open(sealed, header: header, key: key, direction: .serverToClient)
        }
        for index in [5, 19, 22, sealed.readableBytes - 1] {
            var altered = sealed
            altered.setInteger(altered.getInteger(at: index, as: UInt8.self)! ^ 1, at: index)
            let alteredHeader = try DatagramCodec.header(of: altered)
            #expect(throws: DatagramRejection.badAuthentication) {
                try DatagramCodec.open(altered, header: alteredHeader, key: key, direction: .clientToServer)
            }
        }
        #expect(throws: DatagramRejection.oversized) { try DatagramCodec.header(of: ByteBuffer(repeating: 0, count: 2049)) }

        var window = ReplayWindow()
        let answers = [0, 5, 3, 4, 5, 3, 100, 36, 37, 37].map { window.accept(UInt64($0)) }
        // 0 is never valid; reordering is fine, repeats are not; 36 is older than the window, 37 at its edge.
        #expect(answers == [false, true, true, true, false, false, true, false, true, false])
    }
}

/// The app messages (opened with `receiver`'s cipher) that arrive on `stream` until `count` have or `timeout`
/// passes: whatever arrived by then, unlike `collectAppMessages`. With `delivery`, only messages of that delivery
/// count towards `count`. A stream whose reader gave up waiting ends: use another subscription afterwards.
func gatherAppMessages(_ stream: AsyncStream<ServerMessage>, count: Int, within timeout: Double,
                       opening receiver: TandemClientConnection,
                       counting delivery: MessageDelivery? = nil) async -> [IncomingAppMessage] {
    let gathered = NIOLockedValueBox<[IncomingAppMessage]>([])
    await withTaskGroup(of: Void.self) { group in
        group.addTask {
            for await message in stream {
                guard case .appMessage(var app) = message else { continue }
                if let opened = openedPayload(app, with: receiver) { app.payload = opened }
                let counted = gathered.withLockedValue { all -> Int in
                    all.append(app)
                    return all.filter { delivery == nil || $0.delivery == delivery }.count
                }
                if counted >= count { return }
            }
        }
        group.addTask { try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9)) }
        await group.next()
        group.cancelAll()
    }
    return gathered.withLockedValue { $0 }
}

/// A bare UDP socket on 127.0.0.1 for sending the server what no client would.
final class RawDatagramSocket: Sendable {
    let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    static func open() async throws -> RawDatagramSocket {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        return RawDatagramSocket(channel: channel)
    }

    func send(_ bytes: ByteBuffer, to address: SocketAddress) async throws {
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: bytes)).get()
    }

    func close() async {
        try? await channel.close()
    }
}
