import Foundation
import Synchronization
import TandemBench
import TandemCore
import TandemPeer
#if canImport(Glibc)
import Glibc
#endif

/// The `tandem` executable built next to the test bundle.
enum TandemBinary {
    static var path: String {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let candidate = directory.appendingPathComponent("tandem").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        // `swift test` may run the tests from a bundle one level further down.
        return directory.deletingLastPathComponent().appendingPathComponent("tandem").path
    }

    static let samples: URL = Samples.directory!

    static func sample(_ name: String) -> String { samples.appendingPathComponent(name).path }
}

/// A value behind a lock that callbacks on other threads can share.
typealias Shared<Value: Sendable> = Locked<Value>

/// A JSON value read from a `--json` line.
enum JSON: Decodable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSON])
    case object([String: JSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let v = try? container.decode(Bool.self) { self = .bool(v) }
        else if let v = try? container.decode(Double.self) { self = .number(v) }
        else if let v = try? container.decode(String.self) { self = .string(v) }
        else if let v = try? container.decode([JSON].self) { self = .array(v) }
        else { self = .object(try container.decode([String: JSON].self)) }
    }

    subscript(key: String) -> JSON? { if case .object(let o) = self { o[key] } else { nil } }
    var string: String? { if case .string(let v) = self { v } else { nil } }
    var number: Double? { if case .number(let v) = self { v } else { nil } }
    var array: [JSON]? { if case .array(let v) = self { v } else { nil } }
}

/// A `tandem` process under test: stdin to write commands to, stdout and stderr collected as they arrive, and
/// stdout's JSON lines parsed.
final class TandemProcess: Sendable {
    private struct Output {
        var stdout = ""
        var partial = ""
        var stderr = ""
        var events: [JSON] = []
    }

    let arguments: [String]
    private let process: Process
    private let input: Pipe
    private let output = Shared(Output())
    private let exit = Shared<Int32?>(nil)

    /// Starts `tandem` (or `executable`) with `arguments`.
    init(_ arguments: [String], executable: String = TandemBinary.path, environment: [String: String] = [:],
         currentDirectory: URL? = nil) throws {
        self.arguments = arguments
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        // A host never asks a real router for a port from a test: only the network lab's tests turn it on.
        env["TANDEM_PORT_MAPPING"] = "off"
        for (key, value) in environment { env[key] = value }
        env["DISPLAY"] = nil
        env["WAYLAND_DISPLAY"] = nil
        process.environment = env
        PipeReader.ignoreBrokenPipes()
        let input = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = input
        process.standardOutput = stdout
        process.standardError = stderr
        self.process = process
        self.input = input
        let output = self.output
        let exit = self.exit
        process.terminationHandler = { process in exit.withLock { $0 = process.terminationStatus } }
        try process.run()
        PipeReader.drain(stdout.fileHandleForReading) { data in
            let text = String(decoding: data, as: UTF8.self)
            output.withLock { out in
                out.stdout += text
                out.partial += text
                while let newline = out.partial.firstIndex(of: "\n") {
                    let line = String(out.partial[..<newline])
                    out.partial.removeSubrange(...newline)
                    if line.hasPrefix("{"), let event = try? JSONDecoder().decode(JSON.self, from: Data(line.utf8)) {
                        out.events.append(event)
                    }
                }
            }
        }
        PipeReader.drain(stderr.fileHandleForReading) { data in
            output.withLock { $0.stderr += String(decoding: data, as: UTF8.self) }
        }
    }

    var pid: Int32 { process.processIdentifier }
    var stdout: String { output.withLock { $0.stdout } }
    var stderr: String { output.withLock { $0.stderr } }
    var events: [JSON] { output.withLock { $0.events } }
    var exitCode: Int32? { exit.withLock { $0 } }

    /// Events named `name`, in order.
    func events(_ name: String) -> [JSON] { events.filter { $0["event"]?.string == name } }

    /// Writes one line to the process's stdin.
    func send(_ line: String) { write(line + "\n") }

    /// Writes raw text to the process's stdin.
    func write(_ text: String) {
        // A process that has exited takes nothing: the write fails (EPIPE, not SIGPIPE) and the test's own
        // expectations say what went wrong.
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Closes the process's stdin (it reads end of file).
    func closeInput() { try? input.fileHandleForWriting.close() }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits until `condition` holds (polling), up to `timeout` seconds; returns whether it did.
    @discardableResult
    func wait(for timeout: Double, until condition: (TandemProcess) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition(self)
    }

    /// The first event named `name` that satisfies `predicate`, waiting up to `timeout` seconds.
    func event(_ name: String, within timeout: Double, where predicate: (JSON) -> Bool = { _ in true }) async -> JSON? {
        var found: JSON?
        await wait(for: timeout) { process in
            found = process.events(name).first(where: predicate)
            return found != nil
        }
        return found
    }

    /// Waits for the process to exit (up to `timeout` seconds) and returns its exit code; kills it and returns nil
    /// when it does not exit in time.
    func exitCode(within timeout: Double) async -> Int32? {
        if await wait(for: timeout, until: { $0.exitCode != nil }) {
            try? await Task.sleep(for: .milliseconds(100))  // let the pipes drain
            return exitCode
        }
        signal(SIGKILL)
        return nil
    }

    /// Ends the process if it still runs.
    func stop() {
        if exitCode == nil { signal(SIGKILL) }
    }

    deinit { if exit.withLock({ $0 }) == nil { kill(process.processIdentifier, SIGKILL) } }
}
