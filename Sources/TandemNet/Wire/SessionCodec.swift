import Foundation
import NIOCore
import NIOFoundationCompat
import TandemCore

/// Encodes session messages into frames: app messages and journal chunks in binary (their payloads are raw
/// bytes, without base64), link reports in binary to a server that takes them (every peer sends one a second),
/// everything else as JSON in a `session` frame. See docs/PROTOCOL.md.
package enum SessionCodec {
    // MARK: Client → server

    /// `linkReportFrames`: the server takes link reports as binary `linkReport` frames (its `accepted` said so);
    /// otherwise they go as JSON like the other control messages.
    package static func encode(_ message: ClientMessage, allocator: ByteBufferAllocator,
                               linkReportFrames: Bool = false) throws -> Frame {
        switch message {
        // A report with a preroll estimate or a delay spread (each sent when it changes) goes as JSON, which servers
        // before the field read without it.
        case .linkReport(let oneWayDelay, let errorBound, let renderOffset, nil, nil, nil, nil) where linkReportFrames:
            var b = allocator.buffer(capacity: 24)
            b.writeInteger(oneWayDelay.nanoseconds)
            b.writeInteger(errorBound.nanoseconds)
            if let renderOffset { b.writeInteger(renderOffset.nanoseconds) }
            return Frame(kind: .linkReport, body: b)
        case .appMessage(let app):
            var b = allocator.buffer(capacity: 16 + app.payload.count)
            b.writeInteger(app.delivery == .reliable ? UInt8(0) : UInt8(1))
            b.writeInteger(app.sequence)
            switch app.recipients {
            case .all:
                b.writeInteger(UInt16.max)
            case .only(let ids):
                guard ids.count < Int(UInt16.max) else {
                    throw FrameError.malformedBody(kind: .appMessage, detail: "too many recipients")
                }
                b.writeInteger(UInt16(ids.count))
                for id in ids.sorted() { try writeString(id.rawValue, to: &b) }
            }
            b.writeBytes(app.payload)
            return Frame(kind: .appMessage, body: b)
        case .journal(.chunk(let id, let offset, let bytes)):
            return try chunkFrame(id: id, offset: offset, bytes: bytes, allocator: allocator)
        default:
            return try FrameCodec.json(.session, message, allocator: allocator)
        }
    }

    package static func decodeClientMessage(_ frame: Frame) throws -> ClientMessage {
        switch frame.kind {
        case .session:
            return try FrameCodec.decode(ClientMessage.self, from: frame)
        case .appMessage:
            var b = frame.body
            guard let delivery = b.readInteger(as: UInt8.self), delivery <= 1,
                  let sequence = b.readInteger(as: UInt64.self), let count = b.readInteger(as: UInt16.self) else {
                throw FrameError.malformedBody(kind: .appMessage, detail: "short header")
            }
            let recipients: Recipients
            if count == UInt16.max {
                recipients = .all
            } else {
                var ids = Set<ParticipantID>()
                for _ in 0..<count { ids.insert(ParticipantID(try readString(&b, kind: .appMessage))) }
                recipients = .only(ids)
            }
            let payload = b.readData(length: b.readableBytes) ?? Data()
            return .appMessage(OutgoingAppMessage(recipients: recipients, delivery: delivery == 0 ? .reliable : .unreliable,
                                                  sequence: sequence, payload: payload))
        case .journalChunk:
            let (id, offset, bytes) = try parseChunk(frame)
            return .journal(.chunk(id: id, offset: offset, bytes: bytes))
        case .linkReport:
            var b = frame.body
            guard b.readableBytes == 16 || b.readableBytes == 24, let oneWayDelay = b.readInteger(as: Int64.self),
                  let errorBound = b.readInteger(as: Int64.self) else {
                throw FrameError.malformedBody(kind: .linkReport, detail: "a link report is 16 or 24 bytes")
            }
            let renderOffset = b.readInteger(as: Int64.self).map(TimeSpan.init(nanoseconds:))
            return .linkReport(oneWayDelay: TimeSpan(nanoseconds: oneWayDelay), errorBound: TimeSpan(nanoseconds: errorBound),
                               renderOffset: renderOffset)
        default:
            throw FrameError.malformedBody(kind: frame.kind, detail: "not a session message")
        }
    }

    // MARK: Server → client

    package static func encode(_ message: ServerMessage, allocator: ByteBufferAllocator) throws -> Frame {
        switch message {
        case .appMessage(let app):
            // Encoded once with its length and kind: the same bytes go to every recipient of the fan-out.
            return try Frame.encodedOnce(.appMessage, allocator: allocator,
                                         bodyCapacity: 11 + app.source.rawValue.utf8.count + app.payload.count) { b in
                try writeAppMessageHeader(delivery: app.delivery, sequence: app.sequence, source: app.source, to: &b)
                b.writeBytes(app.payload)
            }
        case .journal(.chunk(let id, let offset, let bytes)):
            return try chunkFrame(id: id, offset: offset, bytes: bytes, allocator: allocator)
        default:
            return try FrameCodec.json(.session, message, allocator: allocator)
        }
    }

    package static func decodeServerMessage(_ frame: Frame) throws -> ServerMessage {
        switch frame.kind {
        case .session:
            return try FrameCodec.decode(ServerMessage.self, from: frame)
        case .appMessage:
            var b = frame.body
            guard let delivery = b.readInteger(as: UInt8.self), delivery <= 1,
                  let sequence = b.readInteger(as: UInt64.self) else {
                throw FrameError.malformedBody(kind: .appMessage, detail: "short header")
            }
            let source = ParticipantID(try readString(&b, kind: .appMessage))
            let payload = b.readData(length: b.readableBytes) ?? Data()
            return .appMessage(IncomingAppMessage(source: source, delivery: delivery == 0 ? .reliable : .unreliable,
                                                  sequence: sequence, payload: payload))
        case .journalChunk:
            let (id, offset, bytes) = try parseChunk(frame)
            return .journal(.chunk(id: id, offset: offset, bytes: bytes))
        default:
            throw FrameError.malformedBody(kind: frame.kind, detail: "not a session message")
        }
    }

    // MARK: Forwarding without decoding

    /// A reliable app message for everyone else, as the relay forwards it: its sequence and its payload (a view of
    /// the frame's bytes, not a copy). Nil for any other app message (unreliable, for chosen recipients, or
    /// malformed), which goes through `decodeClientMessage`.
    package static func broadcastAppMessage(_ frame: Frame) -> (sequence: UInt64, payload: ByteBuffer)? {
        guard frame.kind == .appMessage else { return nil }
        var b = frame.body
        guard b.readInteger(as: UInt8.self) == 0, let sequence = b.readInteger(as: UInt64.self),
              b.readInteger(as: UInt16.self) == UInt16.max else { return nil }
        return (sequence, b)
    }

    /// The frame `encode(.appMessage(…))` makes for a reliable message from `source` with this payload, built
    /// from the payload's bytes as they came (one copy, into the frame shared by every recipient).
    package static func forwardedAppMessage(source: ParticipantID, sequence: UInt64, payload: ByteBuffer,
                                            allocator: ByteBufferAllocator) throws -> Frame {
        try Frame.encodedOnce(.appMessage, allocator: allocator,
                              bodyCapacity: 11 + source.rawValue.utf8.count + payload.readableBytes) { b in
            try writeAppMessageHeader(delivery: .reliable, sequence: sequence, source: source, to: &b)
            b.writeImmutableBuffer(payload)
        }
    }

    private static func writeAppMessageHeader(delivery: MessageDelivery, sequence: UInt64, source: ParticipantID,
                                              to b: inout ByteBuffer) throws {
        b.writeInteger(delivery == .reliable ? UInt8(0) : UInt8(1))
        b.writeInteger(sequence)
        try writeString(source.rawValue, to: &b)
    }

    // MARK: Pieces

    private static func chunkFrame(id: String, offset: Int64, bytes: Data, allocator: ByteBufferAllocator) throws -> Frame {
        try Frame.encodedOnce(.journalChunk, allocator: allocator, bodyCapacity: 10 + id.utf8.count + bytes.count) { b in
            try writeString(id, to: &b)
            b.writeInteger(offset)
            b.writeBytes(bytes)
        }
    }

    private static func parseChunk(_ frame: Frame) throws -> (String, Int64, Data) {
        var b = frame.body
        let id = try readString(&b, kind: .journalChunk)
        guard let offset = b.readInteger(as: Int64.self) else {
            throw FrameError.malformedBody(kind: .journalChunk, detail: "missing offset")
        }
        return (id, offset, b.readData(length: b.readableBytes) ?? Data())
    }

    private static func writeString(_ s: String, to b: inout ByteBuffer) throws {
        let count = s.utf8.count
        guard count < Int(UInt16.max) else { throw FrameError.malformedBody(kind: .session, detail: "string too long") }
        b.writeInteger(UInt16(count))
        b.writeString(s)
    }

    private static func readString(_ b: inout ByteBuffer, kind: FrameKind) throws -> String {
        guard let count = b.readInteger(as: UInt16.self), let s = b.readString(length: Int(count)) else {
            throw FrameError.malformedBody(kind: kind, detail: "bad string")
        }
        return s
    }
}
