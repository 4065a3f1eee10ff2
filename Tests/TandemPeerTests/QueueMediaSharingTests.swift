import Foundation
import Synchronization
import Tandem
import Testing
import TandemPeer

/// `--share-media` in the queue: the host offers every item it registers, now and later; a joiner streams a shared
/// item it lacks (before trying the fallback URL), or every shared item with `--stream`.
@Suite("Queue media, shared by the host", .serialized)
struct QueueMediaSharingTests {
    static func activity(_ path: String, shared: Bool, fallback: String? = nil) async throws -> ActivityEnvelope {
        var activity = MediaActivity(probe: try await MediaProbe.probe(path), path: path, title: nil, subtitle: nil,
                                     type: nil, fallbackURL: fallback.flatMap(URL.init(string:)))
        if shared { activity.sharedByHost = true }
        return try activity.envelope
    }

    @Test("the host offers the items registered before and after sharing starts")
    func hostOffers() {
        let media = QueueMedia(directory: nil)
        media.register(itemID: "a", location: "/films/a.webm")
        let offered = Mutex<[String: String]>([:])
        #expect(!media.sharesItems)
        media.share { item, path in offered.withLock { $0[item] = path } }
        #expect(media.sharesItems)
        media.register(itemID: "b", location: "/films/b.webm")
        #expect(offered.withLock { $0 } == ["a": "/films/a.webm", "b": "/films/b.webm"])
    }

    @Test("a joiner streams a shared item it lacks, keeps its own copy, and streams everything shared with --stream")
    func joinerStreams() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("queue-shared-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let countdown = try Samples.path("countdown.webm"), short = try Samples.path("short.webm")
        try FileManager.default.copyItem(atPath: short, toPath: directory.appendingPathComponent("short.webm").path)
        let url: @Sendable (String) -> String = { "http://127.0.0.1:7420/media/s/\($0)?p=me&t=x" }

        let media = QueueMedia(directory: directory.path)
        let warnings = Mutex<[String]>([])
        media.onWarning { text in warnings.withLock { $0.append(text) } }
        media.streamFrom(HostStreams(host: "ann", preferred: false, url: url))
        let own = try await Self.activity(short, shared: true)
        let ownPath = directory.appendingPathComponent("short.webm").path
        #expect(await media.location(for: own) == ownPath)
        #expect(media.streamingHost(of: ownPath) == nil)
        let missing = try await Self.activity(countdown, shared: true, fallback: "https://example.com/countdown.webm")
        let streamed = await media.location(for: missing)
        #expect(streamed == url(missing.itemID))
        #expect(media.streamingHost(of: streamed) == "ann")
        #expect(warnings.withLock { $0 }.last?.contains("streaming the host's copy") == true)
        // Not shared: the fallback URL, as before.
        let unshared = QueueMedia(directory: directory.path)
        unshared.streamFrom(HostStreams(host: "ann", preferred: true, url: url))
        #expect(await unshared.location(for: try await Self.activity(countdown, shared: false, fallback: "https://example.com/c.webm"))
            == "https://example.com/c.webm")

        let preferring = QueueMedia(directory: directory.path)
        preferring.streamFrom(HostStreams(host: "ann", preferred: true, url: url))
        #expect(await preferring.location(for: own) == url(own.itemID))
    }
}
