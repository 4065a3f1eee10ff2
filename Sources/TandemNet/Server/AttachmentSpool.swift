import TandemCrypto
import Foundation
import TandemCore

#if canImport(Glibc)
import Glibc
#endif

/// Journal attachments kept in files instead of the server's memory: one private directory (mode 0700) per server
/// process under a spool root, one directory per session in it, one file per attachment, written as its chunks
/// arrive and read back only when a late joiner's or a fetcher's socket can take the bytes.
///
/// A session's directory goes when the session ends; a server's directory goes when it stops, and what a server
/// that is gone (a crash, `kill -9`) left under the root is removed when the next one starts.
final class AttachmentSpool: Sendable {
    /// This server's own directory (ROOT/PID).
    let directory: String

    /// Opens the spool under `root` (created 0700 if missing; refused when it belongs to another user or others
    /// may write to it), removing what servers that are no longer running left there.
    /// `kept`: the root itself is the server's directory and outlives the process (`tandem serve --state-dir`,
    /// whose store names each session's directory; `removeUnused(keeping:)` clears the rest).
    static func open(root: String, kept: Bool = false) throws(SessionServerError) -> AttachmentSpool {
        var info = stat()
        if Glibc.mkdir(root, 0o700) != 0, errno != EEXIST {
            throw .spool("cannot create \(root): \(String(cString: strerror(errno)))")
        }
        guard lstat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw .spool("\(root) is not a directory")
        }
        guard info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw .spool("\(root) must belong to this user and not be writable by others (chmod 700 \(root))")
        }
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            guard let pid = Int32(entry), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: root + "/" + entry)
        }
        if kept { return AttachmentSpool(directory: root) }
        let directory = root + "/\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        guard Glibc.mkdir(directory, 0o700) == 0 else {
            throw .spool("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        return AttachmentSpool(directory: directory)
    }

    private init(directory: String) {
        self.directory = directory
    }

    /// A directory of its own for one session.
    func session(_ id: String) -> SessionSpool {
        let name = SHA256Hex.hex(SHA256.hash(data: Data(id.utf8))).prefix(32) + "-" + UUID().uuidString.prefix(8)
        return SessionSpool(directory: directory + "/" + name)
    }

    /// The directory of a session restored after a restart, by its name (`SessionSpool.name`).
    func session(named name: String) -> SessionSpool? {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else { return nil }
        return SessionSpool(directory: directory + "/" + name)
    }

    /// Removes every session directory but those named (left by sessions that ended while nobody kept them).
    func removeUnused(keeping names: Set<String>) {
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where !names.contains(entry) {
            try? FileManager.default.removeItem(atPath: directory + "/" + entry)
        }
    }

    /// Removes this server's directory and everything in it.
    func removeAll() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Bytes in this server's spool files (for tests and the operator).
    var bytesOnDisk: Int64 {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return 0 }
        var total: Int64 = 0
        while let path = walker.nextObject() as? String {
            var info = stat()
            if lstat(directory + "/" + path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total += Int64(info.st_size) }
        }
        return total
    }
}

/// One session's attachment files. Used on the session's loop; reads may come from any loop (files are opened per
/// call, so nothing is shared but the path).
final class SessionSpool: Sendable {
    let directory: String
    /// The directory's name in the spool.
    var name: String { String(directory.split(separator: "/").last ?? "") }

    fileprivate init(directory: String) {
        self.directory = directory
    }

    private func path(of attachment: String) -> String {
        directory + "/" + SHA256Hex.hex(SHA256.hash(data: Data(attachment.utf8)))
    }

    /// Writes `bytes` at `offset` of `attachment`'s file (created on the first write).
    func write(_ bytes: Data, attachment: String, offset: Int64) throws(SessionServerError) {
        if offset == 0, Glibc.mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw .spool("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let fd = Glibc.open(path(of: attachment), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .spool("cannot open a spool file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else {
            throw .spool("cannot write a spool file: \(written < 0 ? String(cString: strerror(errno)) : "short write")")
        }
    }

    /// Reads `length` bytes at `offset` of `attachment`'s file; nil when it is gone or shorter.
    func read(attachment: String, offset: Int64, length: Int) -> Data? {
        let fd = Glibc.open(path(of: attachment), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = Data(count: length)
        let read = data.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(offset)) }
        return read == length ? data : nil
    }

    func remove(attachment: String) {
        unlink(path(of: attachment))
    }

    func removeAll() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
