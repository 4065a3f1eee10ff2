import Foundation

/// A `tandem serve` of its own for benchmarks that measure a standalone server (relay, soak).
package enum ServeProcess {
    /// Starts `tandem serve` (`executable`, by default this one, run under `wrapper` when given, e.g. valgrind) on
    /// a free loopback port with one event-loop thread, pinned to core 0 when `taskset` exists.
    package static func start(sessions: Int, perSession: Int, executable: String = BenchProcess.executable,
                              wrapper: [String] = []) throws(BenchError) -> (process: Process, port: Int) {
        let serve = wrapper + [executable, "serve", "--bind", "127.0.0.1", "--port", "0", "--max-sessions", "\(sessions + 10)",
                     "--max-participants", "\(perSession + 2)", "--threads", "1",
                     // Everyone connects from 127.0.0.1 within seconds (the generator joins 50 at a time):
                     // above the per-address bounds meant for strangers.
                     "--creations-per-minute", "\(sessions + 10)", "--max-sessions-per-address", "\(sessions + 10)", "--max-unauthenticated-per-address", "64",
                     "--max-connections-per-address", "\(sessions * perSession + 64)"]
        return try startPinned(serve)
    }

    /// Starts `arguments` (executable first) pinned to core 0, and reads the port from the first line it prints
    /// (`… on HOST:PORT`).
    package static func startPinned(_ arguments: [String]) throws(BenchError) -> (process: Process, port: Int) {
        let process = BenchProcess.pinned(arguments, core: 0)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw BenchError("cannot start the server: \(error)") }
        // The first line names the port it bound.
        var text = ""
        let handle = output.fileHandleForReading
        while !text.contains("\n") {
            let data = handle.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, let port = line.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
            process.terminate()
            throw BenchError("the server did not say where it listens: \(text)")
        }
        return (process, port)
    }
}

/// Processes of the benchmarks: this executable, pinned to a core.
package enum BenchProcess {
    package static let taskset = "/usr/bin/taskset"

    /// This executable (the `tandem` binary).
    package static var executable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Whether processes can be pinned: more than one core and `taskset`.
    package static var canPin: Bool {
        ProcessInfo.processInfo.activeProcessorCount > 1 && FileManager.default.isExecutableFile(atPath: taskset)
    }

    /// A process running `arguments` (executable first) pinned to `core` when possible.
    package static func pinned(_ arguments: [String], core: Int) -> Process {
        let process = Process()
        if canPin {
            process.executableURL = URL(fileURLWithPath: taskset)
            process.arguments = ["-c", "\(core)"] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = Array(arguments.dropFirst())
        }
        return process
    }

    /// Open file descriptors of a process (entries of /proc/PID/fd).
    package static func openFileDescriptors(_ pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")).map(\.count)
    }
}
