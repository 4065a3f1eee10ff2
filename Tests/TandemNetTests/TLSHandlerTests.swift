import Foundation
import NIOCore
import NIOEmbedded
import NIOTLS
import TandemNet
import TandemTLS
import Testing

/// The TLS handler (OpenSSL's libssl over memory buffers) between two in-memory channels whose bytes the test moves:
/// handshakes, pins, trust roots and names, what waits for the handshake, goodbyes, and hostile bytes.
@Suite("TLS handler")
struct TLSHandlerTests {
    /// What reaches the handler above TLS.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var received: [UInt8] = []
        var secured = false
        var errors: [any Error] = []
        var inactive = false
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += unwrapInboundIn(data).readableBytesView
        }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted? = event as? TLSUserEvent { secured = true }
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }
        func channelInactive(context: ChannelHandlerContext) { inactive = true }
    }

    struct Pair {
        let client: EmbeddedChannel
        let server: EmbeddedChannel
        let clientSide = Recorder()
        let serverSide = Recorder()
        /// Bytes moved between the two so far (both ways).
        var moved = 0

        init(client: TLSHandler, server: TLSHandler) throws {
            self.client = EmbeddedChannel()
            self.server = EmbeddedChannel()
            try self.client.pipeline.syncOperations.addHandlers([client, clientSide])
            try self.server.pipeline.syncOperations.addHandlers([server, serverSide])
            try self.server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            try self.client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        /// Moves bytes both ways until neither side has any to send (or one closed).
        mutating func exchange() throws {
            for _ in 0..<100 {
                var any = false
                for (from, to) in [(client, server), (server, client)] {
                    while let bytes = try from.readOutbound(as: ByteBuffer.self) {
                        any = true
                        moved += bytes.readableBytes
                        if to.isActive { try to.writeInbound(bytes) }
                    }
                }
                if !any { return }
            }
        }
    }

    /// Runs `body` with a fresh self-signed certificate (for localhost and 127.0.0.1), removed after.
    static func withCertificate(_ body: (ServerTLSFiles) throws -> Void) throws {
        guard let files = try TLSTests.makeCertificate() else {
            Issue.record("openssl is not installed: TLS test skipped (make deps installs it)")
            return
        }
        defer { TLSTests.removeCertificate(files) }
        try body(files)
    }

    static func serverHandler(_ files: ServerTLSFiles) throws -> (TLSHandler, TLSContext) {
        let context = try TLSContext.server(certificateChainPath: files.certificateChainPath,
                                            privateKeyPath: files.privateKeyPath)
        return (try TLSHandler.server(context: context), context)
    }

    @Test("a pinned client and a server exchange bytes both ways, large writes in order; writes before the handshake wait for it")
    func pinnedRoundTrip() throws {
        try Self.withCertificate { files in
            let (server, serverContext) = try Self.serverHandler(files)
            #expect(serverContext.leafIsSelfSigned && serverContext.leafSHA256?.count == 32)
            let client = try TLSHandler.client(context: .pinningClient(), serverName: "127.0.0.1",
                                               pinnedSHA256: serverContext.leafSHA256)
            var pair = try Pair(client: client, server: server)
            // Written before the handshake: held, then sent encrypted once it is done.
            let early = pair.client.writeAndFlush(ByteBuffer(string: "hello before the handshake"))
            try pair.exchange()
            #expect(pair.clientSide.secured && pair.serverSide.secured)
            try early.wait()
            #expect(String(decoding: pair.serverSide.received, as: UTF8.self) == "hello before the handshake")
            // 3 MB in one write, then 1000 small ones: everything arrives, in order, and encrypted on the way.
            let big = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            pair.server.write(ByteBuffer(bytes: big), promise: nil)
            for index in 0..<1000 { pair.server.write(ByteBuffer(string: "\(index),"), promise: nil) }
            pair.server.flush()
            let before = pair.moved
            try pair.exchange()
            #expect(pair.clientSide.received.count == big.count + (0..<1000).map { "\($0),".utf8.count }.reduce(0, +))
            #expect(Array(pair.clientSide.received.prefix(big.count)) == big)
            #expect(String(decoding: pair.clientSide.received.suffix(8), as: UTF8.self) == "998,999,")
            #expect(pair.moved - before > big.count, "the bytes did not go through TLS")
            // An orderly close: the peer sees close_notify and answers with its own, which ends the close; what the
            // peer sent meanwhile is read and dropped, and neither side reports an error.
            pair.server.writeAndFlush(ByteBuffer(string: "sent as the client closes"), promise: nil)
            let closed = pair.client.close()
            #expect(pair.client.isActive, "closed before the peer's close_notify")
            let received = pair.clientSide.received.count
            try pair.exchange()
            try closed.wait()
            #expect(!pair.client.isActive && pair.clientSide.received.count == received)
            #expect(pair.serverSide.inactive && pair.serverSide.errors.isEmpty && pair.clientSide.errors.isEmpty)
        }    }

    @Test("a close whose close_notify gets no answer closes the socket after the shutdown timeout, or at once on a second close")
    func closeWithoutAnswer() throws {
        try Self.withCertificate { files in
            for second in [false, true] {
                let (server, serverContext) = try Self.serverHandler(files)
                let client = try TLSHandler.client(context: .pinningClient(), serverName: "localhost",
                                                   pinnedSHA256: serverContext.leafSHA256)
                var pair = try Pair(client: client, server: server)
                try pair.exchange()
                let closed = pair.client.close()
                _ = try pair.client.readOutbound(as: ByteBuffer.self)  // the close_notify, lost on the way
                pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(1900))
                #expect(pair.client.isActive)
                if second {
                    pair.client.close(promise: nil)
                } else {
                    pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(200))
                }
                try closed.wait()
                #expect(!pair.client.isActive && pair.clientSide.errors.isEmpty)
            }
        }    }

    @Test("a pin that does not match fails the handshake on the client's side: nothing written reaches the server")
    func wrongPin() throws {
        try Self.withCertificate { files in
            let (server, _) = try Self.serverHandler(files)
            let client = try TLSHandler.client(context: .pinningClient(), serverName: "localhost",
                                               pinnedSHA256: [UInt8](repeating: 7, count: 32))
            var pair = try Pair(client: client, server: server)
            let early = pair.client.writeAndFlush(ByteBuffer(string: "secret"))
            try pair.exchange()
            #expect(!pair.clientSide.secured)
            #expect(pair.clientSide.errors.contains { ($0 as? TandemTLSError) == .pinMismatch })
            #expect(throws: TandemTLSError.self) { try early.wait() }
            #expect(pair.serverSide.received.isEmpty)
            #expect(!pair.client.isActive)
        }    }

    @Test("checked against trust roots: the certificate's names and addresses pass, another name and an unknown root fail, saying why")
    func trustRootsAndNames() throws {
        try Self.withCertificate { files in
            try Self.withCertificate { other in
                for name in ["localhost", "127.0.0.1"] {
                    let (server, _) = try Self.serverHandler(files)
                    let client = try TLSHandler.client(context: .client(trustRootsPath: files.certificateChainPath),
                                                       serverName: name)
                    var pair = try Pair(client: client, server: server)
                    try pair.exchange()
                    #expect(pair.clientSide.secured && pair.clientSide.errors.isEmpty, "\(name)")
                }
                let failures: [(String, String, String)] = [
                    (files.certificateChainPath, "example.org", "hostname mismatch"),
                    (files.certificateChainPath, "127.0.0.2", "IP address mismatch"),
                    (other.certificateChainPath, "localhost", "self-signed certificate"),
                ]
                for (roots, name, reason) in failures {
                    let (server, _) = try Self.serverHandler(files)
                    let client = try TLSHandler.client(context: .client(trustRootsPath: roots), serverName: name)
                    var pair = try Pair(client: client, server: server)
                    try pair.exchange()
                    #expect(!pair.clientSide.secured)
                    let said = pair.clientSide.errors.map { "\($0)" }.joined()
                    #expect(said.contains("certificate verify failed") && said.contains(reason), "\(name): \(said)")
                }
                #expect(throws: TandemTLSError.self) {
                    _ = try TLSContext.client(trustRootsPath: "/nonexistent/roots.pem")
                }
                #expect(throws: TandemTLSError.self) {
                    _ = try TLSContext.server(certificateChainPath: files.certificateChainPath,
                                              privateKeyPath: other.privateKeyPath)
                }
            }
        }    }

    @Test("hostile bytes: garbage, a plain-text hello, or 8 MB of noise end the handshake with an error and a close, holding nothing")
    func hostileBytes() throws {
        try Self.withCertificate { files in
            let noise = (0..<8_000_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
            let inputs: [[UInt8]] = [Array("{\"hello\": \"plain\"}\r\n".utf8),
                                     [0x16, 0x03, 0x01, 0xff, 0xff] + noise.prefix(70_000), noise]
            for input in inputs {
                let (server, _) = try Self.serverHandler(files)
                let channel = EmbeddedChannel()
                let recorder = Recorder()
                try channel.pipeline.syncOperations.addHandlers([server, recorder])
                try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
                // In 64 KiB reads, as a socket gives them: the first bad record closes the channel, the rest is
                // dropped.
                var offset = 0
                while offset < input.count, channel.isActive {
                    let end = min(offset + 65_536, input.count)
                    try channel.writeInbound(ByteBuffer(bytes: input[offset..<end]))
                    offset = end
                }
                #expect(!channel.isActive, "still open after \(offset) hostile bytes")
                #expect(offset <= 131_072, "read \(offset) bytes before closing")
                #expect(recorder.errors.contains {
                    if case .handshake? = $0 as? TandemTLSError { true } else { false }
                })
                #expect(recorder.received.isEmpty && !recorder.secured)
            }
        }    }

    @Test("a connection that ends without TLS's goodbye says so (uncleanShutdown); one that never began says nothing")
    func uncleanShutdown() throws {
        try Self.withCertificate { files in
            let (server, serverContext) = try Self.serverHandler(files)
            let client = try TLSHandler.client(context: .pinningClient(), serverName: nil,
                                               pinnedSHA256: serverContext.leafSHA256)
            var pair = try Pair(client: client, server: server)
            try pair.exchange()
            #expect(pair.serverSide.secured)
            pair.client.pipeline.fireChannelInactive()  // the socket went away under TLS
            #expect(pair.clientSide.errors.contains { ($0 as? TandemTLSError) == .uncleanShutdown })
            let (idle, _) = try Self.serverHandler(files)
            let channel = EmbeddedChannel()
            let recorder = Recorder()
            try channel.pipeline.syncOperations.addHandlers([idle, recorder])
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            channel.pipeline.fireChannelInactive()
            #expect(recorder.errors.isEmpty && recorder.inactive)
        }    }
}
