import ArgumentParser
import Foundation
import Tandem

/// `tandem probe FILE`: what GStreamer finds in a media file — duration, streams, codecs.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show a media file's duration, streams and codecs.",
        discussion: """
            Reads FILE (a path, file://, http:// or https:// URI) with GStreamer and prints its duration, whether \
            it can be seeked, and each stream's codec and format.

            Exit codes: 0 on success; 3 when FILE is missing, a directory, not media, truncated, needs a plugin \
            that is not installed, or cannot be reached (one line on standard error says which and what to do); \
            1 for other failures.
            """
    )

    /// Exit code for input files Tandem cannot use.
    static let badInputExitCode: Int32 = 3

    @Argument(help: "The media file or URI to probe.")
    var file: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        let probe: MediaProbe
        do {
            probe = try await MediaProbe.probe(file)
        } catch {
            FileHandle.standardError.write(Data("tandem: \(error.description)\n".utf8))
            switch error {
            case .engineFailure: throw ExitCode.failure
            default: throw ExitCode(Self.badInputExitCode)
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(probe), as: UTF8.self))
        } else {
            print(Self.describe(probe))
        }
    }

    /// The human-readable report.
    static func describe(_ probe: MediaProbe) -> String {
        var lines = [probe.location]
        if let title = probe.title { lines.append("  title:     \(title)") }
        if let container = probe.container { lines.append("  container: \(container)") }
        let duration = probe.duration.map { String(format: "%.3f s", Double($0) / 1e9) } ?? "unknown"
        lines.append("  duration:  \(duration)")
        lines.append("  seekable:  \(probe.isSeekable ? "yes" : "no")")
        for (index, stream) in probe.streams.enumerated() {
            var parts = [stream.codec]
            if let width = stream.width, let height = stream.height { parts.append("\(width)x\(height)") }
            if let fps = stream.frameRate { parts.append(String(format: "%g fps", fps)) }
            if let channels = stream.channels { parts.append("\(channels) ch") }
            if let rate = stream.sampleRate { parts.append("\(rate) Hz") }
            if let bitrate = stream.bitrate { parts.append("\(bitrate / 1000) kb/s") }
            lines.append("  stream \(index): \(stream.kind.rawValue) — \(parts.joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }
}
