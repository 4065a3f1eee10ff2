import Foundation

/// A host's playlist file: one media path or URL a line.
package enum Playlist {
    /// Why a playlist cannot be used.
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// The paths `path` names, relative to the playlist's directory; blank lines and `#` comments skipped; at most
    /// `limit` (the session queue's bound) and the first MiB read.
    package static func read(_ path: String, limit: Int) throws(Problem) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw Problem(description: "cannot read the playlist \(path) — check the path and its permissions")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 1 << 20)) ?? Data()
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        let paths = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            .map { line in
                line.hasPrefix("/") || line.contains("://") ? line : base.appendingPathComponent(line).path
            }
        guard !paths.isEmpty else { throw Problem(description: "the playlist \(path) names no media — one path per line") }
        guard paths.count <= limit else {
            throw Problem(description: "the playlist \(path) names \(paths.count) items; a queue holds at most \(limit)")
        }
        return paths
    }
}
