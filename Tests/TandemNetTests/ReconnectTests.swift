import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// A TCP forwarder on loopback between clients and a server, whose connections a test can cut and whose port it
/// can close, as a network failure would. With `choppingReplies`, the server's bytes go on in pieces of 1 to 7
/// bytes, each written and flushed on its own, so the client reads frames split at every kind of boundary.
final class BreakableProxy: Sendable {
    let port: Int
    private let listener: any Channel
    private let channels: NIOLockedValueBox<[any Channel]>

    /// While set, what clients send goes nowhere (a link that dies with bytes on the way); `cut` clears it.
    private let swallowing: NIOLockedValueBox<Bool>

    private final class Forward: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let other: any Channel
        let chop: Bool
        let swallowing: NIOLockedValueBox<Bool>?
        init(to other: any Channel, chop: Bool = false, swallowing: NIOLockedValueBox<Bool>? = nil) {
            self.other = other
            self.chop = chop
            self.swallowing = swallowing
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if swallowing?.withLockedValue({ $0 }) == true { return }
            var bytes = unwrapInboundIn(data)
            guard chop else {
                other.writeAndFlush(bytes, promise: nil)
                return
            }
            var size = 1
            while let piece = bytes.readSlice(length: Swift.min(size, bytes.readableBytes)), piece.readableBytes > 0 {
                other.writeAndFlush(piece, promise: nil)
                size = size % 7 + 1
            }
        }
        func channelInactive(context: ChannelHandlerContext) {
            other.close(promise: nil)
            context.fireChannelInactive()
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }

    private init(port: Int, listener: any Channel, channels: NIOLockedValueBox<[any Channel]>,
                 swallowing: NIOLockedValueBox<Bool>) {
        self.port = port
        self.listener = listener
        self.channels = channels
        self.swallowing = swallowing
    }

    static func start(forwardingTo target: Int, choppingReplies: Bool = false) async throws -> BreakableProxy {
        let channels = NIOLockedValueBox<[any Channel]>([])
        let swallowing = NIOLockedValueBox(false)
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                channels.withLockedValue { $0.append(inbound) }
                return ClientBootstrap(group: inbound.eventLoop).connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        channels.withLockedValue { $0.append(outbound) }
                        return outbound.eventLoop.makeCompletedFuture {
                            try outbound.pipeline.syncOperations.addHandler(Forward(to: inbound, chop: choppingReplies))
                        }.flatMap {
                            inbound.pipeline.addHandler(Forward(to: outbound, swallowing: swallowing))
                        }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return BreakableProxy(port: listener.localAddress!.port!, listener: listener, channels: channels,
                              swallowing: swallowing)
    }

    /// From now until `cut`, what clients send is dropped here.
    func swallow() { swallowing.withLockedValue { $0 = true } }

    /// Cuts every connection through the proxy (what comes next is forwarded again).
    func cut() async {
        swallowing.withLockedValue { $0 = false }
        for channel in channels.withLockedValue({ list in defer { list.removeAll() }; return list }) {
            try? await channel.close()
        }
    }

    /// Stops accepting: new connections are refused.
    func stop() async {
        try? await listener.close()
        await cut()
    }
}

func reconnectingOptions(grace: Double) -> TandemClient.Options {
    var options = clientOptions()
    options.reconnectGracePeriod = .seconds(grace)
    options.reconnectFirstDelay = 50_000_000
    options.reconnectMaxDelay = 200_000_000
    options.connectTimeout = 1_000_000_000
    return options
}

/// Waits for the first connection event satisfying `predicate`, or nil after `timeout` seconds.
func firstConnectionEvent(in stream: AsyncStream<ConnectionEvent>, within timeout: Double,
                          where predicate: @escaping @Sendable (ConnectionEvent) -> Bool = { _ in true }) async -> ConnectionEvent? {
    await firstElement(in: stream, within: timeout, where: predicate)
}

@Suite("Reconnecting after a lost link", .serialized)
struct ReconnectTests {
    @Test("a dropped channel reconnects as the same participant; subscribers get a fresh welcome and later messages")
    func droppedChannelReconnects() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: reconnectingOptions(grace: 10))
        let bobID = bob.localParticipantID
        let messages = bob.serverMessages()
        let hostMessages = host.serverMessages()
        let links = bob.connectionEvents()

        await bob.dropChannel()
        let lost = await firstConnectionEvent(in: links, within: 3)
        guard case .reconnecting? = lost else {
            Issue.record("no reconnecting event: \(String(describing: lost))")
            return
        }
        // A reliable send during the gap waits for the new link and then goes out.
        let sent = Task { try await bob.sendAppMessage(Data("sent during the gap".utf8)) }
        let back = await firstConnectionEvent(in: links, within: 5)
        guard case .reconnected(let after)? = back else {
            Issue.record("no reconnected event: \(String(describing: back))")
            return
        }
        #expect(after >= 0 && after < 5_000_000_000)
        try await sent.value
        #expect(bob.closedReason == nil)
        #expect(bob.localParticipantID == bobID)
        #expect(bob.welcome.localParticipant.id == bobID)

        // The same stream carries a notice, the fresh welcome, then what others send after the reconnect.
        let welcome = await firstMessage(in: messages, within: 3) { message in
            if case .welcome = message { return true } else { return false }
        }
        guard case .welcome(let snapshot)? = welcome else {
            Issue.record("no fresh welcome on the subscriber's stream")
            return
        }
        #expect(snapshot.localParticipant.id == bobID)
        #expect(snapshot.participants.contains { $0.participant.id == bobID })
        try await host.sendAppMessage(Data("after the reconnect".utf8))
        let got = await collectAppMessages(messages, count: 1, within: 3, opening: bob)
        #expect(got.first?.payload == Data("after the reconnect".utf8))
        let fromBob = await collectAppMessages(hostMessages, count: 1, within: 3, opening: host)
        #expect(fromBob.first?.payload == Data("sent during the gap".utf8))
        #expect(fromBob.first?.source == bobID)

        // Clock sync goes on over the new channel.
        #expect(bob.clockMapping() != nil)
        await bob.close()
        await host.close()
        await server.shutdown()
    }

    @Test("reliable messages sent while a receiver's link was down reach it when it is back, each once and in order (its sender resends them)")
    func noReliableMessageLostAcrossAReconnect() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: reconnectingOptions(grace: 10))
        let links = bob.connectionEvents()
        let opened = NIOLockedValueBox<[Int]>([])
        let stream = bob.appMessages()
        let reader = Task {
            for await message in stream {
                if let number = Int(String(decoding: message.payload, as: UTF8.self)) { opened.withLockedValue { $0.append(number) } }
            }
        }
        defer { reader.cancel() }
        let total = 200
        let sender = Task {
            for number in 1...total {
                try await host.sendAppMessage(Data("\(number)".utf8))
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        #expect(await waitUntil(10) { opened.withLockedValue { $0.count } >= 40 })
        await bob.dropChannel()
        let back = await firstConnectionEvent(in: links, within: 5) { if case .reconnected = $0 { true } else { false } }
        #expect(back != nil, "bob did not reconnect")
        try await sender.value
        #expect(await waitUntil(10) { opened.withLockedValue { $0.last } == total })
        let received = opened.withLockedValue { $0 }
        #expect(received == Array(1...total), "lost: \(Set(1...total).subtracting(received).sorted()), received: \(received)")
        #expect(!bob.appDataDrops.anyAltered, "\(bob.appDataDrops)")
        await bob.close()
        await host.close()
        await server.shutdown()
    }

    @Test("a sender whose link drops mid-stream: what it sends waits for the new link, and its receiver gets every message once and in order")
    func senderDropLosesNothing() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let host = try await TandemClient.connect(invite: invite, name: "host", options: reconnectingOptions(grace: 10))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: reconnectingOptions(grace: 10))
        let links = host.connectionEvents()
        let opened = NIOLockedValueBox<[Int]>([])
        let stream = bob.appMessages()
        let reader = Task {
            for await message in stream {
                if let number = Int(String(decoding: message.payload, as: UTF8.self)) { opened.withLockedValue { $0.append(number) } }
            }
        }
        defer { reader.cancel() }
        let total = 200
        let sender = Task {
            for number in 1...total {
                try await host.sendAppMessage(Data("\(number)".utf8))
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        #expect(await waitUntil(10) { opened.withLockedValue { $0.count } >= 40 })
        await host.dropChannel()
        let back = await firstConnectionEvent(in: links, within: 5) { if case .reconnected = $0 { true } else { false } }
        #expect(back != nil, "the sender did not reconnect")
        try await sender.value
        #expect(await waitUntil(10) { opened.withLockedValue { $0.last } == total })
        let received = opened.withLockedValue { $0 }
        #expect(received == Array(1...total), "lost: \(Set(1...total).subtracting(received).sorted()), received: \(received)")
        #expect(!bob.appDataDrops.anyAltered, "\(bob.appDataDrops)")
        await bob.close()
        await host.close()
        await server.shutdown()
    }

    @Test("a sender's last messages that die with its link on the way to the relay reach every receiver once and in order (the relay asks the sender for them)")
    func messagesLostOnTheWayAreResent() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let proxy = try await BreakableProxy.start(forwardingTo: invite.port)
        var viaProxy = invite
        viaProxy.host = "127.0.0.1"
        viaProxy.port = proxy.port
        let host = try await TandemClient.connect(invite: viaProxy, name: "host", options: reconnectingOptions(grace: 10))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: reconnectingOptions(grace: 10))
        let carol = try await TandemClient.connect(invite: invite, name: "carol", options: reconnectingOptions(grace: 10))
        let links = host.connectionEvents()
        var readers: [Task<Void, Never>] = []
        var boxes: [NIOLockedValueBox<[Int]>] = []
        for receiver in [bob, carol] {
            let opened = NIOLockedValueBox<[Int]>([])
            let stream = receiver.appMessages()
            readers.append(Task {
                for await message in stream {
                    if let number = Int(String(decoding: message.payload, as: UTF8.self)) { opened.withLockedValue { $0.append(number) } }
                }
            })
            boxes.append(opened)
        }
        defer { for reader in readers { reader.cancel() } }
        for number in 1...20 { try await host.sendAppMessage(Data("\(number)".utf8)) }
        #expect(await waitUntil(10) { boxes.allSatisfy { $0.withLockedValue { $0.count } == 20 } })
        // 21…25 are written to a link whose bytes no longer reach the relay; then it breaks.
        proxy.swallow()
        for number in 21...25 { try await host.sendAppMessage(Data("\(number)".utf8)) }
        try await Task.sleep(for: .milliseconds(100))
        await proxy.cut()
        let back = await firstConnectionEvent(in: links, within: 5) { if case .reconnected = $0 { true } else { false } }
        #expect(back != nil, "the sender did not reconnect")
        for number in 26...40 { try await host.sendAppMessage(Data("\(number)".utf8)) }
        #expect(await waitUntil(10) { boxes.allSatisfy { $0.withLockedValue { $0.last } == 40 } })
        for (receiver, opened) in zip([bob, carol], boxes) {
            let received = opened.withLockedValue { $0 }
            #expect(received == Array(1...40), "lost: \(Set(1...40).subtracting(received).sorted()), received: \(received)")
            #expect(!receiver.appDataDrops.anyAltered, "\(receiver.appDataDrops)")
        }
        for client in [host, bob, carol] { await client.close() }
        await proxy.stop()
        await server.shutdown()
    }

    @Test("a cut link through a proxy reconnects; with the server gone the connection ends with connectionLost after the grace period")
    func graceRunsOut() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let proxy = try await BreakableProxy.start(forwardingTo: invite.port)
        var viaProxy = invite
        viaProxy.host = "127.0.0.1"
        viaProxy.port = proxy.port
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let bob = try await TandemClient.connect(invite: viaProxy, name: "bob", options: reconnectingOptions(grace: 1))
        let bobID = bob.localParticipantID
        let messages = bob.serverMessages()
        let links = bob.connectionEvents()

        // A cut (the server end closes too): reconnected through the proxy, same identity.
        await proxy.cut()
        let back = await firstConnectionEvent(in: links, within: 5) { if case .reconnected = $0 { true } else { false } }
        #expect(back != nil, "did not reconnect after a cut")
        #expect(bob.localParticipantID == bobID && bob.closedReason == nil)

        // The server becomes unreachable: the connection gives up after about a second.
        let cutAt = ContinuousClock.now
        await proxy.stop()
        let end = await firstMessage(in: messages, within: 5) { message in
            if case .invalidated = message { return true } else { return false }
        }
        let elapsed = ContinuousClock.now - cutAt
        guard case .invalidated(let reason)? = end else {
            Issue.record("the connection did not end")
            return
        }
        #expect(reason.code == .connectionLost)
        #expect(bob.closedReason?.code == .connectionLost)
        #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(3), "ended after \(elapsed)")
        await #expect(throws: InvalidationReason.self) { try await bob.sendAppMessage(Data("too late".utf8)) }
        await host.close()
        await server.shutdown()
    }

    @Test("closing while reconnecting stops it and ends the streams as left")
    func closeWhileReconnecting() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let proxy = try await BreakableProxy.start(forwardingTo: invite.port)
        var viaProxy = invite
        viaProxy.port = proxy.port
        viaProxy.host = "127.0.0.1"
        let bob = try await TandemClient.connect(invite: viaProxy, name: "bob", options: reconnectingOptions(grace: 30))
        let messages = bob.serverMessages()
        let links = bob.connectionEvents()
        await proxy.stop()
        #expect(await firstConnectionEvent(in: links, within: 3) != nil)
        #expect(bob.isReconnecting)
        let closedAt = ContinuousClock.now
        await bob.close()
        let end = await firstMessage(in: messages, within: 2) { message in
            if case .invalidated = message { return true } else { return false }
        }
        guard case .invalidated(let reason)? = end else {
            Issue.record("the streams did not end")
            return
        }
        #expect(reason.code == .left)
        #expect(ContinuousClock.now - closedAt < .seconds(1))
        #expect(!bob.isReconnecting)
        await server.shutdown()
    }

    @Test("a journal keeps one copy of each attachment across a reconnect (the server replays them all)")
    func journalAcrossAReconnect() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: reconnectingOptions(grace: 10))
        let journal = GroupSessionJournal(link: bob)
        async let _ = journal.run()
        let links = bob.connectionEvents()
        let first = try await host.uploadAttachment(Data(repeating: 1, count: 100_000), name: "one")
        #expect(await waitUntil(3) { journal.currentAttachments.map(\.id) == [first.id] })
        await bob.dropChannel()
        #expect(await firstConnectionEvent(in: links, within: 5) { if case .reconnected = $0 { true } else { false } } != nil)
        let second = try await host.uploadAttachment(Data(repeating: 2, count: 1_000), name: "two")
        #expect(await waitUntil(3) { journal.currentAttachments.map(\.id) == [first.id, second.id] },
                "attachments: \(journal.currentAttachments.map(\.info.name))")
        await bob.close()
        await host.close()
        await server.shutdown()
    }

    @Test("a server that ends the session is not reconnected to")
    func serverShutdownIsFinal() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: reconnectingOptions(grace: 30))
        let messages = bob.serverMessages()
        await server.shutdown()
        let end = await firstMessage(in: messages, within: 3) { message in
            if case .invalidated = message { return true } else { return false }
        }
        guard case .invalidated(let reason)? = end else {
            Issue.record("the session did not end for bob")
            return
        }
        #expect(reason.code == .serverShutdown)
        #expect(!bob.isReconnecting)
    }
}

/// Polls `condition` every 20 ms for up to `timeout` seconds.
func waitUntil(_ timeout: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return condition()
}
