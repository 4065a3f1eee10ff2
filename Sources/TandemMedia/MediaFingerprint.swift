import TandemCrypto
import Foundation
import TandemCore

/// A content fingerprint of a local file, cheap enough for any size: lowercase hex SHA-256 of its size (decimal,
/// then a newline), its first 64 KiB and its last 64 KiB (a file of at most 64 KiB is hashed twice).
///
/// Peers compare fingerprints to notice that they loaded different cuts of "the same" film, so its definition
/// must never change: `MediaInfo.contentID` from every version of Tandem has to agree.
enum MediaFingerprint {
    /// How much of each end of the file is hashed.
    static let chunkSize = 64 * 1024

    /// The fingerprint of the file at `path`, nil when it cannot be opened.
    static func ofFile(atPath path: String) -> String? {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? file.close() }
        guard let size = try? file.seekToEnd() else { return nil }
        var hasher = SHA256()
        hasher.update(data: Data("\(size)\n".utf8))
        let chunk = UInt64(chunkSize)
        for start in [0, size > chunk ? size - chunk : 0] {
            guard (try? file.seek(toOffset: start)) != nil else { break }
            hasher.update(data: (try? file.read(upToCount: chunkSize)) ?? Data())
        }
        return SHA256Hex.hex(hasher.finalize())
    }
}

extension MediaProbe {
    /// The content fingerprint of the file at `path` (`contentID`), without probing it; nil when it cannot be read.
    package static func fingerprint(ofFile path: String) -> String? { MediaFingerprint.ofFile(atPath: path) }
}

extension MediaFingerprint {
    /// The fingerprint of the file behind an HTTP(S) URL that answers range requests (a host's shared item), from
    /// two of them: its first and last 64 KiB and the size its `Content-Range` gives. Nil when the server does not
    /// answer both within `timeout` seconds each (or speaks HTTPS: only plain HTTP is fetched here). Blocks: called on the player's queue, never on Swift's thread pool.
    ///
    /// A Tandem host says its fingerprint of the file in a `Tandem-Content-ID` header (`SharedMedia`): one byte is
    /// fetched first to read it, which on a slow link saves the two ranges (128 KiB: 1.5 s at 86 kB/s) before the
    /// player can open its own connection. Any other server costs that one round trip more.
    static func ofHTTP(_ uri: String, timeout: TimeInterval = 5) -> String? {
        guard let url = URL(string: uri) else { return nil }
        if let answer = HTTPRangeRequest.get(url, range: 0...0, timeout: timeout), answer.status == 206,
           let said = answer.header("tandem-content-id"), isFingerprint(said) {
            return said
        }
        guard let (head, size) = fetchRange(url, from: 0, timeout: timeout) else { return nil }
        let chunk = Int64(chunkSize)
        var tail = head
        if size > chunk {
            guard let (last, _) = fetchRange(url, from: size - chunk, timeout: timeout) else { return nil }
            tail = last
        }
        var hasher = SHA256()
        hasher.update(data: Data("\(size)\n".utf8))
        hasher.update(data: head)
        hasher.update(data: tail)
        return SHA256Hex.hex(hasher.finalize())
    }

    /// Whether `text` has the form of a fingerprint: 64 lowercase hex digits.
    static func isFingerprint(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Up to `chunkSize` bytes from `start`, and the whole file's size.
    private static func fetchRange(_ url: URL, from start: Int64, timeout: TimeInterval) -> (Data, Int64)? {
        guard let answer = HTTPRangeRequest.get(url, range: start...(start + Int64(chunkSize) - 1), timeout: timeout),
              answer.status == 206,
              let size = answer.header("content-range")?.split(separator: "/").last.flatMap({ Int64($0) }) else { return nil }
        return (answer.body, size)
    }
}
