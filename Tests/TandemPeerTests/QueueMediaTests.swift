import Foundation
import Synchronization
import Tandem
import Testing
import TandemPeer

/// How a joiner finds the queue's items: by the host's file name in its media directory, checked by content
/// fingerprint, else from the fallback URL; with a warning whenever it is not the host's file.
@Suite("Queue media", .serialized)
struct QueueMediaTests {
    static func sample(_ name: String) throws -> String { try Samples.path(name) }

    /// The host's activity for `path`, as `tandem host` shares it.
    static func hostActivity(_ path: String, fallback: String? = nil) async throws -> ActivityEnvelope {
        let probe = try await MediaProbe.probe(path)
        return try MediaActivity(probe: probe, path: path, title: nil, subtitle: nil, type: nil,
                                 fallbackURL: fallback.flatMap(URL.init(string:))).envelope
    }

    @Test("the host's file name in the directory, checked by fingerprint; a fallback URL or a warning when missing")
    func resolving() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("queue-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let countdown = try Self.sample("countdown.webm"), short = try Self.sample("short.webm")
        // Here, "countdown.webm" is really short.webm: the same name, other content.
        try FileManager.default.copyItem(atPath: short, toPath: directory.appendingPathComponent("countdown.webm").path)
        try FileManager.default.copyItem(atPath: short, toPath: directory.appendingPathComponent("short.webm").path)

        let media = QueueMedia(directory: directory.path)
        let warnings = Mutex<[String]>([])
        media.onWarning { text in warnings.withLock { $0.append(text) } }

        let same = try await Self.hostActivity(short)
        #expect(await media.location(for: same) == directory.appendingPathComponent("short.webm").path)
        #expect(warnings.withLock { $0 }.isEmpty)

        let different = try await Self.hostActivity(countdown)
        #expect(await media.location(for: different) == directory.appendingPathComponent("countdown.webm").path)
        #expect(warnings.withLock { $0 }.last?.contains("you may not be watching the same thing") == true)

        // Missing here: its fallback URL, said so; without one, the path that fails to load, with what to do.
        let elsewhere = directory.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let bare = QueueMedia(directory: elsewhere.path)
        bare.onWarning { text in warnings.withLock { $0.append(text) } }
        let withFallback = try await Self.hostActivity(short, fallback: "https://example.com/short.webm")
        #expect(await bare.location(for: withFallback) == "https://example.com/short.webm")
        #expect(warnings.withLock { $0 }.last?.contains("playing it from https://example.com/short.webm") == true)
        let without = try await Self.hostActivity(countdown)
        #expect(await bare.location(for: without) == elsewhere.appendingPathComponent("countdown.webm").path)
        #expect(warnings.withLock { $0 }.last?.contains("no fallback URL") == true)

        // Registered items (the host's own files) are taken as they are, without a look at the directory.
        bare.register(itemID: without.itemID, location: countdown)
        #expect(await bare.location(for: without) == countdown)
    }

    @Test("the status line says which item of the queue plays")
    func statusLine() {
        let envelope = ActivityEnvelope(activityIdentifier: "x", metadata: .init(title: "A"), payload: Data(), itemID: "a")
        var status = PeerStatus(timeline: nil, position: nil, expected: nil, duration: nil, others: [], clockOffset: nil,
                                errorBound: nil, roundTrip: nil)
        #expect(!status.line(names: [:]).contains("item"))
        status.queue = SessionQueue(entries: [QueueEntry(id: "q1", activity: envelope), QueueEntry(id: "q2", activity: envelope),
                                              QueueEntry(id: "q3", activity: envelope)], currentIndex: 1)
        #expect(status.line(names: [:]).contains("item 2 of 3"))
        // Where unreliable messages go shows beside the clock once the clock is known.
        status.errorBound = 50_000
        status.clockOffset = 0
        status.unreliablePath = .udp
        #expect(status.line(names: [:]).hasSuffix("│ udp"))
        status.unreliablePath = .tcp(reason: "no answer over UDP")
        #expect(status.line(names: [:]).hasSuffix("│ tcp"))
    }
}
