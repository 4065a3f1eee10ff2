import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// `--share-media` on the session port: members stream the host's queue items with their tokens, nobody else gets
/// a byte, and the bounds on streams (per participant, in all), their pace and idle readers hold.
@Suite(.serialized)
struct SharedMediaServerTests {
    static let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("media-samples/countdown.webm").path

    /// A server whose port answers HTTP for media only (as `--share-media` without `--web` sets it up), offering
    /// `files` (item → path) in session `film`.
    static func start(files: [String: String], _ tweak: (inout WebConfiguration) -> Void = { _ in })
        async throws -> (SessionServer, Invite) {
        let shared = SharedMedia()
        var web = WebConfiguration()
        web.servesPage = false
        web.sharedMedia = shared
        tweak(&web)
        let server = try await WebPeerServerTests.startServer { $0.web = web }
        let invite = try server.createSession(id: "film")
        for (item, path) in files { shared.offer(session: "film", item: item, path: path) }
        return (server, invite)
    }

    /// The request line's target for `item` as `participant`, with the token from `secret`.
    static func target(_ invite: Invite, item: String, participant: String, secret: String? = nil) -> String {
        var invite = invite
        if let secret { invite.secret = secret }
        let url = SharedMedia.url(invite: invite, item: item, participant: participant)
        return String(url.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
    }

    /// Sends one GET and waits for the whole answer (the server closes after it).
    static func get(_ port: Int, _ target: String, range: String? = nil) async throws -> WebSocketPeer {
        let peer = try await WebSocketPeer.connect(port: port)
        try await peer.send("GET \(target) HTTP/1.1\r\nHost: x\r\n" + (range.map { "Range: \($0)\r\n" } ?? "") + "\r\n")
        #expect(await peer.closed(within: 10))
        return peer
    }

    @Test("a member streams an item by range with its token; strangers and wrong tokens get 404 and not a byte of media")
    func tokens() async throws {
        let content = try Data(contentsOf: URL(fileURLWithPath: Self.sample))
        let (server, invite) = try await Self.start(files: ["abc": Self.sample])
        let good = try await Self.get(server.port, Self.target(invite, item: "abc", participant: "p1"), range: "bytes=1000-1099")
        #expect(good.received.hasPrefix("HTTP/1.1 206"), "\(good.received.prefix(200))")
        #expect(good.received.contains("bytes 1000-1099/\(content.count)"))
        #expect(Array(good.receivedBytes.suffix(100)) == Array(content[1000...1099]))
        let abc = Self.target(invite, item: "abc", participant: "p1")
        let refused = [
            Self.target(invite, item: "abc", participant: "p1", secret: "not-the-secret"),    // a stranger's guess
            abc.replacingOccurrences(of: "p=p1", with: "p=p2"),                           // another participant's claim
            abc.replacingOccurrences(of: "/abc?", with: "/abd?"),                         // another item
            abc.replacingOccurrences(of: "/film/", with: "/other/"),                      // another session
            String(abc.prefix { $0 != "&" }),                                             // no token
            "/media/film/abc",                                                            // nothing at all
            "/media/film?t=" + WebMedia.token(key: SessionAuth.key(forSecret: invite.secret), session: "film"), // no --web-media
            "/join/film", "/app.js",                                                      // no page either
        ]
        for target in refused {
            let answer = try await Self.get(server.port, target, range: "bytes=0-99")
            #expect(answer.received.hasPrefix("HTTP/1.1 404"), "\(target): \(answer.received.prefix(120))")
            #expect(!answer.received.contains("Content-Range") && answer.receivedBytes.count < 1024, "\(target)")
        }
        let browser = try await WebSocketPeer.connect(port: server.port)
        #expect(try await browser.upgrade() == false, "the WebSocket is not open when only media is shared")
        await server.shutdown()
    }

    @Test("the host's content fingerprint of an item rides on its answers; an item offered without one has none")
    func contentIDHeader() async throws {
        let fingerprint = String(repeating: "ab", count: 32)
        let (server, invite) = try await Self.start(files: ["plain": Self.sample])
        let shared = try #require(server.configuration.web?.sharedMedia)
        shared.offer(session: "film", item: "known", path: Self.sample, contentID: fingerprint)
        let known = try await Self.get(server.port, Self.target(invite, item: "known", participant: "p1"), range: "bytes=0-0")
        #expect(known.received.hasPrefix("HTTP/1.1 206"), "\(known.received.prefix(200))")
        #expect(known.received.contains("Tandem-Content-ID: \(fingerprint)\r\n"), "\(known.received.prefix(400))")
        let plain = try await Self.get(server.port, Self.target(invite, item: "plain", participant: "p1"), range: "bytes=0-0")
        #expect(plain.received.hasPrefix("HTTP/1.1 206") && !plain.received.contains("Tandem-Content-ID"))
        // Never to a stranger: a wrong token is the same 404 as before, without the header.
        let stranger = try await Self.get(server.port, Self.target(invite, item: "known", participant: "p1", secret: "guess"))
        #expect(stranger.received.hasPrefix("HTTP/1.1 404") && !stranger.received.contains(fingerprint))
        await server.shutdown()
    }

    @Test("a third stream from one participant is refused, and one beyond the server's limit; an idle reader is closed")
    func streamBounds() async throws {
        // Large enough that a reader that does not read stalls its stream (kernel buffers take a few MB).
        let big = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-shared-\(UUID().uuidString).bin")
        FileManager.default.createFile(atPath: big.path, contents: nil)
        let handle = try FileHandle(forWritingTo: big)
        try handle.truncate(atOffset: 64 * 1024 * 1024)
        try handle.close()
        defer { try? FileManager.default.removeItem(at: big) }
        let (server, invite) = try await Self.start(files: ["big": big.path]) { web in
            web.maxMediaStreamsPerParticipant = 2
            web.maxMediaStreams = 4
            web.mediaBytesPerSecond = 0
            web.mediaIdleTimeout = .seconds(2)
        }
        func stalled(_ participant: String) async throws -> StalledReader {
            let reader = try await StalledReader.connect(port: server.port)
            try await reader.request(Self.target(invite, item: "big", participant: participant))
            #expect(await reader.head(within: 5).hasPrefix("HTTP/1.1 200"), "\(participant)'s stream did not start")
            return reader
        }
        let started = ContinuousClock.now
        let p1 = [try await stalled("p1"), try await stalled("p1")]
        let third = try await Self.get(server.port, Self.target(invite, item: "big", participant: "p1"), range: "bytes=0-9")
        #expect(third.received.hasPrefix("HTTP/1.1 503"), "p1's third stream: \(third.received.prefix(80))")
        let p2 = [try await stalled("p2"), try await stalled("p2")]
        let fifth = try await Self.get(server.port, Self.target(invite, item: "big", participant: "p3"), range: "bytes=0-9")
        #expect(fifth.received.hasPrefix("HTTP/1.1 503"), "the server's fifth stream: \(fifth.received.prefix(80))")
        // The stalled readers are closed after the idle timeout; then p1 streams again.
        var again = ""
        for _ in 0..<40 {
            again = try await Self.get(server.port, Self.target(invite, item: "big", participant: "p1"), range: "bytes=0-9").received
            if again.hasPrefix("HTTP/1.1 206") { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        let freed = ContinuousClock.now - started
        #expect(again.hasPrefix("HTTP/1.1 206"), "p1 never streamed again: \(again.prefix(80))")
        #expect(freed >= .seconds(1.5), "the idle streams were closed after \(freed), before the 2 s timeout")
        for reader in p1 + p2 { reader.channel.close(promise: nil) }
        await server.shutdown()
    }

    @Test("a stream is paced to mediaBytesPerSecond")
    func pacing() async throws {
        let (server, invite) = try await Self.start(files: ["abc": Self.sample]) { $0.mediaBytesPerSecond = 256 * 1024 }
        let started = ContinuousClock.now
        let answer = try await Self.get(server.port, Self.target(invite, item: "abc", participant: "p1"),
                                        range: "bytes=0-\(768 * 1024 - 1)")
        let took = ContinuousClock.now - started
        #expect(answer.received.hasPrefix("HTTP/1.1 206") && answer.receivedBytes.count > 768 * 1024)
        // 768 KiB at 256 KiB/s: the last 64 KiB chunk goes out 2.75 s after the first.
        #expect(took >= .seconds(2.5) && took < .seconds(20), "768 KiB took \(took)")
        print("shared media: 768 KiB paced to 256 KiB/s took \(took)")
        await server.shutdown()
    }
}

/// A client that asks for media and then stops reading (one read for the answer's head, then none).
final class StalledReader: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    private let bytes = NIOLockedValueBox(ByteBuffer())
    private let closedPromise: EventLoopPromise<Void>
    let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
        closedPromise = channel.eventLoop.makePromise()
        try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
    }

    static func connect(port: Int) async throws -> StalledReader {
        try await loopbackConnection(port: port, receiveBuffer: 4096) { StalledReader(channel: $0) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        bytes.withLockedValue { $0.writeBuffer(&incoming) }
    }

    func channelInactive(context: ChannelHandlerContext) { closedPromise.succeed(()) }

    func request(_ target: String) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(string: "GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")).get()
        channel.read()
    }

    /// The answer's first bytes, once some have arrived.
    func head(within seconds: Double) async -> String {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let text = String(decoding: bytes.withLockedValue { Array($0.readableBytesView.prefix(64)) }, as: UTF8.self)
            if !text.isEmpty { return text }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return ""
    }
}
