import Crypto
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
