import Foundation
import TandemCore
import TandemMedia
import TandemPeer

/// Paths of the committed media samples and small helpers shared by the media tests.
enum Samples {
    static let directory: URL = TandemPeer.Samples.directory!

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static var countdown: String { path("countdown.webm") }
    static var countdownOpus: String { path("countdown.opus") }
    static var short: String { path("short.webm") }
    static var notMedia: String { path("not-media.webm") }

    /// A scratch directory for files a test makes (truncated copies, folders); the test removes it when done
    /// (`defer { Samples.remove(dir) }`).
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Removes a scratch directory (or the one holding a scratch file).
    static func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    static func headlessPlayer(localTimeModel: ClockMapping = .identity) throws -> GStreamerPlayer {
        try GStreamerPlayer(configuration: .headless, localTimeModel: localTimeModel)
    }
}

/// Sleeps without blocking a thread.
func sleep(ms: Int) async throws {
    try await Task.sleep(nanoseconds: UInt64(ms) * 1_000_000)
}

/// The video frames the player rendered since the last drain, each with when it was rendered (monotonic ns) and how
/// late it came (ms) against `due`, the monotonic time at which it should have been rendered.
func videoLateness(_ player: GStreamerPlayer, due: (RenderRecord) -> Int64) -> [(at: Int64, ms: Double)] {
    player.renderProbe.drain().filter { $0.kind == .video }.map { ($0.monotonicTime, Double($0.monotonicTime - due($0)) / 1e6) }
}

/// Lateness before `changedAt`, and after it once a change has had `settle` ns to take effect.
func split(_ lateness: [(at: Int64, ms: Double)], at changedAt: Int64,
           settle: Int64 = TimeSpan.milliseconds(300).nanoseconds) -> (before: [Double], after: [Double]) {
    (lateness.filter { $0.at < changedAt }.map(\.ms), lateness.filter { $0.at > changedAt + settle }.map(\.ms))
}

/// The median of some numbers.
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty)
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}
