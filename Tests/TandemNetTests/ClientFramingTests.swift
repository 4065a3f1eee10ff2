import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// A loopback forwarder that passes the client's bytes on as they come and cuts the server's into pieces of 1 to
/// 7 bytes, each written and flushed on its own, so the client reads frames split at every kind of boundary.
final class ChoppingProxy: Sendable {
    let port: Int
    private let listener: any Channel

    private final class Forward: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let other: any Channel
        let chop: Bool
        init(to other: any Channel, chop: Bool) {
            self.other = other
            self.chop = chop
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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

    private init(port: Int, listener: any Channel) {
        self.port = port
        self.listener = listener
    }

    static func start(forwardingTo target: Int) async throws -> ChoppingProxy {
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        outbound.eventLoop.makeCompletedFuture {
                            try outbound.pipeline.syncOperations.addHandler(Forward(to: inbound, chop: true))
                        }.flatMap {
                            inbound.pipeline.addHandler(Forward(to: outbound, chop: false))
                        }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ChoppingProxy(port: listener.localAddress!.port!, listener: listener)
    }

    func stop() async { try? await listener.close() }
}

@Suite("The client frames its bytes however they are cut")
struct ClientFramingTests {
    @Test("a client whose server's bytes arrive in pieces of 1 to 7 bytes joins, and gets every message whole and in order")
    func choppedStream() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession()
        let proxy = try await ChoppingProxy.start(forwardingTo: invite.port)
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
