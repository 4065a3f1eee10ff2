import Foundation
import NIOCore
import NIOFoundationCompat

/// The two frames that carry the host's shared items through a relay (`serve --relay-media`, docs/PROTOCOL.md
/// "Shared media through a relay"). Binary, so a chunk's bytes travel without base64:
///
/// - `mediaRequest`: `id u32, offset u64, length u32, item (u16 length, UTF-8), peer (u16 length, UTF-8)`. A joiner
///   sends it with an empty peer; the relay passes it to the host with the requester's participant id as peer.
/// - `mediaChunk`: `id u32, status u8, peer (u16 length, UTF-8), itemSize i64, payload`. The host answers its
///   requester (peer) with status `ok` and the sealed box of the range as payload (`MediaChunkCipher`); the relay
///   passes the frame on unchanged. Any other status is a refusal, its payload the reason in UTF-8.
package enum MediaFrames {
    package struct Request: Hashable, Sendable {
        package var id: UInt32
        package var item: String
        package var offset: Int64
        package var length: Int
        /// Empty from a joiner; the requester, as the relay passes it to the host.
        package var peer: String

        package init(id: UInt32, item: String, offset: Int64, length: Int, peer: String = "") {
            self.id = id
            self.item = item
            self.offset = offset
            self.length = length
            self.peer = peer
        }
    }

    /// What a chunk says: its bytes, or why there are none.
    package enum Status: UInt8, Sendable, Equatable {
        case ok = 0
        /// The host offers no such item (or no longer).
        case notOffered = 1
        /// The relay does not pass media (it runs without `--relay-media`).
        case relayRefuses = 2
        /// Too many open requests (this member's or the session's), or the host is busy: ask again later.
        case busy = 3
        /// The session's host is not connected.
        case hostAbsent = 4
        /// The host did not answer in time.
        case timedOut = 5
        /// A malformed request: a length of 0 or over the relay's request size, a negative offset.
        case badRequest = 6
        /// The host could not read its file.
        case unreadable = 7
    }

    package struct Chunk: Sendable {
        package var id: UInt32
        package var status: Status
        package var peer: String
        /// The item's size in bytes (-1 when unknown, in a refusal).
        package var itemSize: Int64
        /// The sealed box (status ok) or the reason in UTF-8.
        package var payload: ByteBuffer

        package init(id: UInt32, status: Status, peer: String, itemSize: Int64, payload: ByteBuffer) {
            self.id = id
            self.status = status
            self.peer = peer
            self.itemSize = itemSize
            self.payload = payload
        }

        /// The reason of a refusal, in words.
        package var reason: String { payload.getString(at: payload.readerIndex, length: payload.readableBytes) ?? "" }
    }

    package static func encode(_ request: Request, allocator: ByteBufferAllocator) throws -> Frame {
        try Frame.encodedOnce(.mediaRequest, allocator: allocator,
                              bodyCapacity: 20 + request.item.utf8.count + request.peer.utf8.count) { b in
            b.writeInteger(request.id)
            b.writeInteger(UInt64(max(0, request.offset)))
            b.writeInteger(UInt32(clamping: request.length))
            try writeString(request.item, to: &b, kind: .mediaRequest)
            try writeString(request.peer, to: &b, kind: .mediaRequest)
        }
    }

    package static func parseRequest(_ frame: Frame) throws -> Request {
        var b = frame.body
        guard let id = b.readInteger(as: UInt32.self), let offset = b.readInteger(as: UInt64.self),
              let length = b.readInteger(as: UInt32.self), offset <= UInt64(Int64.max) else {
            throw FrameError.malformedBody(kind: .mediaRequest, detail: "short header")
        }
        let item = try readString(&b, kind: .mediaRequest)
        let peer = try readString(&b, kind: .mediaRequest)
        return Request(id: id, item: item, offset: Int64(offset), length: Int(length), peer: peer)
    }

    /// A chunk frame; `payload` is written after the header (a sealed box, or a reason).
    package static func encodeChunk(id: UInt32, status: Status, peer: String, itemSize: Int64,
                                    payloadCount: Int, allocator: ByteBufferAllocator,
                                    payload: (inout ByteBuffer) -> Void) throws -> Frame {
        try Frame.encodedOnce(.mediaChunk, allocator: allocator, bodyCapacity: 17 + peer.utf8.count + payloadCount) { b in
            b.writeInteger(id)
            b.writeInteger(status.rawValue)
            try writeString(peer, to: &b, kind: .mediaChunk)
            b.writeInteger(itemSize)
            payload(&b)
        }
    }

    /// A refusal of request `id` of `peer`, with the reason in words.
    package static func refusal(id: UInt32, status: Status, peer: String, reason: String,
                                allocator: ByteBufferAllocator) throws -> Frame {
        let bytes = Array(reason.utf8.prefix(512))
        return try encodeChunk(id: id, status: status, peer: peer, itemSize: -1, payloadCount: bytes.count,
                               allocator: allocator) { $0.writeBytes(bytes) }
    }

    package static func parseChunk(_ frame: Frame) throws -> Chunk {
        var b = frame.body
        guard let id = b.readInteger(as: UInt32.self), let rawStatus = b.readInteger(as: UInt8.self) else {
            throw FrameError.malformedBody(kind: .mediaChunk, detail: "short header")
        }
        let peer = try readString(&b, kind: .mediaChunk)
        guard let itemSize = b.readInteger(as: Int64.self) else {
            throw FrameError.malformedBody(kind: .mediaChunk, detail: "short header")
        }
        // An unknown status (a newer peer's) reads as a refusal whose reason is its payload.
        return Chunk(id: id, status: Status(rawValue: rawStatus) ?? .unreadable, peer: peer, itemSize: itemSize, payload: b)
    }

    /// The peer of a chunk frame, read without copying its payload (the relay checks it before passing the frame on).
    package static func chunkHeader(_ frame: Frame) throws -> (id: UInt32, status: UInt8, peer: String) {
        var b = frame.body
        guard let id = b.readInteger(as: UInt32.self), let status = b.readInteger(as: UInt8.self) else {
            throw FrameError.malformedBody(kind: .mediaChunk, detail: "short header")
        }
        return (id, status, try readString(&b, kind: .mediaChunk))
    }

    private static func writeString(_ s: String, to b: inout ByteBuffer, kind: FrameKind) throws {
        let count = s.utf8.count
        guard count <= 1024 else { throw FrameError.malformedBody(kind: kind, detail: "string too long") }
        b.writeInteger(UInt16(count))
        b.writeString(s)
    }

    private static func readString(_ b: inout ByteBuffer, kind: FrameKind) throws -> String {
        guard let count = b.readInteger(as: UInt16.self), count <= 1024, let s = b.readString(length: Int(count)) else {
            throw FrameError.malformedBody(kind: kind, detail: "bad string")
        }
        return s
    }
}
