import Foundation
import Logging
import Synchronization
import TandemCore
import TandemNet

#if canImport(Glibc)
import Glibc
#endif

/// A relay's sessions in SQLite (`tandem serve --state-dir DIR`): one row per live session in DIR/relay.sqlite,
/// its `StoredSession` as JSON, replaced in place at each change and deleted when the session ends, so the file
/// holds at most `--max-sessions` rows, each bounded as the session's welcome is.
///
/// Writes are synchronous (the server keeps a change before it tells peers of it) in WAL mode with
/// `synchronous = NORMAL`: a committed write survives the process dying (`kill -9`, a crash), the last ones may
/// not survive the machine losing power. Session times are `CLOCK_MONOTONIC`, which a reboot restarts: sessions
/// kept before one are dropped (the kernel's boot id is kept beside them).
public final class RelayStateStore: SessionStateStore {
    /// The layout of the database; another one is refused with what to do.
    static let schemaVersion = 1
    public let directory: String
    public var path: String { directory + "/" + Self.fileName }
    static let fileName = "relay.sqlite"
    /// The connection, used by one thread at a time, and each session's record as last written: an input that
    /// changed nothing (a refused request) writes nothing.
    private let state: Mutex<(database: SQLiteDatabase, written: [String: Data])>
    private let logger: Logger

    /// Opens (or creates) the state in `directory`, which must be private: created 0700 if missing, refused when it
    /// belongs to another user or others may write to it.
    public init(directory: String, logger: Logger = Logger(label: "tandem.state")) throws(SessionStateError) {
        try Self.checkPrivateDirectory(directory)
        self.directory = directory
        self.logger = logger
        let path = directory + "/" + Self.fileName
        // Created 0600 before SQLite opens it: its -wal and -shm files take the database's mode.
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.unreadable(path, String(cString: strerror(errno))) }
        fchmod(fd, 0o600)
        close(fd)
        do {
            let database = try SQLiteDatabase(path: path)
            try database.transaction {
                try database.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
                try database.execute("CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY NOT NULL, record BLOB NOT NULL)")
                let version = try database.rows("SELECT value FROM meta WHERE key = 'schema'").first?.first?.text
                if let version, version != String(Self.schemaVersion) {
                    throw SessionStateError("\(path) has state of another layout (\(version)); "
                        + "a different version of tandem wrote it. Start that version, or move the file away "
                        + "(mv \(path) \(path).old) to start with no sessions")
                }
                try database.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)",
                                     [.text(String(Self.schemaVersion))])
            }
            state = Mutex((database: database, written: [:]))
        } catch let error as SessionStateError {
            throw error
        } catch {
            throw Self.unreadable(path, "\(error)")
        }
    }

    public func storedSessions() throws(SessionStateError) -> [StoredSession] {
        let boot = Self.bootID
        do {
            return try state.withLock { state in
                let database = state.database
                return try database.transaction { () throws -> [StoredSession] in
                    let keptBoot = try database.rows("SELECT value FROM meta WHERE key = 'boot'").first?.first?.text
                    try database.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot', ?)", [.text(boot)])
                    if let keptBoot, keptBoot != boot {
                        let dropped = try database.rows("SELECT count(*) FROM sessions").first?.first?.integer ?? 0
                        try database.execute("DELETE FROM sessions")
                        if dropped > 0 {
                            logger.warning("the machine restarted since these sessions were kept; their times no longer hold, so they are dropped",
                                           metadata: ["sessions": "\(dropped)"])
                        }
                        return []
                    }
                    var sessions: [StoredSession] = []
                    let decoder = JSONDecoder()
                    for row in try database.rows("SELECT id, record FROM sessions ORDER BY id") {
                        let id = row[0].text ?? ""
                        do {
                            guard let record = row[1].data else { throw SessionStateError("the record is not a blob") }
                            sessions.append(try decoder.decode(StoredSession.self, from: record))
                        } catch {
                            // A row another version wrote: that session cannot continue here.
                            logger.error("a kept session cannot be read; it is dropped",
                                         metadata: ["session": "\(id)", "error": "\(error)"])
                            try database.execute("DELETE FROM sessions WHERE id = ?", [.text(id)])
                        }
                    }
                    return sessions
                }
            }
        } catch {
            throw Self.unreadable(path, "\(error)")
        }
    }

    public func keep(_ session: StoredSession) throws(SessionStateError) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let record = try encoder.encode(session)
            try state.withLock { state in
                if state.written[session.id] == record { return }
                try state.database.execute("""
                    INSERT INTO sessions (id, record) VALUES (?, ?)
                    ON CONFLICT(id) DO UPDATE SET record = excluded.record
                    """, [.text(session.id), .blob(record)])
                state.written[session.id] = record
            }
        } catch {
            throw SessionStateError("cannot write \(path): \(error)")
        }
    }

    public func forget(session id: String) throws(SessionStateError) {
        do {
            try state.withLock { state in
                try state.database.execute("DELETE FROM sessions WHERE id = ?", [.text(id)])
                state.written[id] = nil
            }
        } catch {
            throw SessionStateError("cannot write \(path): \(error)")
        }
    }

    /// Sessions kept now (for tests and the operator).
    public var sessionCount: Int {
        state.withLock { state in
            (try? state.database.rows("SELECT count(*) FROM sessions").first?.first?.integer).flatMap { $0 }.map(Int.init) ?? 0
        }
    }

    /// This boot of the machine (`CLOCK_MONOTONIC` restarts with it).
    static var bootID: String {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func unreadable(_ path: String, _ detail: String) -> SessionStateError {
        SessionStateError("cannot read the relay's state in \(path) (\(detail)). Move it away to start with no "
            + "sessions (mv \(path) \(path).broken; also any \(path)-wal and \(path)-shm beside it), or restore a backup")
    }

    /// Creates `directory` 0700 if missing; refuses one that is not a directory, belongs to another user or that
    /// others may write to; takes away others' read access (sessions' keys are in it).
    static func checkPrivateDirectory(_ directory: String) throws(SessionStateError) {
        if Glibc.mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw SessionStateError("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw SessionStateError("\(directory) is not a directory")
        }
        guard info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw SessionStateError("\(directory) must belong to this user and not be writable by others "
                + "(chmod 700 \(directory))")
        }
        if info.st_mode & 0o077 != 0, chmod(directory, 0o700) != 0 {
            throw SessionStateError("cannot make \(directory) private (chmod 700 \(directory)): \(String(cString: strerror(errno)))")
        }
    }
}

extension ServerConfiguration {
    /// Keeps the server's sessions in `directory` (`relay.sqlite`, made private) so that they survive a restart, and
    /// spools attachments under it (`directory/spool`) instead of `spoolDirectory`.
    public mutating func keepState(in directory: String, logger: Logger = Logger(label: "tandem.state")) throws(SessionStateError) {
        stateStore = try RelayStateStore(directory: directory, logger: logger)
        spoolDirectory = directory + "/spool"
    }
}
