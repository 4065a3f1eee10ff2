import Foundation
import NIOCore
import TandemCore
import TandemNet

/// Runs hostile bytes through everything a server or client decodes from the network: the frame reader both
/// connection handlers use, every frame body as every message type, session messages through a session authority, and
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

    /// A byte stream as the server and the client read it: split into frames by `FrameReader`, in two reads so
    /// that a partial frame is kept and resumed; every frame then decoded as everything.
    static func frameStream(_ bytes: [UInt8]) {
        var reader = FrameReader()
        let allocator = ByteBufferAllocator()
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        for part in [bytes[..<split], bytes[split...]] {
            var buffer = allocator.buffer(capacity: part.count)
            buffer.writeBytes(part)
            reader.append(buffer)
            do {
                while let frame = try reader.next(maxFrameSize: maxFrameSize, receivedAt: .zero) { decodeEverything(frame) }
            } catch {
                return
            }
            reader.finishRead(allocator: allocator)
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
        if let request = try? MediaFrames.parseRequest(frame) {
            _ = try? MediaFrames.encode(request, allocator: ByteBufferAllocator())
        }
        _ = try? MediaFrames.parseChunk(frame).reason
        _ = try? MediaFrames.chunkHeader(frame)
        if let server = try? SessionCodec.decodeServerMessage(frame) {
            _ = try? SessionCodec.encode(server, allocator: ByteBufferAllocator())
        }
        if let client = try? SessionCodec.decodeClientMessage(frame) {
            throughAuthority(client)
        }
        datagram(frame.body)
    }

    /// A frame's body as a UDP datagram: the header read, then the box opened in both directions.
    static func datagram(_ bytes: ByteBuffer) {
        guard let header = try? DatagramCodec.header(of: bytes) else { return }
        let datagramKey = DatagramKey.derive(sessionKeyBytes: [UInt8](repeating: 1, count: 32),
                                             serverNonce: Data(count: 32), clientNonce: Data(count: 16))
        _ = try? DatagramCodec.open(bytes, header: header, key: datagramKey, direction: .clientToServer)
        _ = try? DatagramCodec.open(bytes, header: header, key: datagramKey, direction: .serverToClient)
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
