import Foundation
import Logging
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// The browser page and its WebSocket on the session port: a browser is a participant like any other, and every
/// bound of the native protocol holds for it.
@Suite(.serialized)
struct WebPeerServerTests {
    static func startServer(_ tweak: (inout ServerConfiguration) -> Void = { _ in }) async throws -> SessionServer {
        var authority = AuthorityConfiguration()
        authority.maxParticipants = 8
        authority.endsWhenHostLeaves = false
        var configuration = ServerConfiguration(authority: authority)
        configuration.handshakeTimeout = .seconds(2)
        configuration.web = WebConfiguration()
        tweak(&configuration)
        var logger = Logger(label: "tandem.test.server")
        logger.logLevel = .warning
        return try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: logger)
    }

    static func eventually(within timeout: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition()
    }

    @Test("a browser joins over a WebSocket on the session port, beside a native client")
    func browserJoinsBesideNative() async throws {
        let server = try await Self.startServer()
        let invite = try server.createSession(id: "film")
        let native = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        let messages = native.serverMessages()
        let browser = try await WebSocketPeer.connect(port: server.port)
        #expect(try await browser.upgrade())
        let snapshot = try await browser.join(invite: invite, name: "web")
        #expect(snapshot.participants.map(\.participant.name).sorted() == ["ann", "web"])
        // The native client hears of the browser like of anyone else.
        let seen = await firstMessage(in: messages, within: 3) { message in
            if case .participants(let all) = message { return all.contains { $0.participant.name == "web" } }
            return false
        }
        #expect(seen != nil, "the native client never heard of the browser")
        // Clock pings are answered over the WebSocket too.
        try await browser.sendFrame(.clockPing, [0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9])
        let pong = try await browser.waitForFrame(.clockPong)
        #expect(pong.readableBytes == 28 && pong.getInteger(at: pong.readerIndex, as: UInt32.self) == 7)
        await native.close()
        await server.shutdown()
    }

    @Test("the page and its scripts are served on the session port; anything else is refused")
    func pageIsServed() async throws {
        let server = try await Self.startServer()
        for (request, status, fragment) in [
            ("GET /join/film HTTP/1.1\r\nHost: x\r\n\r\n", "200", "<video"),
            ("GET /wire.js HTTP/1.1\r\nHost: x\r\n\r\n", "200", "HMAC"),
            ("GET /grid.js HTTP/1.1\r\nHost: x\r\n\r\n", "200", "class GridFollower"),
            ("GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n", "404", "not found"),
            ("POST /join/film HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "405", "only GET"),
            ("GET /ws HTTP/1.1\r\nHost: x\r\n\r\n", "404", "not found"),
        ] {
            let peer = try await WebSocketPeer.connect(port: server.port)
            try await peer.send(request)
            // One answer per connection: the server closes after it.
            #expect(await peer.closed(within: 3), "\(request) left open")
            #expect(peer.received.hasPrefix("HTTP/1.1 \(status)"), "\(request): \(peer.received.prefix(40))")
            #expect(peer.received.contains(fragment), "\(request)")
            #expect(peer.received.contains("Content-Security-Policy"))
        }
        // A request head over the bound (8 KiB) is refused, not buffered.
        let large = try await WebSocketPeer.connect(port: server.port)
        try await large.send("GET /join/film HTTP/1.1\r\nHost: x\r\nX-Padding: " + String(repeating: "a", count: 10_000) + "\r\n\r\n")
        #expect(await large.closed(within: 3))
        #expect(large.received.hasPrefix("HTTP/1.1 4"), "\(large.received.prefix(40))")
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 0 })
        await server.shutdown()
    }

    @Test("a WebSocket that never says hello, and an HTTP request that never ends, are closed at the handshake timeout")
    func handshakeDeadline() async throws {
        let server = try await Self.startServer { $0.handshakeTimeout = .seconds(1); $0.heartbeatTimeout = .seconds(30) }
        let silent = try await WebSocketPeer.connect(port: server.port)
        #expect(try await silent.upgrade())
        let slow = try await WebSocketPeer.connect(port: server.port)
        try await slow.send("GET /join/film HTTP/1.1\r\nHost: x\r\n")
        let idle = try await WebSocketPeer.connect(port: server.port)
        let start = ContinuousClock.now
        #expect(await silent.closed(within: 4))
        #expect(silent.closingErrorCode == .helloTimeout)
        #expect(await slow.closed(within: 4))
        #expect(await idle.closed(within: 4))
        // 1 s handshake timeout; the heartbeat timeout (30 s) cannot be what closed them.
        #expect(ContinuousClock.now - start < .seconds(4))
        #expect(await Self.eventually(within: 3) { server.connectionCount == 0 && server.liveConnectionObjects == 0 })
        await server.shutdown()
    }

    @Test("browsers count against the per-address bound on unauthenticated connections; the idlest gives way")
    func perAddressBound() async throws {
        let server = try await Self.startServer {
            $0.maxUnauthenticatedConnectionsPerAddress = 3
            $0.handshakeTimeout = .seconds(20)
            $0.heartbeatTimeout = .seconds(30)
        }
        let invite = try server.createSession(id: "capped")
        var held: [WebSocketPeer] = []
        for _ in 0..<3 {
            let peer = try await WebSocketPeer.connect(port: server.port)
            #expect(try await peer.upgrade())
            held.append(peer)
        }
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 3 })
        // A fourth takes the place of the oldest, which has not said hello.
        let fourth = try await WebSocketPeer.connect(port: server.port)
        #expect(await held[0].closed(within: 3), "the oldest idle connection of the address did not give way")
        #expect(try await fourth.upgrade())
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 3 })
        // Authenticating gives the place back.
        _ = try await held[1].join(invite: invite, name: "web")
        #expect(await Self.eventually(within: 2) { server.unauthenticatedConnectionCount == 2 })
        let fifth = try await WebSocketPeer.connect(port: server.port)
        #expect(try await fifth.upgrade())
        await server.shutdown()
    }

    @Test("frame bounds hold inside the WebSocket: 4 KiB before authentication, and the WebSocket frame limit")
    func frameBounds() async throws {
        let server = try await Self.startServer { $0.handshakeTimeout = .seconds(20); $0.web?.maxWebSocketFrameSize = 16 * 1024 }
        let large = try await WebSocketPeer.connect(port: server.port)
        #expect(try await large.upgrade())
        // A hello announcing 1 MiB, in a small WebSocket frame: refused on its length, like on TCP.
        try await large.send(bytes: WebSocketPeer.webSocketFrame([0, 0x10, 0, 0, FrameKind.hello.rawValue] + [UInt8](repeating: 0x20, count: 100)))
        #expect(await large.closed(within: 3))
        #expect(large.closingErrorCode == .frameTooLarge)
        // A WebSocket frame over the limit is refused on its header (1009), before its payload is buffered.
        let huge = try await WebSocketPeer.connect(port: server.port)
        #expect(try await huge.upgrade())
        var header = WebSocketPeer.webSocketFrame([UInt8](repeating: 0, count: 70_000))
        header.removeLast(60_000)  // the header announces 70 000 bytes; most never come
        try await huge.send(bytes: header)
        #expect(await huge.closed(within: 3))
        let close = huge.webSocketFrames.last { $0.opcode == 0x8 }
        #expect(close.map { Int($0.payload[0]) << 8 | Int($0.payload[1]) } == 1009)
        // A text frame is not the protocol: closed with 1003.
        let text = try await WebSocketPeer.connect(port: server.port)
        #expect(try await text.upgrade())
        try await text.send(bytes: WebSocketPeer.webSocketFrame(Array("hello".utf8), opcode: 0x1))
        #expect(await text.closed(within: 3))
        #expect(text.webSocketFrames.last { $0.opcode == 0x8 }.map { Int($0.payload[0]) << 8 | Int($0.payload[1]) } == 1003)
        #expect(await Self.eventually(within: 3) { server.connectionCount == 0 })
        await server.shutdown()
    }

    @Test("a native frame split over WebSocket continuation frames arrives whole")
    func fragmentedFrames() async throws {
        let server = try await Self.startServer()
        let invite = try server.createSession(id: "split")
        let browser = try await WebSocketPeer.connect(port: server.port)
        #expect(try await browser.upgrade())
        let hello = Array(try JSONEncoder().encode(Hello(protocolVersion: tandemProtocolVersion, session: invite.session)))
        let length = UInt32(hello.count + 1)
        let frame = [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF),
                     FrameKind.hello.rawValue] + hello
        try await browser.send(bytes: WebSocketPeer.webSocketFrame(Array(frame[..<7]), opcode: 0x2, fin: false)
                                      + WebSocketPeer.webSocketFrame(Array(frame[7...]), opcode: 0x0, fin: true))
        _ = try await browser.waitForFrame(.challenge)
        await server.shutdown()
    }

    @Test("members stream the host's media by range requests; a wrong token gets nothing")
    func mediaByRange() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-web-media-\(UUID().uuidString).webm")
        let content = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try Data(content).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let server = try await Self.startServer { $0.web?.mediaFiles["film"] = file.path }
        let invite = try server.createSession(id: "film")
        let token = WebMedia.token(key: SessionAuth.key(forSecret: invite.secret), session: "film")
        func get(_ query: String, range: String? = nil) async throws -> WebSocketPeer {
            let peer = try await WebSocketPeer.connect(port: server.port)
            try await peer.send("GET /media/film?\(query) HTTP/1.1\r\nHost: x\r\n" + (range.map { "Range: \($0)\r\n" } ?? "") + "\r\n")
            #expect(await peer.closed(within: 5))
            return peer
        }
        let wrong = try await get("t=" + String(repeating: "0", count: 64), range: "bytes=0-9")
        #expect(wrong.received.hasPrefix("HTTP/1.1 404"))
        let part = try await get("t=\(token)", range: "bytes=50000-50009")
        #expect(part.received.hasPrefix("HTTP/1.1 206"), "\(part.received.prefix(200))")
        #expect(part.received.contains("bytes 50000-50009/100000"))
        #expect(Array(part.receivedBytes.suffix(10)) == Array(content[50000...50009]))
        let whole = try await get("t=\(token)")
        #expect(whole.received.hasPrefix("HTTP/1.1 200") && whole.received.contains("Content-Length: 100000"))
        let beyond = try await get("t=\(token)", range: "bytes=200000-")
        #expect(beyond.received.hasPrefix("HTTP/1.1 416"))
        #expect(WebMedia.range("bytes=-10", size: 100) == .bytes(90...99))
        #expect(WebMedia.range("bytes=5-", size: 100) == .bytes(5...99))
        #expect(WebMedia.range("bytes=5-500", size: 100) == .bytes(5...99))
        #expect(WebMedia.range("bytes=0-1,4-5", size: 100) == .unsatisfiable)
        #expect(WebMedia.range("items=0-1", size: 100) == .unsatisfiable)
        await server.shutdown()
    }

    @Test("the browser link keeps the secret in the fragment")
    func link() throws {
        let invite = try Invite(parsing: "tandem://192.0.2.7:7420/film#s3cret")
        #expect(WebPage.link(for: invite) == "http://192.0.2.7:7420/join/film#s3cret")
        var tls = invite
        tls.tls = true
        #expect(WebPage.link(for: tls).hasPrefix("https://"))
    }
}
