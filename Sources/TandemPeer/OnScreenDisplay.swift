import Foundation

/// What the video shows on top of the picture: recent notices (joined, paused at, waiting for whom, chat lines,
/// a setting just changed), each for a few seconds, and the position and state line while it is asked for.
/// A value: the console feeds it and draws `text(now:status:)` on the player's overlay.
package struct OnScreenDisplay: Sendable {
    /// How long a notice stays on the picture.
    package static let noticeSeconds = 4.0
    /// The most notices shown at once (the oldest go first).
    package static let maximumLines = 4
    /// A notice is cut to this many characters on the picture.
    package static let maximumLineLength = 120

    private var lines: [(text: String, until: Double)] = []
    private var statusUntil: Double?

    package init() {}

    /// Shows `text` (one line; newlines become spaces) from `now` (seconds) for `noticeSeconds`.
    package mutating func post(_ text: String, now: Double) {
        var line = text.replacingOccurrences(of: "\n", with: " ")
        if line.count > Self.maximumLineLength { line = String(line.prefix(Self.maximumLineLength - 1)) + "…" }
        lines.removeAll { $0.until <= now }
        lines.append((line, now + Self.noticeSeconds))
        if lines.count > Self.maximumLines { lines.removeFirst(lines.count - Self.maximumLines) }
    }

    /// Shows the status line from `now` for `noticeSeconds`.
    package mutating func showStatus(now: Double) { statusUntil = now + Self.noticeSeconds }

    /// Whether the status line is on the picture at `now` (so it is worth working out).
    package func showsStatus(now: Double) -> Bool { statusUntil.map { now < $0 } ?? false }

    /// The text to draw at `now`: the status line first (when shown), then the notices still due; nil for none.
    package func text(now: Double, status: () -> String) -> String? {
        var shown: [String] = []
        if let statusUntil, now < statusUntil { shown.append(status()) }
        shown += lines.filter { $0.until > now }.map(\.text)
        return shown.isEmpty ? nil : shown.joined(separator: "\n")
    }
}
