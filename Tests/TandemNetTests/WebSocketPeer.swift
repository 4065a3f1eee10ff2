import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore
@testable import TandemNet

/// A browser as the server sees it, byte for byte: an HTTP request, then (after `101`) masked WebSocket frames
/// carrying native frames. Built on raw TCP so a test can also send what no browser would.
final class WebSocketPeer: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    private let bytes = NIOLockedValueBox(ByteBuffer())
    private let closedPromise: EventLoopPromise<Void>
    let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
        closedPromise = channel.eventLoop.makePromise()
    }

    static func connect(port: Int, from source: String? = nil) async throws -> WebSocketPeer {
        try await loopbackConnection(port: port, from: source) { WebSocketPeer(channel: $0) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        bytes.withLockedValue { $0.writeBuffer(&incoming) }
    }

    func channelInactive(context: ChannelHandlerContext) { closedPromise.succeed(()) }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(string: text)).get()
    }

    func send(bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    /// Everything received.
    var receivedBytes: [UInt8] { bytes.withLockedValue { Array($0.readableBytesView) } }

    /// Everything received, as text (for HTTP answers).
    var received: String { String(decoding: bytes.withLockedValue { Array($0.readableBytesView) }, as: UTF8.self) }

    /// Asks for the WebSocket; returns once the server has answered (true: 101 Switching Protocols).
    func upgrade(path: String = "/ws", within timeout: Double = 3) async throws -> Bool {
        try await send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline, !received.contains("\r\n\r\n") { try await Task.sleep(nanoseconds: 10_000_000) }
        return received.hasPrefix("HTTP/1.1 101")
    }

    /// A masked binary WebSocket frame around `payload`, as a browser sends it.
    static func webSocketFrame(_ payload: [UInt8], opcode: UInt8 = 0x2, fin: Bool = true) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            out.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(0x80 | 127)
            out += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (8 * UInt64($0))) & 0xFF) }
        }
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        out += mask
        out += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return out
    }

    /// Sends a native frame inside one WebSocket message.
    func sendFrame(_ kind: FrameKind, _ body: [UInt8]) async throws {
        let length = UInt32(body.count + 1)
        let frame = [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF),
                     kind.rawValue] + body
        try await send(bytes: Self.webSocketFrame(frame))
    }

    func sendJSONFrame<T: Encodable>(_ kind: FrameKind, _ value: T) async throws {
        try await sendFrame(kind, Array(try JSONEncoder().encode(value)))
    }

    /// The server's WebSocket frames after the HTTP answer: (opcode, payload).
    var webSocketFrames: [(opcode: UInt8, payload: [UInt8])] {
        let all = bytes.withLockedValue { Array($0.readableBytesView) }
        guard let end = all.indices.first(where: { all[$0...].starts(with: [13, 10, 13, 10]) }) else { return [] }
        var at = end + 4
        var frames: [(UInt8, [UInt8])] = []
        while at + 2 <= all.count {
            let opcode = all[at] & 0x0F
            var length = Int(all[at + 1] & 0x7F)
            var header = 2
            if length == 126, at + 4 <= all.count {
                length = Int(all[at + 2]) << 8 | Int(all[at + 3])
                header = 4
            } else if length == 127, at + 10 <= all.count {
                length = (0..<8).reduce(0) { $0 << 8 | Int(all[at + 2 + $1]) }
                header = 10
            }
            guard at + header + length <= all.count else { break }
            frames.append((opcode, Array(all[(at + header)..<(at + header + length)])))
            at += header + length
        }
        return frames
    }

    /// The native frames the server sent, from the binary messages.
    var tandemFrames: [(kind: UInt8, body: ByteBuffer)] {
        var stream = ByteBuffer()
        for frame in webSocketFrames where frame.opcode == 0x2 || frame.opcode == 0x0 { stream.writeBytes(frame.payload) }
        return RawPeer.frames(in: stream)
    }

    func waitForFrame(_ kind: FrameKind, within timeout: Double = 3) async throws -> ByteBuffer {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if let frame = tandemFrames.first(where: { $0.kind == kind.rawValue }) { return frame.body }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        throw FrameError.truncated(missing: 1)
    }

    /// Whether the server closed the connection within `timeout` seconds.
    func closed(within timeout: Double) async -> Bool {
        let loop = channel.eventLoop
        let result = loop.makePromise(of: Bool.self)
        let timer = loop.scheduleTask(in: .nanoseconds(Int64(timeout * 1e9))) { result.succeed(false) }
        closedPromise.futureResult.whenSuccess { result.succeed(true) }
        let closed = (try? await result.futureResult.get()) ?? false
        timer.cancel()
        return closed
    }

    /// The code of the error (or close) frame the server sent last.
    var closingErrorCode: WireErrorCode? {
        for frame in tandemFrames.reversed() where frame.kind == FrameKind.error.rawValue || frame.kind == FrameKind.close.rawValue {
            return try? JSONDecoder().decode(ErrorBody.self, from: frame.body).code
        }
        return nil
    }

    /// Authenticates and joins like the page, then waits for the welcome.
    func join(invite: Invite, name: String) async throws -> SessionSnapshot {
        try await sendJSONFrame(.hello, Hello(protocolVersion: tandemProtocolVersion, session: invite.session))
        let challenge = try JSONDecoder().decode(Challenge.self, from: try await waitForFrame(.challenge))
        let clientNonce = SessionAuth.nonce()
        let proof = SessionAuth.proof(key: SessionAuth.key(forSecret: invite.secret), serverNonce: challenge.nonce,
                                      session: invite.session, clientNonce: clientNonce)
        try await sendJSONFrame(.authProof, AuthProof(clientNonce: clientNonce, proof: proof))
        _ = try await waitForFrame(.accepted)
        try await sendJSONFrame(.session, ClientMessage.join(name: name, reconnectAs: nil, prerollEstimate: 0))
        let welcome = try SessionCodec.decodeServerMessage(Frame(kind: .session, body: try await waitForFrame(.session)))
        guard case .welcome(let snapshot) = welcome else { throw FrameError.truncated(missing: 1) }
        return snapshot
    }
}
