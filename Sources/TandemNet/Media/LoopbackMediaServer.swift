import TandemCrypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import Synchronization

/// The joiner's player reads the host's copy through the relay from here: a plain-HTTP range server inside the
/// joiner's process, on 127.0.0.1 at a port the system picks, whose every path starts with a random token of this
/// process (`/TOKEN/ITEM-IN-HEX`), so that another user of the machine cannot read through it. Each response is read
/// through `RelayedMediaReader` piece by piece, `window` pieces asked for ahead, and written as the socket takes it;
/// the player's download buffer (souphttpsrc) sees an ordinary HTTP server with ranges.
package final class LoopbackMediaServer: Sendable {
    /// Pieces asked for ahead of the one written.
    static let window = 2

    private let channel: any Channel
    private let token: String
    package let reader: RelayedMediaReader
    package var port: Int { channel.localAddress?.port ?? 0 }

    private let sizes: SizeCache

    private init(channel: any Channel, token: String, reader: RelayedMediaReader, sizes: SizeCache) {
        self.channel = channel
        self.token = token
        self.reader = reader
        self.sizes = sizes
    }

    /// Listens on 127.0.0.1 for the player, reading through `reader`.
    package static func start(reader: RelayedMediaReader) async throws -> LoopbackMediaServer {
        let token = SymmetricKey(size: .bits128).withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
        let sizes = SizeCache()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        LoopbackMediaHandler(token: token, reader: reader, sizes: sizes))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackMediaServer(channel: channel, token: token, reader: reader, sizes: sizes)
    }

    /// Tells the player the host's fingerprint of `item` (its activity's `contentID`), sent as `Tandem-Content-ID`
    /// as the host's own server does, so that the player need not fetch two 64 KiB ranges through the relay to
    /// take it. What the relay passes is the host's by its seal, so the activity's word is as good as the bytes'.
    package func know(contentID: String, of item: String) {
        sizes.contentIDs.withLock { $0[item] = contentID }
    }

    /// The URL the player reads `item` from.
    package func url(item: String) -> String {
        "http://127.0.0.1:\(port)/\(token)/\(Data(item.utf8).map { String(format: "%02x", $0) }.joined())"
    }

    package func close() async {
        try? await channel.close()
    }

    /// Item sizes learnt from the host's answers (a suffix range needs one before it can be asked for), and the
    /// host's fingerprints of items (`know(contentID:of:)`).
    final class SizeCache: Sendable {
        private let sizes = Mutex<[String: Int64]>([:])
        let contentIDs = Mutex<[String: String]>([:])
        subscript(item: String) -> Int64? {
            get { sizes.withLock { $0[item] } }
            set { sizes.withLock { $0[item] = newValue } }
        }
    }
}

/// One connection of the player: answers each `GET`/`HEAD` with the range asked for, then closes.
private final class LoopbackMediaHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked Sendable: `head` is touched only on the channel's loop; the response task reads only immutable values.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let token: String
    let reader: RelayedMediaReader
    let sizes: LoopbackMediaServer.SizeCache
    var head: HTTPRequestHead?

    init(token: String, reader: RelayedMediaReader, sizes: LoopbackMediaServer.SizeCache) {
        self.token = token
        self.reader = reader
        self.sizes = sizes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, channel: context.channel)
        }
    }

    private func respond(to head: HTTPRequestHead, channel: any Channel) {
        let parts = (head.uri.split(separator: "?").first ?? "").split(separator: "/").map(String.init)
        guard head.method == .GET || head.method == .HEAD, parts.count == 2,
              Data(parts[0].utf8).constantTimeEquals(Data(token.utf8)), let item = Self.unhex(parts[1]) else {
            return WebMedia.answer(channel, head, .notFound, "not found\n")
        }
        let task = Task { [reader, sizes] in
            await Self.stream(item: item, head: head, channel: channel, reader: reader, sizes: sizes)
        }
        channel.closeFuture.whenComplete { _ in task.cancel() }
    }

    private static func stream(item: String, head: HTTPRequestHead, channel: any Channel, reader: RelayedMediaReader,
                               sizes: LoopbackMediaServer.SizeCache) async {
        var first: (offset: Int64, bytes: Data)?
        var headSent = false
        do {
            if sizes[item] == nil {
                let (bytes, size) = try await reader.read(item: item, offset: 0, length: RelayedMediaReader.pieceSize)
                sizes[item] = size
                first = (0, bytes)
            }
            let size = sizes[item] ?? 0
            let range = WebMedia.range(head.headers.first(name: "range"), size: size)
            let bytes: ClosedRange<Int64>
            switch range {
            case .unsatisfiable:
                return WebMedia.answer(channel, head, .rangeNotSatisfiable, "", extra: [("Content-Range", "bytes */\(size)")])
            case .whole:
                guard size > 0 else { return WebMedia.answer(channel, head, .ok, "") }
                bytes = 0...(size - 1)
            case .bytes(let asked):
                bytes = asked
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/octet-stream")
            headers.add(name: "Accept-Ranges", value: "bytes")
            headers.add(name: "Content-Length", value: "\(bytes.count)")
            headers.add(name: "Connection", value: "close")
            if range != .whole { headers.add(name: "Content-Range", value: "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)") }
            if let contentID = sizes.contentIDs.withLock({ $0[item] }) { headers.add(name: WebMedia.contentIDHeader, value: contentID) }
            let status: HTTPResponseStatus = range == .whole ? .ok : .partialContent
            try await channel.writeAndFlush(HTTPServerResponsePart.head(HTTPResponseHead(version: head.version, status: status,
                                                                                         headers: headers))).get()
            headSent = true
            if head.method == .GET {
                try await body(item: item, bytes: bytes, first: first, channel: channel, reader: reader)
            }
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        } catch let error as RelayedMediaError where !headSent {
            // Before the head the player reads why; after it the response ends short, which the player sees as an error.
            return WebMedia.answer(channel, head, .badGateway, "\(error)\n")
        } catch {}
        try? await channel.close()
    }

    /// The range's bytes, `window` pieces asked for ahead of the one written, each written once the socket took the
    /// one before.
    private static func body(item: String, bytes: ClosedRange<Int64>, first: (offset: Int64, bytes: Data)?,
                             channel: any Channel, reader: RelayedMediaReader) async throws {
        let piece = Int64(RelayedMediaReader.pieceSize)
        var next = bytes.lowerBound
        var ahead: [Task<Data, any Error>] = []
        defer { for task in ahead { task.cancel() } }
        func askNext() {
            guard next <= bytes.upperBound else { return }
            let offset = next
            let length = Int(min(piece, bytes.upperBound - offset + 1))
            next += Int64(length)
            if let first, first.offset == offset, first.bytes.count >= length {
                let data = first.bytes.prefix(length)
                ahead.append(Task { () async throws -> Data in Data(data) })
                return
            }
            ahead.append(Task { try await reader.read(item: item, offset: offset, length: length).bytes })
        }
        for _ in 0..<LoopbackMediaServer.window { askNext() }
        while !ahead.isEmpty {
            let data = try await ahead.removeFirst().value
            guard !data.isEmpty else { throw RelayedMediaError.refused("the host's copy ended early") }
            askNext()
            try Task.checkCancellation()
            try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(data: data)))).get()
        }
    }

    static func unhex(_ text: String) -> String? {
        guard text.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return String(bytes: bytes, encoding: .utf8)
    }
}
