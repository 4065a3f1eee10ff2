import Foundation

/// Where a Syncplay room's playlist entries are found here, as Syncplay's own clients find them in their media
/// directories: a file name is looked up in each directory in turn; an http(s) URL is played from the URL. An entry
/// that is a path (Syncplay 1.6 puts the file given on its command line in the playlist as it was given, e.g.
/// `/home/bob/movie.webm` or `C:\Films\movie.webm`) is looked up by its file name, as Syncplay's GUI lists it.
/// Entries come from the network: only that last name is ever used (and refused when it is not a plain file name:
/// `..`, control characters), so no entry ever names a file outside these directories.
package struct MediaDirectories: Sendable, Equatable {
    /// The most directories searched, and the longest file name accepted (bytes, as Linux allows).
    package static let maxDirectories = 16
    package static let maxNameBytes = 255

    /// Absolute, standardized, without repeats, in the order given.
    package let paths: [String]

    package enum Resolution: Sendable, Equatable {
        /// A regular file in one of the directories.
        case file(String)
        /// An http or https URL, played from there.
        case url(String)
        /// A plain file name that none of the directories holds.
        case missing
        /// Not a plain file name or a URL the player opens; why.
        case refused(String)
    }

    package init(_ directories: [String]) {
        var paths: [String] = []
        for directory in directories {
            let path = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL.path
            if !paths.contains(path), paths.count < Self.maxDirectories { paths.append(path) }
        }
        self.paths = paths
    }

    /// The directory of `file`, then `mediaDirectories`.
    package init(besides file: String, mediaDirectories: [String]) {
        self.init([URL(fileURLWithPath: file).deletingLastPathComponent().path] + mediaDirectories)
    }

    /// "/home/ann/Videos or /media/films", for messages.
    package var described: String {
        paths.count <= 1 ? (paths.first ?? ".") : paths.dropLast().joined(separator: ", ") + " or " + paths.last!
    }

    /// Whether `entry` names an http(s) URL rather than a file.
    package static func isURL(_ entry: String) -> Bool { entry.contains("://") }

    /// The file name an entry names: its last path component (after `/` or `\`), or the entry itself when it is a
    /// plain name. A path that ends in a separator names no file (empty).
    package static func fileName(of entry: String) -> String {
        guard !isURL(entry), let separator = entry.lastIndex(where: { $0 == "/" || $0 == "\\" }) else { return entry }
        return String(entry[entry.index(after: separator)...])
    }

    /// Why `name` is not a plain file name, or nil when it is one.
    package static func problem(with name: String) -> String? {
        if name.isEmpty { return "an empty name" }
        if name.utf8.count > maxNameBytes { return "a name longer than \(maxNameBytes) bytes" }
        if name == "." || name == ".." { return "not a file name" }
        if name.contains("/") || name.contains("\\") { return "a path, not a file name" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "control characters" }
        return nil
    }

    /// Where `entry` (a playlist entry from the room) is here.
    package func resolve(_ entry: String) -> Resolution {
        if Self.isURL(entry) {
            guard let url = URL(string: entry), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  url.host?.isEmpty == false else {
                return .refused("only http and https URLs are played")
            }
            return .url(entry)
        }
        let name = Self.fileName(of: entry)
        if let problem = Self.problem(with: name) { return .refused(problem) }
        for directory in paths {
            let candidate = URL(fileURLWithPath: directory, isDirectory: true).appendingPathComponent(name).standardizedFileURL.path
            // A plain name cannot leave the directory; checked again so that nothing else ever can.
            guard candidate.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/") else { continue }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue {
                return .file(candidate)
            }
        }
        return .missing
    }
}
