import TandemCrypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The host's media for the session's members, by HTTP range requests on the session port: `--web-media` (the
/// first file, for the page: `GET /media/SESSION?t=TOKEN`) and `--share-media` (every queue item, for any member:
/// `GET /media/SESSION/ITEM?p=PARTICIPANT&t=TOKEN`, see `SharedMedia`).
///
/// The `--web-media` token is `hex(HMAC-SHA256(SHA-256(secret), "tandem web media v1" ‖ session))`: the page
/// computes it from the link, the server from the key it holds, and nobody without the invite can. A request with
/// the right token leaves the unauthenticated bounds (it proved membership) and streams, paced to
/// `WebConfiguration.mediaBytesPerSecond` and closed when its reader takes nothing for `mediaIdleTimeout`; at most
/// `maxMediaStreams` stream at once on a server, and `maxMediaStreamsPerParticipant` for one participant.
struct WebMedia: Sendable {
    /// The file and key of a session's media (`item` nil: the `--web-media` file), or nil.
    let lookup: @Sendable (_ session: String, _ item: String?) -> (path: String, key: SymmetricKey, contentID: String?)?
    let streams: StreamCount
    let admission: ConnectionAdmission.Ticket?
    let pacing: Pacing

    /// How fast a response may go and how long its reader may take nothing.
    struct Pacing: Sendable {
        var bytesPerSecond: Int
        var idleTimeout: TimeAmount
    }

    /// How many responses stream at once, within a limit for all and one for each participant.
    final class StreamCount: Sendable {
        let limit: Int
        let perParticipant: Int
        private let counts = Mutex<(all: Int, by: [String: Int])>((0, [:]))
        init(limit: Int, perParticipant: Int = .max) {
            self.limit = limit
            self.perParticipant = perParticipant
        }
        func take(for participant: String? = nil) -> Bool {
            counts.withLock { counts in
                guard counts.all < limit else { return false }
                if let participant {
                    guard counts.by[participant, default: 0] < perParticipant else { return false }
                    counts.by[participant, default: 0] += 1
                }
                counts.all += 1
                return true
            }
        }
        func give(for participant: String? = nil) {
            counts.withLock { counts in
                counts.all -= 1
                if let participant, let held = counts.by[participant] {
                    counts.by[participant] = held > 1 ? held - 1 : nil
                }
            }
        }
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

    /// The header that carries the host's content fingerprint of a shared item (`SharedMedia.offer`).
    static let contentIDHeader = "Tandem-Content-ID"

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

    /// Answers `/media/SESSION?t=TOKEN` and `/media/SESSION/ITEM?p=PARTICIPANT&t=TOKEN` (`target` is what follows
    /// `/media/`); false when there is no such media or the token is wrong (the caller answers 404: one answer for
    /// both, so a stranger learns nothing of what is offered).
    func serve(context: ChannelHandlerContext, head: HTTPRequestHead, target: String, query: String,
               proved: () -> Void) -> Bool {
        let parts = target.split(separator: "/", omittingEmptySubsequences: false).map { $0.removingPercentEncoding ?? String($0) }
        guard parts.count == 1 || parts.count == 2, !parts[0].isEmpty else { return false }
        let session = parts[0]
        let item = parts.count == 2 ? parts[1] : nil
        var fields: [String: String] = [:]
        for field in query.split(separator: "&") {
            let pair = field.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            fields[String(pair[0])] = String(pair[1]).removingPercentEncoding ?? String(pair[1])
        }
        guard let found = lookup(session, item) else { return false }
        let (path, key, contentID) = found
        let participant = item == nil ? nil : fields["p"].map { "\(session)\n\($0)" }
        let expected: String
        if let item {
            guard let claimed = fields["p"], !claimed.isEmpty else { return false }
            expected = SharedMedia.token(key: key, session: session, item: item, participant: claimed)
        } else {
            expected = Self.token(key: key, session: session)
        }
        guard Data((fields["t"] ?? "").utf8).constantTimeEquals(Data(expected.utf8)) else { return false }
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
        guard streams.take(for: participant) else {
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
        if let contentID { headers.add(name: Self.contentIDHeader, value: contentID) }
        let status: HTTPResponseStatus = range == .whole ? .ok : .partialContent
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: head.version, status: status, headers: headers)),
                      promise: nil)
        guard head.method != .HEAD else {
            streams.give(for: participant)
            channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
            return true
        }
        Self.stream(path: path, bytes: bytes, to: channel, pacing: pacing).whenComplete { _ in
            streams.give(for: participant)
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
