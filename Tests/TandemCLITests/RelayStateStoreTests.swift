import Foundation
import TandemCore
import TandemNet
@testable import TandemRelayState
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The relay's SQLite store on its own: modes, bounds, a reboot, and what a write costs.
@Suite("Relay state store (SQLite)", .serialized)
struct RelayStateStoreTests {
    /// A session of `members` joined participants with an activity, as a relay would keep it.
    static func session(_ id: String, members: Int, change: Int = 0) -> StoredSession {
        let activity = ActivityEnvelope(activityIdentifier: "Movie", metadata: GroupActivityMetadata(title: "movie"),
                                        payload: Data("{}".utf8), itemID: "movie.mkv")
        var authority = SessionAuthority(sessionID: id, activity: activity, configuration: AuthorityConfiguration(),
                                         now: .seconds(1))
        for index in 0..<members {
            _ = authority.join(name: "member \(index)", prerollEstimate: .milliseconds(300), wantsHost: index == 0,
                               newReconnectToken: "token-\(index)-\(UUID().uuidString)", now: .seconds(2))
        }
        return StoredSession(id: id, key: Data(repeating: 7, count: 32), creator: "127.0.0.1", spoolName: "change-\(change)",
                             authority: authority.snapshot, accounted: [:])
    }

    static func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-store-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func bytes(of path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    @Test("kept sessions read back; rows are replaced in place and deleted when forgotten; the directory is made 0700, the files 0600")
    func keepsAndForgets() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/state"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        chmod(directory, 0o755)
        let store = try RelayStateStore(directory: directory)
        var info = stat()
        #expect(stat(directory, &info) == 0 && info.st_mode & 0o777 == 0o700, "others' read access is taken away")
        #expect(stat(store.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(store.path + "-wal", &info) != 0 || info.st_mode & 0o777 == 0o600)

        // 20 sessions of 16, each changed and written 100 times: 20 rows, however often they change.
        let sessions = (0..<20).map { Self.session("s\($0)", members: 16) }
        let changes = (0..<100).map { change in sessions.map { session in
            var changed = session
            changed.spoolName = "change-\(change)"
            return changed
        } }
        let started = ContinuousClock.now
        for round in changes { for session in round { try store.keep(session) } }
        let elapsed = ContinuousClock.now - started
        let perWrite = elapsed / 2000
        print("relay state: 2000 writes of a 16-member session (\(try JSONEncoder().encode(sessions[0]).count) bytes of JSON) took \(elapsed), \(perWrite) each")
        #expect(store.sessionCount == 20)
        let restored = try store.storedSessions()
        #expect(restored.map(\.id).sorted() == sessions.map(\.id).sorted())
        #expect(restored.first { $0.id == "s3" }?.key == Data(repeating: 7, count: 32))
        #expect(restored.first { $0.id == "s3" }?.authority?.sessionID == "s3")
        for session in sessions { try store.forget(session: session.id) }
        #expect(store.sessionCount == 0)
        #expect(try store.storedSessions().isEmpty)
        let onDisk = Self.bytes(of: store.path) + Self.bytes(of: store.path + "-wal")
        print("relay state: \(onDisk) bytes on disk after 2000 writes and 20 deletions")
        #expect(onDisk < 64 << 20, "the file stays bounded: \(onDisk)")
    }

    @Test("sessions kept before a reboot (another boot id) are dropped: their monotonic times no longer hold")
    func rebootDropsSessions() throws {
        let directory = try Self.scratch() + "/state"
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }
        do {
            let store = try RelayStateStore(directory: directory)
            _ = try store.storedSessions()  // records this boot
            try store.keep(Self.session("before-reboot", members: 2))
            #expect(try store.storedSessions().map(\.id) == ["before-reboot"], "same boot: kept")
        }
        // What another boot of the machine would have written, with Debian's sqlite3.
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [directory + "/relay.sqlite", "UPDATE meta SET value = 'another-boot' WHERE key = 'boot'"]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(sqlite.terminationStatus == 0)
        let store = try RelayStateStore(directory: directory)
        #expect(try store.storedSessions().isEmpty)
        #expect(store.sessionCount == 0)
    }

    @Test("the SQLite connection: WAL mode, values read back as bound (an empty blob too), a transaction that throws leaves nothing, and errors name SQLite's code and the statement")
    func connection() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try SQLiteDatabase(path: directory + "/test.sqlite")
        #expect(try database.rows("PRAGMA journal_mode").first?.first?.text == "wal")
        #expect(try database.rows("PRAGMA synchronous").first?.first?.integer == 1, "NORMAL")
        try database.execute("CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL, record BLOB NOT NULL)")
        let bytes = Data([0, 1, 0, 255])
        try database.execute("INSERT INTO t (id, record) VALUES (?, ?)", [.text("a"), .blob(bytes)])
        try database.execute("INSERT INTO t (id, record) VALUES (?, ?)", [.text("b"), .blob(Data())])
        #expect(try database.rows("SELECT id, record FROM t ORDER BY id")
            == [[.text("a"), .blob(bytes)], [.text("b"), .blob(Data())]])
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try database.transaction {
                try database.execute("DELETE FROM t")
                throw Refused()
            }
        }
        #expect(try database.rows("SELECT count(*) FROM t").first?.first?.integer == 2, "rolled back")
        do {
            try database.execute("INSERT INTO t (id, record) VALUES (?, ?)", [.text("a"), .blob(bytes)])
            Issue.record("a duplicate key was taken")
        } catch {
            #expect("\(error)".hasPrefix("SQLite error 1555: UNIQUE constraint failed: t.id"), "\(error)")
            #expect("\(error)".contains("while executing `INSERT INTO t"), "\(error)")
        }
        #expect(throws: SQLiteDatabase.Failure.self) { try database.execute("SELECT ?", []) }
        // A file that is not a database is refused when it is first read, with SQLite's words for it.
        let junk = directory + "/junk.sqlite"
        FileManager.default.createFile(atPath: junk, contents: Data(repeating: 0x41, count: 4096))
        do {
            _ = try SQLiteDatabase(path: junk)
            Issue.record("a file of junk opened as a database")
        } catch {
            #expect(error.description.contains("file is not a database"), "\(error)")
        }
    }
}
