import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `--web-media`: the host's file for the browsers of the session's members, by HTTP range requests on the same
/// port (`GET /media/SESSION?t=TOKEN`).
///
/// The token is `hex(HMAC-SHA256(SHA-256(secret), "tandem web media v1" ‖ session))`: the page computes it from the
/// link, the server from the key it holds, and nobody without the invite can. A request with the right token
/// leaves the unauthenticated bounds (it proved membership) and streams, paced by its socket; at most
/// `WebConfiguration.maxMediaStreams` stream at once on a server.
struct WebMedia: Sendable {
    /// The file and key of a session that offers its media, or nil.
    let lookup: @Sendable (String) -> (path: String, key: SymmetricKey)?
    let streams: StreamCount
    let admission: ConnectionAdmission.Ticket?

    /// How many responses stream at once, within a limit.
    final class StreamCount: Sendable {
        let limit: Int
        private let count = Atomic<Int>(0)
        init(limit: Int) { self.limit = limit }
        func take() -> Bool {
            if count.add(1, ordering: .relaxed).newValue <= limit { return true }
            count.subtract(1, ordering: .relaxed)
            return false
        }
        func give() { count.subtract(1, ordering: .relaxed) }
    }

    static func token(key: SymmetricKey, session: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("tandem web media v1".utf8) + Data(session.utf8), using: key)
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// The byte range a `Range` header asks for in a file of `size` bytes (one range; nil: the whole file), or
    /// `.unsatisfiable`.
    enum RangeRequest: Equatable {
        case whole
        case bytes(ClosedRange<Int64>)
        case unsatisfiable
    }

    static func range(_ header: String?, size: Int64) -> RangeRequest {
        guard let header else { return .whole }
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.hasPrefix("bytes="), !value.contains(","), size > 0 else { return .unsatisfiable }
        let parts = value.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .unsatisfiable }
        let first = Int64(parts[0].trimmingCharacters(in: .whitespaces))
        let last = Int64(parts[1].trimmingCharacters(in: .whitespaces))
        switch (first, last) {
        case (.some(let start), .none) where parts[1].trimmingCharacters(in: .whitespaces).isEmpty:
            return start >= 0 && start < size ? .bytes(start...(size - 1)) : .unsatisfiable
        case (.some(let start), .some(let end)):
            guard start >= 0, start <= end, start < size else { return .unsatisfiable }
            return .bytes(start...min(end, size - 1))
        case (.none, .some(let suffix)) where parts[0].isEmpty:
            guard suffix > 0 else { return .unsatisfiable }
            return .bytes(max(0, size - suffix)...(size - 1))
        default:
            return .unsatisfiable
        }
    }

    static func contentType(of path: String) -> String {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "webm": return "video/webm"
        case "mp4", "m4v": return "video/mp4"
        case "mkv": return "video/x-matroska"
        case "ogg", "ogv", "opus", "oga": return "audio/ogg"
        case "mp3": return "audio/mpeg"
        case "m4a": return "audio/mp4"
        case "wav": return "audio/wav"
        default: return "application/octet-stream"
        }
    }

    /// Answers `/media/SESSION?t=TOKEN`; false when there is no such media or the token is wrong (the caller
    /// answers 404: one answer for both).
    func serve(context: ChannelHandlerContext, head: HTTPRequestHead, session: String, query: String,
               proved: () -> Void) -> Bool {
        guard let found = lookup(session) else { return false }
        let (path, key) = found
        let presented = query.split(separator: "&").first { $0.hasPrefix("t=") }.map { Data($0.dropFirst(2).utf8) } ?? Data()
        guard presented.constantTimeEquals(Data(Self.token(key: key, session: session).utf8)) else { return false }
        proved()
        admission?.authenticated()
        let channel = context.channel
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let size = (attributes[.size] as? NSNumber)?.int64Value else {
            Self.answer(channel, head, .notFound, "the host's file is gone\n")
            return true
        }
        let range = Self.range(head.headers.first(name: "range"), size: size)
        guard range != .unsatisfiable else {
            Self.answer(channel, head, .rangeNotSatisfiable, "", extra: [("Content-Range", "bytes */\(size)")])
            return true
        }
        guard size > 0 else {
            Self.answer(channel, head, .ok, "")
            return true
        }
        guard streams.take() else {
            Self.answer(channel, head, .serviceUnavailable, "too many media streams; try again\n", extra: [("Retry-After", "2")])
            return true
        }
        let streams = self.streams
        let bytes: ClosedRange<Int64> = switch range {
        case .bytes(let requested): requested
        default: 0...(size - 1)
        }
        var headers = WebPage.securityHeaders
        headers.add(name: "Content-Type", value: Self.contentType(of: path))
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "Content-Length", value: "\(bytes.count)")
        headers.add(name: "Connection", value: "close")
        if range != .whole { headers.add(name: "Content-Range", value: "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)") }
        let status: HTTPResponseStatus = range == .whole ? .ok : .partialContent
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: head.version, status: status, headers: headers)),
                      promise: nil)
        guard head.method != .HEAD else {
            streams.give()
            channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
            return true
        }
        let io = NonBlockingFileIO(threadPool: .singleton)
        io.openFile(_deprecatedPath: path, eventLoop: channel.eventLoop).flatMap { handle, _ in
            io.readChunked(fileHandle: handle, fromOffset: bytes.lowerBound, byteCount: Int(bytes.count),
                           chunkSize: 64 * 1024, allocator: channel.allocator, eventLoop: channel.eventLoop) { chunk in
                // The next chunk is read once the socket has taken this one.
                channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(chunk)))
            }.always { _ in try? handle.close() }
        }.flatMap {
            channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        }.whenComplete { _ in
            streams.give()
            channel.close(promise: nil)
        }
        return true
    }

    static func answer(_ channel: any Channel, _ request: HTTPRequestHead, _ status: HTTPResponseStatus, _ body: String,
                       extra: [(String, String)] = []) {
        var headers = WebPage.securityHeaders
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        for (name, value) in extra { headers.add(name: name, value: value) }
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: request.version, status: status, headers: headers)),
                      promise: nil)
        if request.method != .HEAD, !body.isEmpty {
            channel.write(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(string: body))), promise: nil)
        }
        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
    }
}
