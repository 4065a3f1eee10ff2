import Foundation
import NIOCore
import NIOFoundationCompat
import Synchronization
import TandemCore

/// The protocol version this build speaks (sent in `hello`; see docs/PROTOCOL.md).
public let tandemProtocolVersion: UInt16 = 3

/// What a frame carries. The numbers are part of the wire protocol.
public enum FrameKind: UInt8, Sendable, CaseIterable {
    /// Client → server: protocol version and the session the client wants (JSON `Hello`).
    case hello = 0x01
    /// Server → client: a random nonce to prove knowledge of the session secret against (JSON `Challenge`).
    case challenge = 0x02
    /// Client → server: the proof (JSON `AuthProof`).
    case authProof = 0x03
    /// Server → client: authentication succeeded (JSON `Accepted`).
    case accepted = 0x04
    /// Either way: something went wrong; the sender closes the connection after it (JSON `ErrorBody`).
    case error = 0x05
    /// Either way: liveness probe (empty body).
    case heartbeatPing = 0x06
    /// Either way: answer to a heartbeat ping (empty body).
    case heartbeatPong = 0x07
    /// Either way: orderly goodbye (JSON `ErrorBody` giving the reason); the sender closes after it.
    case close = 0x08
    /// Client → server: a `ClientMessage` (JSON). Server → client: a `ServerMessage` (JSON).
    case session = 0x10
    /// Client → server: clock ping, binary `sequence u32, t1 i64`.
    case clockPing = 0x11
    /// Server → client: clock pong, binary `sequence u32, t1 i64, t2 i64, t3 i64`.
    case clockPong = 0x12
    /// Either way: an app message in binary (see docs/PROTOCOL.md), so payloads travel without base64.
    case appMessage = 0x13
    /// Either way: a journal chunk in binary: `idLength u16, id, offset i64, bytes`.
    case journalChunk = 0x14
    /// Client → server: a link report in binary, `oneWayDelay i64, errorBound i64[, renderOffset i64]` (ns), sent
    /// only to a server whose `accepted` offers it (`linkReportFrames`): every peer sends one a second.
    case linkReport = 0x15
    /// Through a relay that passes media (`serve --relay-media`): a request for a byte range of an item the host
    /// shares, binary (`MediaFrames`: joiner → relay → host).
    case mediaRequest = 0x16
    /// Through a relay that passes media: a range's bytes sealed by the host, or why there are none (host → relay →
    /// joiner; the relay's own refusals relay → joiner).
    case mediaChunk = 0x17

    /// Whether frames of this kind carry a `ClientMessage` / `ServerMessage`.
    var carriesSessionMessage: Bool {
        self == .session || self == .appMessage || self == .journalChunk || self == .linkReport
    }
}

/// One frame: `length u32 BE` (of kind + body), `kind u8`, `body`.
public struct Frame: Sendable {
    public var kind: FrameKind { didSet { wire = nil } }
    public var body: ByteBuffer { didSet { wire = nil } }
    /// The frame's bytes on the wire (length, kind, body) when they were built once for every recipient
    /// (`encodedOnce`); `body` is then a view of the same storage. Nil: it is encoded per write (`FrameWriter.bytes`).
    public private(set) var wire: ByteBuffer?
    /// Local monotonic time at which the bytes completing this frame were read (zero for outgoing frames).
    public var receivedAt: LocalInstant = .zero

    public init(kind: FrameKind, body: ByteBuffer, receivedAt: LocalInstant = .zero) {
        self.kind = kind
        self.body = body
        self.receivedAt = receivedAt
    }

    /// A frame whose wire bytes are built now, once: `writeBody` appends the body after the length and kind,
    /// `body` is a view of those bytes, and every channel the frame is written to (by the server's connections or
    /// `FrameWriter`, through `FrameWriter.bytes`) sends the same storage, without copying or allocating per
    /// recipient.
    public static func encodedOnce(_ kind: FrameKind, allocator: ByteBufferAllocator, bodyCapacity: Int,
                                   _ writeBody: (inout ByteBuffer) throws -> Void) rethrows -> Frame {
        var bytes = allocator.buffer(capacity: 5 + bodyCapacity)
        bytes.writeInteger(UInt32(0))
        bytes.writeInteger(kind.rawValue)
        try writeBody(&bytes)
        bytes.setInteger(UInt32(bytes.readableBytes - 4), at: bytes.readerIndex)
        var frame = Frame(kind: kind, body: bytes.getSlice(at: bytes.readerIndex + 5, length: bytes.readableBytes - 5)!)
        frame.wire = bytes
        return frame
    }
}

/// A violation of the framing layer, detected before any body is allocated.
public enum FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    case frameTooLarge(announced: UInt32, limit: Int)
    case emptyFrame
    case unknownKind(UInt8)
    case truncated(missing: Int)
    case malformedBody(kind: FrameKind, detail: String)

    public var description: String {
        switch self {
        case .frameTooLarge(let announced, let limit):
            return "frame of \(announced) bytes announced; the limit is \(limit)"
        case .emptyFrame: return "frame with a zero length (no kind byte)"
        case .unknownKind(let k): return "unknown frame kind 0x\(String(k, radix: 16))"
        case .truncated(let missing): return "connection ended inside a frame (\(missing) bytes missing)"
        case .malformedBody(let kind, let detail): return "malformed \(kind) frame: \(detail)"
        }
    }

    /// The error code sent to the peer.
    var code: WireErrorCode {
        switch self {
        case .frameTooLarge: return .frameTooLarge
        case .unknownKind: return .unknownFrameKind
        case .emptyFrame, .truncated, .malformedBody: return .malformedFrame
        }
    }
}

/// The largest frame a decoder currently accepts, shared with the handler that may raise it (a server accepts
/// only small frames until the peer has authenticated).
public final class FrameSizeLimit: Sendable {
    private let storage: Atomic<Int>

    public init(_ value: Int) {
        storage = Atomic(value)
    }

    public var value: Int {
        get { storage.load(ordering: .relaxed) }
        set { storage.store(newValue, ordering: .relaxed) }
    }
}

/// A connection's bytes, framed by the handler that reads them (the server's and the client's connection
/// handlers do their own framing: NIO's generic `ByteToMessageHandler` in front of them ran unspecialised, its
/// type metadata looked up at run time for every read, and passed each frame on boxed). Per read: `append` the
/// bytes, take whole frames with `next` until it returns nil, then `finishRead`. What is held is at most one
/// frame within the limit (checked as soon as its length prefix is in) plus one read.
package struct FrameReader {
    package init() {}
    private var pending: ByteBuffer?

    package mutating func append(_ bytes: ByteBuffer) {
        if pending == nil {
            pending = bytes
        } else {
            var bytes = bytes
            pending!.writeBuffer(&bytes)
        }
    }

    /// The next whole frame (stamped `receivedAt`), nil until one has arrived; a bad length or kind throws and
    /// drops what was held.
    package mutating func next(maxFrameSize: Int, receivedAt: LocalInstant) throws(FrameError) -> Frame? {
        guard pending != nil else { return nil }
        do {
            return try Self.nextFrame(from: &pending!, maxFrameSize: maxFrameSize, receivedAt: receivedAt)
        } catch {
            pending = nil
            throw error
        }
    }

    /// The next whole frame at the front of `buffer` (its body a view of `buffer`'s bytes), or nil until one has
    /// arrived. A length over `maxFrameSize`, an empty frame and an unknown kind are errors as soon as their
    /// first bytes are in, before the rest is waited for (or any of it held).
    private static func nextFrame(from buffer: inout ByteBuffer, maxFrameSize: Int,
                                  receivedAt: LocalInstant) throws(FrameError) -> Frame? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return nil }
        guard length >= 1 else { throw FrameError.emptyFrame }
        guard Int(length) <= maxFrameSize else { throw FrameError.frameTooLarge(announced: length, limit: maxFrameSize) }
        guard let kindByte = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt8.self) else { return nil }
        guard let kind = FrameKind(rawValue: kindByte) else { throw FrameError.unknownKind(kindByte) }
        guard buffer.readableBytes >= 4 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 5)
        let body = buffer.readSlice(length: Int(length) - 1)!
        return Frame(kind: kind, body: body, receivedAt: receivedAt)
    }

    /// After a read's frames: lets go of the read's buffer when every byte was framed, and otherwise keeps only
    /// the partial frame, in a buffer of its own unless nothing was framed from this one (so NIO can use its
    /// receive buffer again).
    package mutating func finishRead(allocator: ByteBufferAllocator) {
        guard var rest = pending, rest.readableBytes > 0 else {
            pending = nil
            return
        }
        guard rest.readerIndex > 0 else { return }
        var compact = allocator.buffer(capacity: rest.readableBytes)
        compact.writeBuffer(&rest)
        pending = compact
    }

    /// Drops everything held (the connection is closing).
    package mutating func reset() { pending = nil }
}

/// Writes frames with their length prefix.
public struct FrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = Frame
    public init() {}
    public func encode(data: Frame, out: inout ByteBuffer) throws {
        Self.write(data, to: &out)
    }

    static func write(_ frame: Frame, to out: inout ByteBuffer) {
        if var wire = frame.wire {
            out.writeBuffer(&wire)
            return
        }
        out.writeInteger(UInt32(frame.body.readableBytes + 1))
        out.writeInteger(frame.kind.rawValue)
        var body = frame.body
        out.writeBuffer(&body)
    }
}

/// Writes frames with their length prefix. A frame built with `Frame.encodedOnce` goes out as its wire bytes
/// (the same storage on every channel it fans out to); any other frame is encoded here.
public final class FrameWriter: ChannelOutboundHandler {
    public typealias OutboundIn = Frame
    public typealias OutboundOut = ByteBuffer

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(Self.bytes(of: unwrapOutboundIn(data), allocator: context.channel.allocator)),
                      promise: promise)
    }

    /// `frame` on the wire: its shared bytes when it has them, else encoded now.
    public static func bytes(of frame: Frame, allocator: ByteBufferAllocator) -> ByteBuffer {
        if let wire = frame.wire { return wire }
        var out = allocator.buffer(capacity: 5 + frame.body.readableBytes)
        FrameEncoder.write(frame, to: &out)
        return out
    }
}

// MARK: - Control bodies (JSON)

/// Error codes carried in `error` and `close` frames.
public enum WireErrorCode: String, Codable, Sendable {
    case malformedFrame, frameTooLarge, unknownFrameKind, unexpectedFrame
    case protocolVersion, authenticationFailed, noSuchSession, sessionExists, sessionFull, serverFull
    case sessionEnded, helloTimeout, heartbeatTimeout, flood, serverShutdown, internalError
    case left, removed, hostLeft, ended, connectionLost, protocolError
    /// The server closed a participant that did not read what it was sent fast enough.
    case slowConsumer
    /// The server refused to create a session (missing or wrong creation token, or the creation quota).
    case creationRefused
    /// The answer to a creation probe (`authProof.probe`): the server would create the session; it created nothing.
    case creationAllowed

    /// The code that carries an authority's invalidation reason.
    init(_ code: InvalidationReason.Code) {
        switch code {
        case .ended: self = .ended
        case .hostLeft: self = .hostLeft
        case .serverShutdown: self = .serverShutdown
        case .removed: self = .removed
        case .sessionFull: self = .sessionFull
        case .authenticationFailed: self = .authenticationFailed
        case .protocolError: self = .protocolError
        case .connectionLost: self = .connectionLost
        case .left: self = .left
        }
    }
}

/// Body of `hello`.
package struct Hello: Codable, Sendable {
    var protocolVersion: UInt16
    var session: String
    /// Create the session if it does not exist (only when the server allows remote creation).
    var create: Bool?
}

/// Body of `challenge`.
package struct Challenge: Codable, Sendable {
    /// 32 random bytes.
    var nonce: Data
}

/// Body of `authProof`.
package struct AuthProof: Codable, Sendable {
    /// 32 random bytes chosen by the client.
    var clientNonce: Data
    /// HMAC-SHA256(key, serverNonce ‖ session ‖ clientNonce).
    var proof: Data
    /// When creating a session: the key (SHA-256 of the secret) the server should check later proofs against.
    var sessionKey: Data?
    /// Asks to join as the session's host.
    var host: Bool?
    /// When creating a session on a server that requires it: the server's creation token.
    var createToken: String?
    /// With `hello.create`: only check that the session would be created (proof, token, quota, room), create nothing
    /// and answer with a `close` of code `creationAllowed` (`GroupActivity.prepareForActivation`).
    var probe: Bool?
}

/// Body of `accepted`.
package struct Accepted: Codable, Sendable {
    /// How often the server sends heartbeats (ms); the client should do the same.
    var heartbeatIntervalMs: Int
    /// Silence after which either side may consider the other gone (ms).
    var heartbeatTimeoutMs: Int
    var maxFrameSize: Int
    /// The connection's datagram channel id when the server takes datagrams on its UDP socket (same port).
    var datagramChannel: UInt64?
    /// Whether the server takes link reports as `linkReport` frames (binary) besides JSON `session` frames.
    var linkReportFrames: Bool?
    /// Whether the server passes resend requests between peers that keep their last reliable app messages
    /// (`join.resends`, `join.received`, `resend`, `resent`).
    var appMessageResend: Bool? = nil
    /// Whether the server takes copies of timeline requests as datagrams (type 7, datagram revision 4).
    var timelineCopies: Bool? = nil
}

/// Body of `error` and `close`.
package struct ErrorBody: Codable, Sendable {
    var code: WireErrorCode
    var message: String
}

// MARK: - Helpers

package enum FrameCodec {
    static func json<T: Encodable>(_ kind: FrameKind, _ value: T, allocator: ByteBufferAllocator) throws -> Frame {
        let encoder = JSONEncoder()
        return try Frame.encodedOnce(kind, allocator: allocator, bodyCapacity: 256) { try encoder.encode(value, into: &$0) }
    }

    package static func decode<T: Decodable>(_ type: T.Type, from frame: Frame) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: frame.body)
        } catch {
            throw FrameError.malformedBody(kind: frame.kind, detail: "\(error)")
        }
    }

    static func error(_ code: WireErrorCode, _ message: String, kind: FrameKind = .error,
                      allocator: ByteBufferAllocator) -> Frame {
        (try? json(kind, ErrorBody(code: code, message: message), allocator: allocator))
            ?? Frame(kind: kind, body: allocator.buffer(capacity: 0))
    }

    static func empty(_ kind: FrameKind, allocator: ByteBufferAllocator) -> Frame {
        Frame(kind: kind, body: allocator.buffer(capacity: 0))
    }

    static func clockPing(sequence: UInt32, t1: LocalInstant, allocator: ByteBufferAllocator) -> Frame {
        var b = allocator.buffer(capacity: 12)
        b.writeInteger(sequence)
        b.writeInteger(t1.nanoseconds)
        return Frame(kind: .clockPing, body: b)
    }

    package static func parseClockPing(_ frame: Frame) throws -> (sequence: UInt32, t1: LocalInstant) {
        var b = frame.body
        guard let s = b.readInteger(as: UInt32.self), let t1 = b.readInteger(as: Int64.self) else {
            throw FrameError.malformedBody(kind: .clockPing, detail: "expected 12 bytes, got \(frame.body.readableBytes)")
        }
        return (s, LocalInstant(nanoseconds: t1))
    }

    package static func parseClockPong(_ frame: Frame) throws -> ClockPong {
        var b = frame.body
        guard let s = b.readInteger(as: UInt32.self), let t1 = b.readInteger(as: Int64.self),
              let t2 = b.readInteger(as: Int64.self), let t3 = b.readInteger(as: Int64.self) else {
            throw FrameError.malformedBody(kind: .clockPong, detail: "expected 28 bytes, got \(frame.body.readableBytes)")
        }
        return ClockPong(sequence: s, t1: LocalInstant(nanoseconds: t1), t2: SessionInstant(nanoseconds: t2),
                         t3: SessionInstant(nanoseconds: t3))
    }
}
