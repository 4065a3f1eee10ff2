import TandemCrypto
import Foundation
import NIOCore
import TandemCore

/// The key a peer seals its direct datagrams with (docs/PROTOCOL.md, "Datagrams", direct paths).
///
/// `HKDF-SHA256(ikm: UTF-8(secret), salt: UTF-8(session) ‖ channel u64 big-endian, info: "tandem direct v1")`, 32
/// bytes. It comes from the secret itself, which the server never holds (it keeps SHA-256 of it), so the server can
/// neither forge nor read these datagrams. Each sender seals with the key of its own channel id and its own
/// sequence numbers; a receiver derives the sender's key from the header's channel.
package enum DirectKey {
    package static let info = "tandem direct v1"

    package static func derive(secret: String, session: String, channel: UInt64) -> SymmetricKey {
        var salt = Data(session.utf8)
        withUnsafeBytes(of: channel.bigEndian) { salt.append(contentsOf: $0) }
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)), salt: salt,
                                      info: Data(info.utf8), outputByteCount: 32)
    }
}

/// The body of a `directPeers` datagram: the session's other members that share their UDP endpoint.
///
/// ```
/// count u8 | per entry: participant (length u8 + UTF-8, at most 64 bytes) | channel u64 | family u8 (4 or 6)
///          | address (4 or 16 bytes) | port u16
/// ```
package enum DirectPeerList {
    package struct Entry: Sendable, Hashable {
        package var participant: ParticipantID
        package var channel: UInt64
        package var endpoint: SocketAddress

        package init(participant: ParticipantID, channel: UInt64, endpoint: SocketAddress) {
            self.participant = participant
            self.channel = channel
            self.endpoint = endpoint
        }
    }

    /// The most entries a list holds.
    package static let maxEntries = 16
    /// The longest participant id listed (UTF-8 bytes); a longer one is left out.
    package static let maxParticipantBytes = 64
    /// The largest body: what fits `DatagramCodec.maxSentDatagramSize` with the header and tag.
    package static let maxBodySize = DatagramCodec.maxSentDatagramSize - DatagramCodec.headerSize - DatagramCodec.tagSize

    /// Encodes at most `maxEntries` of `entries` (in order), leaving out over-long ids and endpoints that are not
    /// IPv4 or IPv6, and stopping before the body would exceed `maxBodySize`.
    package static func encode(_ entries: [Entry], allocator: ByteBufferAllocator) -> ByteBuffer {
        var listed: [(id: [UInt8], channel: UInt64, family: UInt8, address: [UInt8], port: UInt16)] = []
        var size = 1
        for entry in entries {
            guard listed.count < maxEntries else { break }
            let id = Array(entry.participant.rawValue.utf8)
            guard !id.isEmpty, id.count <= maxParticipantBytes,
                  let (family, address) = addressBytes(entry.endpoint), let port = entry.endpoint.port,
                  let port16 = UInt16(exactly: port) else { continue }
            let entrySize = 1 + id.count + 8 + 1 + address.count + 2
            guard size + entrySize <= maxBodySize else { break }
            size += entrySize
            listed.append((id, entry.channel, family, address, port16))
        }
        var body = allocator.buffer(capacity: size)
        body.writeInteger(UInt8(listed.count))
        for entry in listed {
            body.writeInteger(UInt8(entry.id.count))
            body.writeBytes(entry.id)
            body.writeInteger(entry.channel)
            body.writeInteger(entry.family)
            body.writeBytes(entry.address)
            body.writeInteger(entry.port)
        }
        return body
    }

    /// Decodes a body; nil when it is truncated, has bytes left over, lists more than `maxEntries`, or has an
    /// entry that does not parse.
    package static func decode(_ body: ByteBuffer) -> [Entry]? {
        var body = body
        guard let count = body.readInteger(as: UInt8.self), Int(count) <= maxEntries else { return nil }
        var entries: [Entry] = []
        for _ in 0..<count {
            guard let length = body.readInteger(as: UInt8.self), length > 0, Int(length) <= maxParticipantBytes,
                  let idBytes = body.readBytes(length: Int(length)),
                  let id = String(validating: idBytes, as: UTF8.self),
                  let channel = body.readInteger(as: UInt64.self),
                  let family = body.readInteger(as: UInt8.self) else { return nil }
            let addressLength: Int
            switch family {
            case 4: addressLength = 4
            case 6: addressLength = 16
            default: return nil
            }
            guard let address = body.readSlice(length: addressLength), let port = body.readInteger(as: UInt16.self),
                  let endpoint = try? SocketAddress(packedIPAddress: address, port: Int(port)) else { return nil }
            entries.append(Entry(participant: ParticipantID(id), channel: channel, endpoint: endpoint))
        }
        guard body.readableBytes == 0 else { return nil }
        return entries
    }

    /// The family (4 or 6) and the address bytes (network order) of an IP endpoint; nil for any other.
    package static func addressBytes(_ address: SocketAddress) -> (UInt8, [UInt8])? {
        switch address {
        case .v4(let v4):
            return (4, withUnsafeBytes(of: v4.address.sin_addr) { Array($0) })
        case .v6(let v6):
            return (6, withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) })
        default:
            return nil
        }
    }

    /// Whether `address` is a loopback address (127.0.0.0/8, ::1, or an IPv4-mapped 127.x.y.z).
    package static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let (family, bytes) = addressBytes(address) else { return false }
        if family == 4 { return bytes[0] == 127 }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        return bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }
}

/// The body of a `directPing` or `directPong`: `sequence u32, t1 i64`.
package struct DirectProbe: Sendable, Hashable {
    package var sequence: UInt32
    package var t1: Int64
    package static let size = 12

    package init(sequence: UInt32, t1: Int64) {
        self.sequence = sequence
        self.t1 = t1
    }

    package init?(_ body: ByteBuffer) {
        guard body.readableBytes == Self.size, let sequence = body.getInteger(at: body.readerIndex, as: UInt32.self),
              let t1 = body.getInteger(at: body.readerIndex + 4, as: Int64.self) else { return nil }
        self.init(sequence: sequence, t1: t1)
    }

    package func encoded(allocator: ByteBufferAllocator) -> ByteBuffer {
        var body = allocator.buffer(capacity: Self.size)
        body.writeInteger(sequence)
        body.writeInteger(t1)
        return body
    }
}
