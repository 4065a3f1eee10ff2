import Foundation
import NIOCore
import NIOEmbedded
import TandemCore
import TandemNet

/// Runs hostile bytes through everything a server or client decodes from the network: the frame decoder on a real
/// channel pipeline, every frame body as every message type, session messages through a session authority, and
/// invite parsing. Kept out of the shipped TandemNet; used by the libFuzzer target (`make fuzz`) and by the tests that replay its corpus; it must
/// never crash, whatever the input.
package enum WireFuzzing {
    /// Largest frame the harness's decoder accepts (the server's default).
    static let maxFrameSize = 1 << 20

    /// Exercises one input. The first byte picks the surface, the rest is the input for it.
    package static func exercise(_ data: [UInt8]) {
        guard let selector = data.first else { return }
        let input = Array(data.dropFirst())
        switch selector % 4 {
        case 0: frameStream(input)
        case 1: singleFrame(input)
        case 2: sessionJSON(input)
        default: invite(input)
        }
    }

    /// A byte stream as a server reads it: split into frames by `FrameDecoder` on a pipeline, in two writes so
    /// that partial frames are buffered and resumed; every frame then decoded as everything.
    static func frameStream(_ bytes: [UInt8]) {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(maxFrameSize: maxFrameSize)))
        defer { _ = try? channel.finish() }
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        for part in [bytes[..<split], bytes[split...]] {
            var buffer = channel.allocator.buffer(capacity: part.count)
            buffer.writeBytes(part)
            do { try channel.writeInbound(buffer) } catch { return }
            while let frame = try? channel.readInbound(as: Frame.self) { decodeEverything(frame) }
        }
    }

    /// One frame body of the kind named by the first byte.
    static func singleFrame(_ bytes: [UInt8]) {
        guard let kindByte = bytes.first, let kind = FrameKind(rawValue: kindByte) else { return }
        var body = ByteBufferAllocator().buffer(capacity: bytes.count)
        body.writeBytes(bytes.dropFirst())
        decodeEverything(Frame(kind: kind, body: body))
    }

    /// A session message in JSON, as it would arrive in a `session` frame.
    static func sessionJSON(_ bytes: [UInt8]) {
        var body = ByteBufferAllocator().buffer(capacity: bytes.count)
        body.writeBytes(bytes)
        decodeEverything(Frame(kind: .session, body: body))
    }

    static func invite(_ bytes: [UInt8]) {
        _ = try? Invite(parsing: String(decoding: bytes, as: UTF8.self))
    }

    /// Decodes a frame as every message it could carry; session messages also go through an authority, and what
    /// the authority answers is encoded again.
    static func decodeEverything(_ frame: Frame) {
        _ = try? FrameCodec.decode(Hello.self, from: frame)
        _ = try? FrameCodec.decode(Challenge.self, from: frame)
        _ = try? FrameCodec.decode(AuthProof.self, from: frame)
        _ = try? FrameCodec.decode(Accepted.self, from: frame)
        _ = try? FrameCodec.decode(ErrorBody.self, from: frame)
        _ = try? FrameCodec.parseClockPing(frame)
        _ = try? FrameCodec.parseClockPong(frame)
        if let server = try? SessionCodec.decodeServerMessage(frame) {
            _ = try? SessionCodec.encode(server, allocator: ByteBufferAllocator())
        }
        if let client = try? SessionCodec.decodeClientMessage(frame) {
            throughAuthority(client)
        }
    }

    /// A two-person session (a host and a guest) that receives `message` from the guest, then from the host.
    static func throughAuthority(_ message: ClientMessage) {
        var authority = SessionAuthority(sessionID: "fuzz", activity: nil, configuration: AuthorityConfiguration(), now: 0)
        var joined: [ParticipantID] = []
        for (name, isHost) in [("host", true), ("guest", false)] {
            if case .joined(let id, _) = authority.join(name: name, prerollEstimate: 0, wantsHost: isHost,
                                                         newReconnectToken: "token-\(name)", now: 1_000) {
                joined.append(id)
            }
        }
        let allocator = ByteBufferAllocator()
        var now: SessionInstant = .milliseconds(2)
        for sender in joined.reversed() {
            now += .milliseconds(1)
            for action in authority.receive(message, from: sender, now: now) {
                if case .send(let reply, _) = action { _ = try? SessionCodec.encode(reply, allocator: allocator) }
            }
            for action in authority.timerFired(now: now + .seconds(60)) {
                if case .send(let reply, _) = action { _ = try? SessionCodec.encode(reply, allocator: allocator) }
            }
        }
    }
}
