import Foundation
import TandemCore

/// One subtitle cue: `text` is shown from `start` up to (not including) `end`.
public struct SubtitleCue: Sendable, Hashable {
    public var start: ItemTime
    public var end: ItemTime
    public var text: String

    public init(start: ItemTime, end: ItemTime, text: String) {
        self.start = start
        self.end = end
        self.text = text
    }
}

/// Reads subtitle files: SubRip (.srt), WebVTT (.vtt) and SubStation Alpha (.ssa/.ass, as plain text: styling
/// and positioning are dropped). Cues come back sorted by start, their text without markup.
public enum SubtitleFile {
    /// Files larger than this are refused (a feature film's subtitles are well under 1 MB).
    public static let maximumBytes = 8 << 20
    /// Cues beyond this many are refused.
    public static let maximumCues = 100_000
    /// A cue's text is cut to this many characters.
    public static let maximumCueLength = 1_000

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(PlaybackError) -> [SubtitleCue] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .noSuchFile(path: path)
        }
        if isDirectory.boolValue { throw .isDirectory(path: path) }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size <= maximumBytes else {
            throw .badSubtitles(path: path, detail: "larger than \(maximumBytes >> 20) MB")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .badSubtitles(path: path, detail: "cannot be read")
        }
        // UTF-8 (with or without a byte-order mark), else Latin-1, as older subtitle files often are.
        let text = String(data: data, encoding: .utf8) ?? String(decoding: data, as: Unicode.UTF8.self)
        do {
            return try parse(text)
        } catch {
            throw .badSubtitles(path: path, detail: error.description)
        }
    }

    /// Why a text is not subtitles.
    public struct ParseError: Error, CustomStringConvertible, Hashable {
        public let description: String
    }

    /// Parses SubRip, WebVTT or SubStation Alpha text (told apart by content, not by name).
    public static func parse(_ text: String) throws(ParseError) -> [SubtitleCue] {
        let normalised = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .replacingOccurrences(of: "\u{FEFF}", with: "")
        let isSSA = normalised.contains("[Script Info]") || normalised.contains("\nDialogue:")
            || normalised.hasPrefix("Dialogue:")
        var cues = isSSA ? try parseSSA(normalised) : try parseTimedBlocks(normalised)
        guard !cues.isEmpty else {
            throw ParseError(description: "no cues found — give a SubRip (.srt), WebVTT (.vtt) or SSA/ASS file")
        }
        guard cues.count <= maximumCues else { throw ParseError(description: "more than \(maximumCues) cues") }
        cues.sort { $0.start < $1.start }
        return cues
    }

    /// SubRip and WebVTT: blocks whose timing line is `start --> end`.
    static func parseTimedBlocks(_ text: String) throws(ParseError) -> [SubtitleCue] {
        var cues: [SubtitleCue] = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var i = 0
        while i < lines.count {
            let line = lines[i]
            guard line.contains("-->") else { i += 1; continue }
            let parts = line.components(separatedBy: "-->")
            let startText = parts[0].trimmingCharacters(in: .whitespaces)
            // WebVTT puts cue settings after the end time.
            let endText = parts[1].trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
            guard let start = timestamp(startText), let end = timestamp(endText) else {
                throw ParseError(description: "line \(i + 1): cannot read the timing '\(line)'")
            }
            i += 1
            var body: [Substring] = []
            while i < lines.count, !lines[i].trimmingCharacters(in: .whitespaces).isEmpty {
                body.append(lines[i])
                i += 1
            }
            let cueText = clean(body.joined(separator: "\n"), tags: .angle)
            if end > start, !cueText.isEmpty { cues.append(SubtitleCue(start: start, end: end, text: cueText)) }
            if cues.count > maximumCues { break }
        }
        return cues
    }

    /// SubStation Alpha: `Dialogue:` lines in the field order of the `[Events]` section's `Format:` line.
    static func parseSSA(_ text: String) throws(ParseError) -> [SubtitleCue] {
        var fields = ["Layer", "Start", "End", "Style", "Name", "MarginL", "MarginR", "MarginV", "Effect", "Text"]
        var cues: [SubtitleCue] = []
        var inEvents = false
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") { inEvents = line.lowercased() == "[events]"; continue }
            if inEvents, line.hasPrefix("Format:") {
                fields = line.dropFirst("Format:".count).split(separator: ",")
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                continue
            }
            guard line.hasPrefix("Dialogue:") else { continue }
            let values = line.dropFirst("Dialogue:".count).split(separator: ",", maxSplits: fields.count - 1,
                                                                  omittingEmptySubsequences: false)
            guard values.count == fields.count,
                  let startIndex = fields.firstIndex(of: "Start"), let endIndex = fields.firstIndex(of: "End"),
                  let textIndex = fields.firstIndex(of: "Text")
            else { throw ParseError(description: "line \(number + 1): a Dialogue line without its fields") }
            guard let start = timestamp(values[startIndex].trimmingCharacters(in: .whitespaces)),
                  let end = timestamp(values[endIndex].trimmingCharacters(in: .whitespaces))
            else { throw ParseError(description: "line \(number + 1): cannot read the times of '\(line)'") }
            let body = String(values[textIndex]).replacingOccurrences(of: "\\N", with: "\n")
                .replacingOccurrences(of: "\\n", with: "\n").replacingOccurrences(of: "\\h", with: " ")
            let cueText = clean(body, tags: .braces)
            if end > start, !cueText.isEmpty { cues.append(SubtitleCue(start: start, end: end, text: cueText)) }
            if cues.count > maximumCues { break }
        }
        return cues
    }

    /// `[[h:]m]m:ss[.,]fff` (SubRip, WebVTT) or `h:mm:ss.cc` (SSA) as item time.
    static func timestamp(_ text: String) -> ItemTime? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count) else { return nil }
        let secondsPart = parts[parts.count - 1].replacingOccurrences(of: ",", with: ".")
        let whole = secondsPart.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(whole.count), let seconds = Int64(whole[0]), (0..<60).contains(seconds),
              let minutes = Int64(parts[parts.count - 2]), (0..<60).contains(minutes) || parts.count == 2
        else { return nil }
        let hours = parts.count == 3 ? Int64(parts[0]) : 0
        guard let hours, (0..<1_000).contains(hours), minutes >= 0, minutes < 60_000 else { return nil }
        var fraction: Int64 = 0
        if whole.count == 2 {
            let digits = whole[1]
            guard !digits.isEmpty, digits.count <= 9, let value = Int64(digits) else { return nil }
            fraction = value * Int64(pow(10.0, Double(9 - digits.count)))
        }
        return ItemTime(nanoseconds: ((hours * 60 + minutes) * 60 + seconds) * 1_000_000_000 + fraction)
    }

    enum Tags { case angle, braces }

    /// Drops markup (`<i>…</i>`, `<c.yellow>`, `{\an8}`), control characters and surrounding space.
    static func clean(_ text: String, tags: Tags) -> String {
        let (open, close): (Character, Character) = tags == .angle ? ("<", ">") : ("{", "}")
        var out = ""
        var depth = 0
        for character in text {
            if character == open { depth += 1; continue }
            if character == close, depth > 0 { depth -= 1; continue }
            if depth > 0 { continue }
            if character == "\n" || !(character.unicodeScalars.first.map { CharacterSet.controlCharacters.contains($0) } ?? false) {
                out.append(character)
            }
        }
        let trimmed = out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .joined(separator: "\n")
        return String(trimmed.prefix(maximumCueLength))
            .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">")
    }
}
