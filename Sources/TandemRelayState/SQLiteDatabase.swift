import CTandemSQLite
import Foundation

/// One connection to an SQLite database through Debian's libsqlite3: statements with bound values, rows of values,
/// and transactions. Not thread-safe: `RelayStateStore` keeps it behind a lock.
final class SQLiteDatabase {
    /// A value bound to a statement or read from a row.
    enum Value: Equatable {
        case null
        case integer(Int64)
        case text(String)
        case blob(Data)

        var text: String? { if case .text(let value) = self { value } else { nil } }
        var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
        var data: Data? {
            switch self {
            case .blob(let value): value
            case .text(let value): Data(value.utf8)
            default: nil
            }
        }
    }

    /// An SQLite result code with SQLite's message, and the statement it came from.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let message: String
        let statement: String?
        var description: String {
            "SQLite error \(code): \(message)" + (statement.map { " - while executing `\($0)`" } ?? "")
        }
    }

    private var handle: OpaquePointer?

    /// Opens (creating it if missing) the database at `path`, in WAL mode with `synchronous = NORMAL`, waiting up
    /// to `busyTimeout` milliseconds for another connection's lock.
    init(path: String, busyTimeout: Int32 = 5000) throws(Failure) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        handle = opened
        guard code == SQLITE_OK else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(opened)
            handle = nil
            throw Failure(code: code, message: message, statement: nil)
        }
        sqlite3_extended_result_codes(opened, 1)
        sqlite3_busy_timeout(opened, busyTimeout)
        // journal_mode answers with a row: the mode now in force, which must be WAL.
        let mode = try rows("PRAGMA journal_mode = WAL").first?.first?.text
        guard mode?.lowercased() == "wal" else {
            throw Failure(code: SQLITE_ERROR, message: "the database would not take WAL mode (\(mode ?? "no answer"))",
                          statement: "PRAGMA journal_mode = WAL")
        }
        try execute("PRAGMA synchronous = NORMAL")
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs one statement with `arguments` bound to its `?` in order, discarding any rows.
    func execute(_ sql: String, _ arguments: [Value] = []) throws(Failure) {
        _ = try run(sql, arguments, keepingRows: false)
    }

    /// Runs one statement with `arguments` bound to its `?` in order; its rows, each a value per column.
    func rows(_ sql: String, _ arguments: [Value] = []) throws(Failure) -> [[Value]] {
        try run(sql, arguments, keepingRows: true)
    }

    /// Runs `body` in an immediate transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if sqlite3_get_autocommit(handle) == 0 { try? execute("ROLLBACK") }
            throw error
        }
    }

    private func failure(_ code: Int32, _ sql: String?) -> Failure {
        Failure(code: code, message: String(cString: sqlite3_errmsg(handle)), statement: sql)
    }

    private func run(_ sql: String, _ arguments: [Value], keepingRows: Bool) throws(Failure) -> [[Value]] {
        var statement: OpaquePointer?
        var code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw failure(code, sql) }
        defer { sqlite3_finalize(statement) }
        guard Int(sqlite3_bind_parameter_count(statement)) == arguments.count else {
            throw Failure(code: SQLITE_RANGE, message: "\(arguments.count) arguments for "
                + "\(sqlite3_bind_parameter_count(statement)) parameters", statement: sql)
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null: code = sqlite3_bind_null(statement, index)
            case .integer(let value): code = sqlite3_bind_int64(statement, index, value)
            case .text(let value): code = sqlite3_bind_text(statement, index, value, -1, Self.transient)
            case .blob(let value):
                code = value.withUnsafeBytes { bytes in
                    // An empty blob binds as a zero-length blob, not as NULL.
                    sqlite3_bind_blob64(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                        sqlite3_uint64(bytes.count), Self.transient)
                }
            }
            guard code == SQLITE_OK else { throw failure(code, sql) }
        }
        var rows: [[Value]] = []
        while true {
            code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { throw failure(code, sql) }
            guard keepingRows else { continue }
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
                case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(statement, column)))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return .blob(Data()) }
                    return .blob(Data(bytes: bytes, count: count))
                case SQLITE_NULL: return .null
                default: return .text(String(cString: sqlite3_column_text(statement, column)))
                }
            })
        }
    }

    /// SQLite copies a bound text or blob before the call returns (`SQLITE_TRANSIENT`, a macro Swift cannot import).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
