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

extension RelayBenchmark {
    /// One run of `tandem bench relay`: `participants` in sessions of `perSession`, each sending `rate` messages a
    /// second for `duration` seconds, to a `tandem serve` of their own (pinned to core 0) or, unless `standalone`,
    /// to a server in this process. The clients get an event loop per core.
    package static func measure(participants: Int, perSession: Int, rate: Double, duration: Double,
                                standalone: Bool) async throws(BenchError) -> Result {
        var configuration = Configuration()
        configuration.participants = participants
        configuration.sessions = max(1, participants / perSession)
        configuration.messagesPerSecond = rate
        configuration.duration = duration
        configuration.clientThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
        var server: Process?
        defer { if let server, server.isRunning { server.terminate() } }
        if standalone {
            let started = try ServeProcess.start(sessions: configuration.sessions, perSession: perSession)
            server = started.process
            configuration.server = .external(host: "127.0.0.1", port: started.port, processID: started.process.processIdentifier)
        }
        do {
            return try await run(configuration)
        } catch {
            throw BenchError("the relay benchmark failed: \(error)")
        }
    }
}
