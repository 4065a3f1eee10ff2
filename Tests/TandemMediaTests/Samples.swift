import Foundation
import TandemCore
import TandemMedia

/// Paths of the committed media samples and small helpers shared by the media tests.
enum Samples {
    static let directory: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("media-samples")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static var countdown: String { path("countdown.webm") }
    static var countdownOpus: String { path("countdown.opus") }
    static var short: String { path("short.webm") }
    static var notMedia: String { path("not-media.webm") }

    /// A scratch directory for files a test makes (truncated copies, folders).
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func headlessPlayer(localTimeModel: ClockMapping = .identity) throws -> GStreamerPlayer {
        try GStreamerPlayer(configuration: .headless, localTimeModel: localTimeModel)
    }
}

/// Sleeps without blocking a thread.
func sleep(ms: Int) async throws {
    try await Task.sleep(nanoseconds: UInt64(ms) * 1_000_000)
}

/// The median of some numbers.
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty)
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}
