import Foundation
import Tandem
import TandemPeer

/// One `tandem host` or `tandem join` of a multi-process benchmark, started (optionally) in a network namespace of
/// the lab and in a time namespace of its own whose CLOCK_MONOTONIC is shifted by whole seconds, with its renders
/// logged to a file (`RenderLog`) and its `--json` events kept.
package final class PeerProcess: Sendable {
    private struct Output {
        var partial = ""
        var events: [String] = []
        var stderr = ""
    }

    package let name: String
    package let renderLog: String
    private let process: Process
    private let input: Pipe
    private let output = Locked(Output())
    private let exited = Locked<Int32?>(nil)

    /// Where a peer runs: the network namespace (nil: this one) and its clock shift.
    package struct Placement: Sendable {
        package var namespace: String?
        package var clockShiftSeconds: Int
    }

    static let ipTool = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let unshareTool = ["/usr/bin/unshare", "/bin/unshare"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Whether peers can have clocks of their own: time namespaces need root and util-linux's `unshare`.
    package static var canShiftClocks: Bool { getuid() == 0 && unshareTool != nil }

    package init(name: String, arguments: [String], placement: Placement, environment: [String: String],
                 renderLog: String) throws(BenchError) {
        self.name = name
        self.renderLog = renderLog
        var command = [BenchProcess.executable] + arguments
        if placement.clockShiftSeconds != 0 {
            guard let unshare = Self.unshareTool, getuid() == 0 else {
                throw BenchError("clocks of their own need time namespaces: run as root with util-linux's unshare")
            }
            let shift = placement.clockShiftSeconds
            command = [unshare, "--time", "--kill-child", "--monotonic=\(shift)", "--boottime=\(shift)", "--"] + command
        }
        if let namespace = placement.namespace {
            guard let ip = Self.ipTool else { throw BenchError("the lab needs iproute2's ip (make deps)") }
            command = [ip, "netns", "exec", namespace] + command
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        env["TANDEM_RENDER_LOG"] = renderLog
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
        let exited = self.exited
        process.terminationHandler = { process in exited.withLock { $0 = process.terminationStatus } }
        do { try process.run() } catch { throw BenchError("cannot start \(name): \(error)") }
        PipeReader.drain(stdout.fileHandleForReading) { data in
            output.withLock { out in
                out.partial += String(decoding: data, as: UTF8.self)
                while let newline = out.partial.firstIndex(of: "\n") {
                    out.events.append(String(out.partial[..<newline]))
                    out.partial.removeSubrange(...newline)
                }
            }
        }
        PipeReader.drain(stderr.fileHandleForReading) { data in
            output.withLock { $0.stderr = String(($0.stderr + String(decoding: data, as: UTF8.self)).suffix(4000)) }
        }
    }

    package var exitCode: Int32? { exited.value }
    package var stderrTail: String { output.withLock { $0.stderr } }

    /// The first `--json` event named `event` (its object), if it came.
    package func event(_ event: String) -> [String: Any]? {
        let lines = output.withLock { $0.events }
        for line in lines where line.contains("\"event\":\"\(event)\"") {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
               object["event"] as? String == event { return object }
        }
        return nil
    }

    /// Every `--json` event named `event` (its object), in order.
    package func events(_ event: String) -> [[String: Any]] {
        let lines = output.withLock { $0.events }
        return lines.filter { $0.contains("\"event\":\"\(event)\"") }.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["event"] as? String == event else { return nil }
            return object
        }
    }

    /// Waits up to `seconds` for `event`; an exit on the way is an error with the peer's last words.
    package func waitFor(_ event: String, within seconds: Double) async throws(BenchError) -> [String: Any] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let found = self.event(event) { return found }
            if let code = exitCode {
                throw BenchError("\(name) exited (\(code)) before its \(event) event: \(stderrTail.suffix(600))")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("\(name) gave no \(event) event within \(Int(seconds)) s: \(stderrTail.suffix(600))")
    }

    /// One command line on the peer's stdin.
    package func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits up to `seconds` for the process to end, then kills it.
    package func finish(within seconds: Double) async {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while exitCode == nil, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        if exitCode == nil {
            process.terminate()
            try? await Task.sleep(for: .milliseconds(300))
            if exitCode == nil { kill(process.processIdentifier, SIGKILL) }
        }
    }

    /// The frames the render log holds, on the machine's true CLOCK_MONOTONIC (the log's time-namespace shift
    /// removed), video only.
    package func frames() throws(BenchError) -> [GroundTruth.Frame] {
        guard let text = try? String(contentsOfFile: renderLog, encoding: .utf8) else {
            throw BenchError("\(name) wrote no render log at \(renderLog)")
        }
        var shift: Int64 = 0
        var frames: [GroundTruth.Frame] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, fields[0] == "timens", let value = Int64(fields[1]) { shift = value; continue }
            guard fields.count == 3, fields[0] == "v", let item = Int64(fields[1]), let time = Int64(fields[2]) else { continue }
            frames.append(GroundTruth.Frame(item: item, time: time - shift))
        }
        return frames
    }
}

/// The network lab (`scripts/netlab.sh`) for benchmarks: found next to the source tree or the executable.
package enum BenchNetlab {
    package static let prefix = "tdmb-"

    /// The script: in the current directory's `scripts/`, or up from the executable (`.build/<config>/tandem`).
    package static func script() throws(BenchError) -> String {
        var bases = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var directory = URL(fileURLWithPath: BenchProcess.executable).deletingLastPathComponent()
        for _ in 0..<5 {
            bases.append(directory)
            directory.deleteLastPathComponent()
        }
        bases.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent())
        for base in bases {
            let path = base.appendingPathComponent("scripts/netlab.sh").path
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        throw BenchError("--netlab needs scripts/netlab.sh: run from Tandem's source tree")
    }

    /// Runs `netlab.sh ARGUMENTS` with this benchmark's prefix; returns its status and output.
    @discardableResult
    package static func run(_ arguments: [String]) throws(BenchError) -> (status: Int32, output: String) {
        guard getuid() == 0 else { throw BenchError("--netlab needs root (network namespaces)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [try script()] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["NETLAB_PREFIX": prefix]) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw BenchError("cannot run the lab script: \(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
