import Foundation
import Tandem

extension MediaProbe {
    /// The probe as pretty-printed JSON with sorted keys (`tandem probe --json`).
    package func prettyJSON() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The human-readable report.
    package var report: String {
        var lines = [location]
        if let title = title { lines.append("  title:     \(title)") }
        if let container = container { lines.append("  container: \(container)") }
        let duration = self.duration.map { String(format: "%.3f s", $0.seconds) } ?? "unknown"
        lines.append("  duration:  \(duration)")
        lines.append("  seekable:  \(isSeekable ? "yes" : "no")")
        for (index, stream) in streams.enumerated() {
            var parts = [stream.codec]
            if let width = stream.width, let height = stream.height { parts.append("\(width)x\(height)") }
            if let fps = stream.frameRate { parts.append(String(format: "%g fps", fps)) }
            if let channels = stream.channels { parts.append("\(channels) ch") }
            if let rate = stream.sampleRate { parts.append("\(rate) Hz") }
            if let bitrate = stream.bitrate { parts.append("\(bitrate / 1000) kb/s") }
            var line = "  stream \(index): \(stream.kind.rawValue) — \(parts.joined(separator: ", "))"
            if let track = stream.track {
                line += " — \(stream.kind == .audio ? "audio" : "subtitle") track \(track)"
                if let language = stream.language { line += " (\(language))" }
            }
            lines.append(line)
        }
        let audio = streams.filter { $0.kind == .audio }.count
        let subtitles = streams.filter { $0.kind == .subtitle }.count
        if audio > 1 || subtitles > 0 {
            lines.append("  choose with --audio-track N (1 to \(audio))"
                         + (subtitles > 0 ? " and --sub-track N (1 to \(subtitles))" : ""))
        }
        return lines.joined(separator: "\n")
    }
}
