import Foundation

/// A `tandem serve` of its own for benchmarks that measure a standalone server (relay, soak).
package enum ServeProcess {
    /// Starts `tandem serve` on a free loopback port, pinned to core 0 when `taskset` exists.
    package static func start(sessions: Int, perSession: Int) throws(BenchError) -> (process: Process, port: Int) {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let serve = [me, "serve", "--bind", "127.0.0.1", "--port", "0", "--max-sessions", "\(sessions + 10)",
                     "--max-participants", "\(perSession + 2)"]
        let process = Process()
        let taskset = "/usr/bin/taskset"
        if ProcessInfo.processInfo.activeProcessorCount > 1, FileManager.default.isExecutableFile(atPath: taskset) {
            process.executableURL = URL(fileURLWithPath: taskset)
            process.arguments = ["-c", "0"] + serve
        } else {
            process.executableURL = URL(fileURLWithPath: me)
            process.arguments = Array(serve.dropFirst())
        }
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
