import Foundation
import Synchronization
import Tandem
import Testing
import TandemPeer

/// How a Syncplay room's playlist entries are found here: file names (and paths, by their file name) in the media
/// directories, http(s) URLs as URLs, and nothing outside the directories, whatever the room sends.
@Suite("Media directories for a Syncplay room's playlist", .serialized)
struct MediaDirectoriesTests {
    /// Two directories under a temporary one, with `outside.webm` beside them (where no entry may reach).
    static func layout() throws -> (root: URL, first: URL, second: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("media-dirs-\(UUID().uuidString)")
        let first = root.appendingPathComponent("first"), second = root.appendingPathComponent("second")
        for directory in [first, second, first.appendingPathComponent("sub.webm")] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let sample = try Samples.path("short.webm")
        try FileManager.default.copyItem(atPath: sample, toPath: first.appendingPathComponent("a.webm").path)
        try FileManager.default.copyItem(atPath: sample, toPath: second.appendingPathComponent("b.webm").path)
        try FileManager.default.copyItem(atPath: sample, toPath: second.appendingPathComponent("a.webm").path)
        try FileManager.default.copyItem(atPath: sample, toPath: root.appendingPathComponent("outside.webm").path)
        return (root, first, second)
    }

    @Test("names are found in the directories in order; URLs stay URLs; a directory or an absent name is missing")
    func resolving() throws {
        let (root, first, second) = try Self.layout()
        defer { try? FileManager.default.removeItem(at: root) }
        let directories = MediaDirectories([first.path, second.path, first.path + "/"])
        #expect(directories.paths == [first.path, second.path], "repeats are dropped")
        #expect(directories.resolve("a.webm") == .file(first.appendingPathComponent("a.webm").path))
        #expect(directories.resolve("b.webm") == .file(second.appendingPathComponent("b.webm").path))
        #expect(directories.resolve("sub.webm") == .missing, "a directory is not a file")
        #expect(directories.resolve("c.webm") == .missing)
        #expect(directories.resolve("https://example.com/films/c.webm") == .url("https://example.com/films/c.webm"))
        #expect(directories.described == "\(first.path) or \(second.path)")
        let besides = MediaDirectories(besides: first.appendingPathComponent("a.webm").path, mediaDirectories: [second.path])
        #expect(besides.paths == [first.path, second.path])
    }

    @Test("a path in the room's playlist (Syncplay 1.6 lists its command line's file as given) is found by its file name in the directories")
    func paths() throws {
        let (root, first, second) = try Self.layout()
        defer { try? FileManager.default.removeItem(at: root) }
        let directories = MediaDirectories([first.path, second.path])
        #expect(directories.resolve("/home/bob/Videos/a.webm") == .file(first.appendingPathComponent("a.webm").path))
        #expect(directories.resolve("C:\\Users\\bob\\b.webm") == .file(second.appendingPathComponent("b.webm").path))
        #expect(directories.resolve("films/b.webm") == .file(second.appendingPathComponent("b.webm").path))
        #expect(directories.resolve("/home/bob/Videos/c.webm") == .missing)
        #expect(directories.resolve("/home/bob/Videos/") == .refused("an empty name"))
        #expect(MediaDirectories.fileName(of: "/home/bob/a.webm") == "a.webm")
        #expect(MediaDirectories.fileName(of: "D:\\a.webm") == "a.webm")
        #expect(MediaDirectories.fileName(of: "a.webm") == "a.webm")
        #expect(MediaDirectories.fileName(of: "https://example.com/films/a.webm") == "https://example.com/films/a.webm")
    }

    @Test("hostile entries never name a file outside the directories: traversal, absolute paths, control characters, other schemes")
    func hostileNames() throws {
        let (root, first, second) = try Self.layout()
        defer { try? FileManager.default.removeItem(at: root) }
        let directories = MediaDirectories([first.path, second.path])
        // Paths are looked up by their last name, in the directories only: outside.webm, beside them, is never found.
        let hostile = ["../outside.webm", "../../etc/passwd", "/etc/passwd", root.appendingPathComponent("outside.webm").path,
                       "..", ".", "", "sub.webm/../../outside.webm", "..\\outside.webm", "a.webm\u{0}", "a\u{1b}[2J.webm",
                       "/films/..", "films/.", "C:\\..", String(repeating: "x", count: 300), "file:///etc/passwd",
                       "file://" + root.path + "/outside.webm", "smb://host/share/a.webm", "http://"]
        for entry in hostile {
            switch directories.resolve(entry) {
            case .refused, .missing: continue
            case let resolution: Issue.record("\(entry.debugDescription) resolved to \(resolution)")
            }
        }
        for entry in ["..", ".", "", "/films/..", "C:\\..", "a\u{1b}[2J.webm", "file:///etc/passwd", "http://"] {
            guard case .refused = directories.resolve(entry) else {
                Issue.record("\(entry.debugDescription) is not refused")
                continue
            }
        }
        #expect(MediaDirectories.problem(with: "Film (2019) – ünïcode.mkv") == nil)
    }

    @Test("the queue of a room's session finds its items in the directories; a missing or refused one plays nothing, with what to do")
    func queueMedia() async throws {
        let (root, first, second) = try Self.layout()
        defer { try? FileManager.default.removeItem(at: root) }
        let media = QueueMedia(directories: MediaDirectories([first.path, second.path]))
        let warnings = Mutex<[String]>([])
        media.onWarning { text in warnings.withLock { $0.append(text) } }
        func envelope(_ name: String) throws -> ActivityEnvelope {
            try MediaActivity(metadata: GroupActivityMetadata(title: name), fileName: name).envelope(itemID: name)
        }
        #expect(await media.location(for: try envelope("b.webm")) == second.appendingPathComponent("b.webm").path)
        #expect(warnings.withLock { $0 }.isEmpty)
        #expect(await media.location(for: try envelope("missing.webm")) == "")
        #expect(warnings.withLock { $0 }.last?.contains("missing.webm is not in \(first.path) or \(second.path) — put a copy") == true,
                "\(warnings.withLock { $0 })")
        #expect(await media.location(for: try envelope("../outside.webm")) == "")
        #expect(warnings.withLock { $0 }.last?.contains("outside.webm is not in \(first.path) or \(second.path)") == true,
                "\(warnings.withLock { $0 })")
        #expect(await media.location(for: try envelope("/films/..")) == "")
        #expect(warnings.withLock { $0 }.last?.contains("is not played: not a file name") == true, "\(warnings.withLock { $0 })")
        // A path the room lists is played from the directories, by its name.
        #expect(await media.location(for: try envelope("/home/bob/a.webm")) == first.appendingPathComponent("a.webm").path)
        // A copy put there later is found: a missing entry is not remembered as missing.
        try FileManager.default.copyItem(atPath: second.appendingPathComponent("b.webm").path,
                                         toPath: second.appendingPathComponent("missing.webm").path)
        #expect(await media.location(for: try envelope("missing.webm")) == second.appendingPathComponent("missing.webm").path)
    }
}
