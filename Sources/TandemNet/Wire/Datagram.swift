import TandemCrypto
import Foundation
import NIOCore
import NIOFoundationCompat
import TandemCore

/// The UDP datagrams that carry unreliable app messages beside a TCP connection (docs/PROTOCOL.md, "Datagrams").
///
/// ```
/// magic "TD" | version u8 (1) | type u8 | channel u64 | sequence u64 | AES-256-GCM(body) ‖ tag (16)
/// ```
///
/// The 20 header bytes are the associated data; the nonce is the direction byte (`C` client → server, `S` server →
/// client), three zero bytes and the sequence. The key is the connection's own (`DatagramKey.derive`).
package enum DatagramType: UInt8, Sendable {
    /// Client → server: "this is my UDP endpoint"; body `flags u8` (bit 0: send my unreliable messages here; bit 1:
    /// send me a copy of every timeline here too, revision 4; bit 2: follow each clock answer with its send stamp,
    /// revision 5).
    case hello = 1
    /// Server → client: answer to a hello; body `sequence u64` of the hello it answers.
    case helloAck = 2
    /// Either way: an unreliable app message, body as the binary `appMessage` frame of the same direction.
    case appMessage = 3
    /// Client → server: a clock probe, body as the `clockPing` frame's (`sequence u32, t1 i64`).
    case clockPing = 4
    /// Server → client: its answer, body as the `clockPong` frame's (`sequence u32, t1 i64, t2 i64, t3 i64`).
    case clockPong = 5
    /// Server → client (revision 4): a copy of a `timeline` session message that also goes over TCP, body as that
    /// `session` frame's (JSON), so that a start, pause, seek or rate change is not held back by a TCP
    /// retransmission or a busy stream. The client acts on whichever copy comes first.
    case timeline = 6
    /// Client → server (revision 4): a copy of a `timelineRequest` session message that also goes over TCP, body as
    /// that `session` frame's (JSON; the request carries its `copy` number). The server acts on whichever copy comes
    /// first (only a server whose `accepted` says `timelineCopies`).
    case timelineRequest = 7
    /// Server → client (revision 5): when the `clockPong` of the same `sequence` left by the kernel's transmit
    /// stamp, `sequence u32, t3 i64` (session time), sent right after that answer to a client whose hello asked
    /// (flag bit 2). The client takes it as the answer's `t3` in place of the one read before it was sealed.
    case clockPongStamp = 8
    /// Server → client (revision 6): answer to a hello with the direct flag (bit 3), the session's other members that
    /// set it too, with their UDP endpoints (`DirectPeerList`); the client replaces its list with each one.
    case directPeers = 9
    /// Peer → peer (revision 6), sealed with the sender's direct key (`DirectKey`): a probe of the direct path,
    /// body `sequence u32, t1 i64` (the sender's local clock).
    case directPing = 10
    /// Peer → peer: the answer to a `directPing`, its body echoed, sent to the pinger's listed endpoint.
    case directPong = 11
    /// Peer → peer: a proposed start (`DirectProposal`, JSON).
    case directProposal = 12

    /// Whether datagrams of this type go between peers (sealed with a direct key) rather than to or from the server.
    package var isDirect: Bool { self == .directPing || self == .directPong || self == .directProposal }
}

/// The bits of a hello's `flags`.
package enum DatagramHelloFlags {
    /// Send my unreliable messages here.
    package static let unreliable: UInt8 = 1
    /// Send me a copy of every timeline here too (revision 4).
    package static let timelines: UInt8 = 2
    /// Follow each clock answer with the kernel's stamp of when it left (`clockPongStamp`, revision 5).
    package static let sendStamps: UInt8 = 4
    /// Share my UDP endpoint with the session's other members that share theirs, and tell me theirs
    /// (`directPeers`, revision 6).
    package static let direct: UInt8 = 8
    /// With `direct` (revision 7): list the others' local endpoints to me where they are behind my router, and
    /// here, after the flags, is mine (`family u8 | address | port u16`; optional).
    package static let local: UInt8 = 16
}

/// Who sealed a datagram: the nonce's first byte, so the two directions never share a nonce under one key.
package enum DatagramDirection: UInt8, Sendable {
    case clientToServer = 0x43  // "C"
    case serverToClient = 0x53  // "S"
    /// Peer → peer, under the sender's own direct key (`DirectKey`).
    case direct = 0x44  // "D"
}

/// Why a received datagram was dropped.
package enum DatagramRejection: Error, Sendable, Hashable {
    /// Larger than the largest datagram accepted.
    case oversized
    /// Too short, wrong magic or version, unknown type, or a body that does not parse.
    case malformed
    /// No connection has this channel id.
    case unknownChannel
    /// The tag does not verify with the channel's key (forged or altered).
    case badAuthentication
    /// A sequence already seen, or older than the replay window.
    case replayed
    /// Over the sender's datagram rate.
    case rateLimited
}

package enum DatagramCodec {
    package static let magic: [UInt8] = [0x54, 0x44]
    package static let version: UInt8 = 1
    package static let headerSize = 20
    package static let tagSize = 16
    /// The largest datagram either side accepts; anything longer is dropped unread.
    package static let maxDatagramSize = 2048
    /// The largest datagram a sender builds: what fits a 1500-byte MTU path (IPv6 and UDP headers included)
    /// without fragmenting. An unreliable message that would not fit (a long recipient list) goes over TCP.
    package static let maxSentDatagramSize = 1400

    package struct Header: Sendable, Hashable {
        package var type: DatagramType
        package var channel: UInt64
        package var sequence: UInt64
    }

    /// Seals `body` into a datagram.
    package static func seal(_ type: DatagramType, channel: UInt64, sequence: UInt64, body: ByteBuffer,
                             key: SymmetricKey, direction: DatagramDirection,
                             allocator: ByteBufferAllocator) throws -> ByteBuffer {
        var header = allocator.buffer(capacity: headerSize)
        header.writeBytes(magic)
        header.writeInteger(version)
        header.writeInteger(type.rawValue)
        header.writeInteger(channel)
        header.writeInteger(sequence)
        // Contiguous bytes all the way, sealed straight into the datagram after its header: no generic path (a
        // per-region one made sealing a small datagram cost tens of thousands of instructions) and no copies.
        let nonce = nonce(direction: direction, sequence: sequence)
        let sealedCount = body.readableBytes + tagSize
        var out = allocator.buffer(capacity: headerSize + sealedCount)
        try header.withUnsafeReadableBytes { aad in
            try body.withUnsafeReadableBytes { plain in
                _ = try out.writeWithUnsafeMutableBytes(minimumWritableBytes: headerSize + sealedCount) { space in
                    let space = UnsafeMutableRawBufferPointer(rebasing: space[..<(headerSize + sealedCount)])
                    space.copyMemory(from: aad)
                    try AES.GCM.seal(plain, using: key, nonce: nonce, authenticating: aad,
                                     into: UnsafeMutableRawBufferPointer(rebasing: space[headerSize...]))
                    return headerSize + sealedCount
                }
            }
        }
        return out
    }

    /// Reads the header without authenticating anything (to find the channel's key); checks size, magic and version.
    package static func header(of datagram: ByteBuffer) throws(DatagramRejection) -> Header {
        guard datagram.readableBytes <= maxDatagramSize else { throw .oversized }
        guard datagram.readableBytes >= headerSize + tagSize,
              let bytes = datagram.getBytes(at: datagram.readerIndex, length: 4),
              Array(bytes[0..<2]) == magic, bytes[2] == version,
              let type = DatagramType(rawValue: bytes[3]),
              let channel = datagram.getInteger(at: datagram.readerIndex + 4, as: UInt64.self),
              let sequence = datagram.getInteger(at: datagram.readerIndex + 12, as: UInt64.self),
              sequence > 0 else { throw .malformed }
        return Header(type: type, channel: channel, sequence: sequence)
    }

    /// Authenticates and opens a datagram whose header was read with `header(of:)`; returns the body.
    package static func open(_ datagram: ByteBuffer, header: Header, key: SymmetricKey,
                             direction: DatagramDirection) throws(DatagramRejection) -> ByteBuffer {
        guard datagram.readableBytes >= headerSize + tagSize else { throw .malformed }
        let nonce = nonce(direction: direction, sequence: header.sequence)
        do {
            // As in `seal`: contiguous bytes, opened straight into the body's buffer.
            let count = datagram.readableBytes - headerSize - tagSize
            var out = ByteBufferAllocator().buffer(capacity: count)
            try datagram.withUnsafeReadableBytes { raw in
                let aad = UnsafeRawBufferPointer(rebasing: raw[..<headerSize])
                let ciphertext = UnsafeRawBufferPointer(rebasing: raw[headerSize..<(raw.count - tagSize)])
                let tag = UnsafeRawBufferPointer(rebasing: raw[(raw.count - tagSize)...])
                _ = try out.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { space in
                    try AES.GCM.open(ciphertext, tag: tag, using: key, nonce: nonce, authenticating: aad,
                                     into: UnsafeMutableRawBufferPointer(rebasing: space[..<count]))
                    return count
                }
            }
            return out
        } catch {
            throw .badAuthentication
        }
    }

    static func nonce(direction: DatagramDirection, sequence: UInt64) -> AES.GCM.Nonce {
        var bytes: [UInt8] = [direction.rawValue, 0, 0, 0]
        withUnsafeBytes(of: sequence.bigEndian) { bytes.append(contentsOf: $0) }
        // 12 bytes: always a valid nonce.
        return try! AES.GCM.Nonce(bytes: bytes)
    }
}

/// The key of one connection's datagrams.
package enum DatagramKey {
    package static let info = "tandem datagram v1"

    /// `HKDF-SHA256(ikm: the session key (SHA-256 of the secret), salt: serverNonce ‖ clientNonce, info:
    /// "tandem datagram v1")`, 32 bytes: both ends of a TCP connection that completed the challenge–response hold it
    /// without sending it, and it differs for every connection (the nonces are fresh).
    package static func derive(sessionKey: SymmetricKey, serverNonce: Data, clientNonce: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: sessionKey, salt: serverNonce + clientNonce,
                               info: Data(info.utf8), outputByteCount: 32)
    }

    package static func derive(sessionKeyBytes: [UInt8], serverNonce: Data, clientNonce: Data) -> SymmetricKey {
        derive(sessionKey: SymmetricKey(data: sessionKeyBytes), serverNonce: serverNonce, clientNonce: clientNonce)
    }
}

/// Accepts each sequence number once: the highest seen and a 64-wide window below it (reordering within the window
/// is fine; anything older or already seen is a replay).
package struct ReplayWindow: Sendable {
    package private(set) var highest: UInt64 = 0
    private var seen: UInt64 = 0  // bit i: highest - i was seen

    package init() {}

    /// Records `sequence` and returns true when it was not seen before and is within the window.
    package mutating func accept(_ sequence: UInt64) -> Bool {
        guard sequence > 0 else { return false }
        if sequence > highest {
            let shift = sequence - highest
            seen = shift >= 64 ? 1 : (seen << shift) | 1
            highest = sequence
            return true
        }
        let age = highest - sequence
        guard age < 64 else { return false }
        let bit: UInt64 = 1 << age
        guard seen & bit == 0 else { return false }
        seen |= bit
        return true
    }
}

/// A token bucket in datagrams per second (the server's per-member bound on datagrams).
package struct DatagramRateLimit: Sendable {
    private var tokens: Double
    private var last: LocalInstant
    let rate: Double
    let burst: Double

    package init(perSecond rate: Int, burst: Int, now: LocalInstant) {
        self.rate = Double(max(1, rate))
        self.burst = Double(max(1, burst))
        tokens = Double(max(1, burst))
        last = now
    }

    package mutating func admit(now: LocalInstant) -> Bool {
        tokens = min(burst, tokens + (now - last).seconds * rate)
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
