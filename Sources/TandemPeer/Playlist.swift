import Foundation
import Tandem

/// A host's playlist file: one media path or URL a line.
package enum Playlist {
    /// The paths `path` names, relative to the playlist's directory; blank lines and `#` comments skipped; at most
    /// `limit` (by default the session queue's bound) and the first MiB read.
    package static func read(_ path: String, limit: Int = AuthorityConfiguration().queue.maxEntries) throws(PeerFailure) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PeerFailure(.usage, "cannot read the playlist \(path) — check the path and its permissions")
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
        guard !paths.isEmpty else { throw PeerFailure(.usage, "the playlist \(path) names no media — one path per line") }
        guard paths.count <= limit else {
            throw PeerFailure(.usage, "the playlist \(path) names \(paths.count) items; a queue holds at most \(limit)")
        }
        return paths
    }
}

/// A relay's session-creation token, kept in a file (`--create-token-file`).
package enum CreateToken {
    /// The file's content, trimmed; an unreadable or empty file is a problem that says so.
    package static func read(_ path: String) throws(PeerFailure) -> String {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw PeerFailure(.usage, "--create-token-file: cannot read \(path)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw PeerFailure(.usage, "--create-token-file: \(path) is empty") }
        return token
    }
}
