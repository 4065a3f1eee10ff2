import Foundation
import Testing

/// The activity's metadata, the host's preview image and app notices, across real `tandem` processes.
@Suite("Metadata, preview images and notices across processes", .serialized)
struct MetadataProcessTests {
    static func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-meta-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test("joiners see the type and fallback URL, receive the preview image as a file, and read the host's notice")
    func previewAndNotices() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data((0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let pngPath = dir.appendingPathComponent("poster.png")
        try png.write(to: pngPath)
        let host = try SessionProcessTests.host(["--preview", pngPath.path, "--fallback-url", "https://example.org/countdown.webm"])
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)

        // A person's view: the header names the type and where to get the media, and where the preview went.
        let bobDir = dir.appendingPathComponent("bob")
        try FileManager.default.createDirectory(at: bobDir, withIntermediateDirectories: true)
        let bob = try TandemProcess(["join", SessionProcessTests.sample, "--headless", "--name", "bob",
                                     "--preview-dir", bobDir.path], environment: ["TANDEM_INVITE": invite])
        defer { bob.stop() }
        #expect(await bob.wait(for: 30) { $0.stdout.contains("Preview image: ") }, "bob: \(bob.stdout) \(bob.stderr)")
        #expect(bob.stdout.contains("Type: watchTogether · get it from https://example.org/countdown.webm"))
        let saved = try FileManager.default.contentsOfDirectory(atPath: bobDir.path).filter { $0.hasSuffix(".png") }
        #expect(saved.count == 1)
        #expect(FileManager.default.contents(atPath: bobDir.appendingPathComponent(saved.first ?? "-").path) == png)

        // A script's view: the full metadata and the preview as events.
        let carolDir = dir.appendingPathComponent("carol")
        try FileManager.default.createDirectory(at: carolDir, withIntermediateDirectories: true)
        let carol = try TandemProcess(["join", SessionProcessTests.sample, "--headless", "--json",
                                       "--name", "carol", "--preview-dir", carolDir.path], environment: ["TANDEM_INVITE": invite])
        defer { carol.stop() }
        let activity = await carol.event("activity", within: 30)
        #expect(activity?["fallbackURL"]?.string == "https://example.org/countdown.webm")
        #expect(activity?["type"]?.string == "watchTogether")
        #expect(activity?["activityIdentifier"]?.string == "org.tandem.media")
        let preview = await carol.event("preview", within: 30)
        #expect(preview?["format"]?.string == "png")
        #expect(preview?["bytes"]?.number == Double(png.count))
        #expect(FileManager.default.contents(atPath: preview?["path"]?.string ?? "-") == png)

        // The host's notice reaches both, as an app notice.
        host.send("notice popcorn time")
        let notice = await carol.event("notice", within: 15) { $0["kind"]?.string == "app" }
        #expect(notice?["text"]?.string == "popcorn time")
        #expect(await bob.wait(for: 15) { $0.stdout.contains("popcorn time") })
    }

    @Test("a preview that is not an image, or too large, is refused with a clear error before anything starts")
    func badPreviews() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = dir.appendingPathComponent("notes.png")
        try Data("just text".utf8).write(to: text)
        let notImage = try SessionProcessTests.host(["--preview", text.path])
        defer { notImage.stop() }
        #expect(await notImage.exitCode(within: 20) == 64)
        #expect(notImage.stderr.contains("not a PNG, JPEG, GIF or WebP image"), "\(notImage.stderr)")

        let big = dir.appendingPathComponent("big.png")
        try (Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(count: 300 * 1024)).write(to: big)
        let tooBig = try SessionProcessTests.host(["--preview", big.path])
        defer { tooBig.stop() }
        #expect(await tooBig.exitCode(within: 20) == 64)
        #expect(tooBig.stderr.contains("256 KiB"), "\(tooBig.stderr)")
    }
}
