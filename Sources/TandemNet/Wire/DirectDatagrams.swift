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
/// count u8 | per entry: participant (length u8 + UTF-8, at most 64 bytes) | channel u64 | endpoint
/// endpoint: family u8 (4 or 6) | address (4 or 16 bytes) | port u16
/// ```
///
/// To a member whose hello set the `local` flag (revision 7) the count byte has its top bit set (`0x80 | count`,
/// which a decoder of revision 6 refuses as over 16) and each entry ends with the member's own local endpoint as
/// it said it in its hello: family 0 (none, nothing follows), else an endpoint as above.
package enum DirectPeerList {
    package struct Entry: Sendable, Hashable {
        package var participant: ParticipantID
        package var channel: UInt64
        package var endpoint: SocketAddress
        /// The address the member's socket has on its own network, listed only to a member behind the same
        /// router (`listedLocal`).
        package var local: SocketAddress?

        package init(participant: ParticipantID, channel: UInt64, endpoint: SocketAddress, local: SocketAddress? = nil) {
            self.participant = participant
            self.channel = channel
            self.endpoint = endpoint
            self.local = local
        }
    }

    /// The most entries a list holds.
    package static let maxEntries = 16
    /// The longest participant id listed (UTF-8 bytes); a longer one is left out.
    package static let maxParticipantBytes = 64
    /// The largest body: what fits `DatagramCodec.maxSentDatagramSize` with the header and tag.
    package static let maxBodySize = DatagramCodec.maxSentDatagramSize - DatagramCodec.headerSize - DatagramCodec.tagSize
    /// The count byte's flag for entries that end with a local endpoint.
    static let withLocalFlag: UInt8 = 0x80

    /// Encodes at most `maxEntries` of `entries` (in order), leaving out over-long ids and endpoints that are not
    /// IPv4 or IPv6, and stopping before the body would exceed `maxBodySize`; with `withLocal`, each entry ends
    /// with its local endpoint (or family 0).
    package static func encode(_ entries: [Entry], withLocal: Bool = false, allocator: ByteBufferAllocator) -> ByteBuffer {
        var listed: [(entry: Entry, id: [UInt8])] = []
        var size = 1
        for entry in entries {
            guard listed.count < maxEntries else { break }
            let id = Array(entry.participant.rawValue.utf8)
            guard !id.isEmpty, id.count <= maxParticipantBytes, let listedSize = endpointSize(entry.endpoint)
            else { continue }
            let localSize = withLocal ? entry.local.flatMap { endpointSize($0) } ?? 1 : 0
            let entrySize = 1 + id.count + 8 + listedSize + localSize
            guard size + entrySize <= maxBodySize else { break }
            size += entrySize
            listed.append((entry, id))
        }
        var body = allocator.buffer(capacity: size)
        body.writeInteger(UInt8(listed.count) | (withLocal ? withLocalFlag : 0))
        for (entry, id) in listed {
            body.writeInteger(UInt8(id.count))
            body.writeBytes(id)
            body.writeInteger(entry.channel)
            writeEndpoint(entry.endpoint, to: &body)
            if withLocal, !(entry.local.map { writeEndpoint($0, to: &body) } ?? false) { body.writeInteger(UInt8(0)) }
        }
        return body
    }

    /// Decodes a body; nil when it is truncated, has bytes left over, lists more than `maxEntries`, or has an
    /// entry that does not parse.
    package static func decode(_ body: ByteBuffer) -> [Entry]? {
        var body = body
        guard let first = body.readInteger(as: UInt8.self) else { return nil }
        let withLocal = first & withLocalFlag != 0
        let count = first & ~withLocalFlag
        guard Int(count) <= maxEntries else { return nil }
        var entries: [Entry] = []
        for _ in 0..<count {
            guard let length = body.readInteger(as: UInt8.self), length > 0, Int(length) <= maxParticipantBytes,
                  let idBytes = body.readBytes(length: Int(length)),
                  let id = String(validating: idBytes, as: UTF8.self),
                  let channel = body.readInteger(as: UInt64.self),
                  let endpoint = readEndpoint(from: &body) else { return nil }
            var local: SocketAddress?
            if withLocal {
                guard let family = body.getInteger(at: body.readerIndex, as: UInt8.self) else { return nil }
                if family == 0 {
                    body.moveReaderIndex(forwardBy: 1)
                } else {
                    guard let read = readEndpoint(from: &body) else { return nil }
                    local = read
                }
            }
            entries.append(Entry(participant: ParticipantID(id), channel: channel, endpoint: endpoint, local: local))
        }
        guard body.readableBytes == 0 else { return nil }
        return entries
    }

    // MARK: Endpoints

    /// The bytes `writeEndpoint` takes for an IP endpoint; nil for any other.
    static func endpointSize(_ endpoint: SocketAddress) -> Int? {
        guard let (_, address) = addressBytes(endpoint), endpoint.port.flatMap(UInt16.init(exactly:)) != nil else {
            return nil
        }
        return 1 + address.count + 2
    }

    /// Writes `family u8 | address | port u16` of an IP endpoint; false (and nothing written) for any other.
    @discardableResult
    package static func writeEndpoint(_ endpoint: SocketAddress, to buffer: inout ByteBuffer) -> Bool {
        guard let (family, address) = addressBytes(endpoint),
              let port = endpoint.port.flatMap(UInt16.init(exactly:)) else { return false }
        buffer.writeInteger(family)
        buffer.writeBytes(address)
        buffer.writeInteger(port)
        return true
    }

    /// Reads what `writeEndpoint` wrote; nil when it is truncated or its family is not 4 or 6.
    package static func readEndpoint(from buffer: inout ByteBuffer) -> SocketAddress? {
        guard let family = buffer.readInteger(as: UInt8.self) else { return nil }
        let length: Int
        switch family {
        case 4: length = 4
        case 6: length = 16
        default: return nil
        }
        guard let address = buffer.readSlice(length: length), let port = buffer.readInteger(as: UInt16.self) else {
            return nil
        }
        return try? SocketAddress(packedIPAddress: address, port: Int(port))
    }

    /// The local endpoint a hello carries after its flags (revision 7, with the `local` flag): nil when there is
    /// none, it does not parse, bytes are left over, or it is a loopback or unspecified address or port 0.
    package static func localEndpoint(inHello body: ByteBuffer) -> SocketAddress? {
        var body = body
        guard body.readInteger(as: UInt8.self) != nil, body.readableBytes > 0,
              let endpoint = readEndpoint(from: &body), body.readableBytes == 0,
              let (_, address) = addressBytes(endpoint), !address.allSatisfy({ $0 == 0 }), !isLoopback(endpoint),
              endpoint.port != 0 else { return nil }
        return endpoint
    }

    /// A member's local endpoint as listed to a recipient: only to one that asked for local endpoints and is
    /// seen at the same address (any port) as that member — behind the same router, where the address the server
    /// sees seldom leads back in — and only when it is not that address itself.
    package static func listedLocal(_ local: SocketAddress?, of endpoint: SocketAddress, to recipient: SocketAddress,
                                    recipientTakesLocal: Bool) -> SocketAddress? {
        guard recipientTakesLocal, let local, local != endpoint,
              let mine = addressBytes(recipient), let theirs = addressBytes(endpoint), mine == theirs else { return nil }
        return local
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
