import Foundation

extension RelayBenchmark.Result {
    /// The server's descriptors and CPU per delivery, and the generator's own CPU, when measured.
    var serverDetail: String {
        var lines: [String] = []
        var server: [String] = []
        if let serverFileDescriptors { server.append("\(serverFileDescriptors) fds") }
        if let perDelivery = serverMicrosecondsPerDelivery, received > 0 {
            server.append(String(format: "%.2f µs of server CPU per delivery", perDelivery)
                          + (serverKernelMicrosecondsPerDelivery.map { String(format: " (%.2f of them in the kernel)", $0) } ?? ""))
        }
        if !server.isEmpty { lines.append("server: " + server.joined(separator: ", ")) }
        if let generatorCPUPercent {
            lines.append(String(format: "load generator (own process, own core): CPU %.0f %% of its core", generatorCPUPercent)
                         + (generatorSaturated ? " — SATURATED: these figures may be the generator's limit, not the relay's" : ""))
        }
        if let lag = generatorLagP99 {
            lines.append(String(format: "load generator's timers fired late by %.3f ms at p99", Double(lag) / 1e6)
                         + (generatorLagged ? " — it was busy in bursts: the latency may be the generator's" : ""))
        }
        if let rate = clockProbesPerParticipantSecond {
            lines.append(String(format: "clock probes as datagrams during the load: %.1f per participant a second", rate)
                         + (rate > 1.5 ? " (steady state is 1: clocks still acquiring, or estimates started over)" : ""))
        }
        if generatorFellShort {
            lines.append("the generator sent \(sent + sendFailures) of the \(scheduled) messages scheduled: the load "
                         + "named above was not offered")
        }
        return lines.map { "\n  " + $0 }.joined()
    }
}

extension RelayBenchmark {
    /// One run of `tandem bench relay`: `participants` in sessions of `perSession`, each sending `rate` messages a
    /// second for `duration` seconds. Standalone (the default for the command), the server is a `tandem serve` of
    /// its own pinned to core 0 (one event-loop thread) and the load generator another process of this executable
    /// (`tandem bench relay-load`) pinned to core 1, one event loop; otherwise both run in this process.
    ///
    /// `floor` measures the bare relay (`BareRelay`) under the same load instead: what any relay that writes each
    /// delivery to its socket costs on this machine.
    package static func measure(participants: Int, perSession: Int, rate: Double, duration: Double, settle: Double = 40,
                                standalone: Bool, floor: Bool = false, linkReports: Bool = true) async throws(BenchError) -> Result {
        var configuration = Configuration()
        configuration.linkReports = linkReports
        configuration.participants = participants
        configuration.sessions = max(1, participants / perSession)
        configuration.messagesPerSecond = rate
        configuration.duration = duration
        configuration.settle = settle
        guard standalone else {
            configuration.clientThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
            do { return try await run(configuration) } catch { throw BenchError("the relay benchmark failed: \(error)") }
        }
        configuration.clientThreads = 1
        let started = floor ? try ServeProcess.startPinned([BenchProcess.executable, "bench", "relay-floor-serve"])
                            : try ServeProcess.start(sessions: configuration.sessions, perSession: perSession)
        let server = started.process
        defer { if server.isRunning { server.terminate() } }
        configuration.server = floor ? .bare(port: started.port, processID: server.processIdentifier)
                                     : .external(host: "127.0.0.1", port: started.port, processID: server.processIdentifier)
        return try await runGenerator(configuration)
    }

    /// Runs the load generator as `tandem bench relay-load` pinned to core 1 and reads its result (JSON, the
    /// last line it prints).
    static func runGenerator(_ configuration: Configuration) async throws(BenchError) -> Result {
        let input: Data
        do { input = try JSONEncoder().encode(configuration) } catch { throw BenchError("\(error)") }
        let process = BenchProcess.pinned([BenchProcess.executable, "bench", "relay-load",
                                           String(decoding: input, as: UTF8.self)], core: 1)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { throw BenchError("cannot start the load generator: \(error)") }
        // Read both pipes off this task so that neither fills while the other is read.
        async let errorText = Task.detached { String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }.value
        let text = await Task.detached { String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }.value
        let stderr = await errorText
        process.waitUntilExit()
        guard process.terminationStatus == 0, let line = text.split(separator: "\n").last,
              let result = try? JSONDecoder().decode(Result.self, from: Data(line.utf8)) else {
            throw BenchError("the load generator failed (exit \(process.terminationStatus)): \(stderr.suffix(2000))\(text.suffix(500))")
        }
        return result
    }

    /// The generator's side (`tandem bench relay-load CONFIGURATION-JSON`): runs the load against the external
    /// server the configuration names and returns the result as one line of JSON.
    package static func generate(configurationJSON: String) async throws(BenchError) -> String {
        let configuration: Configuration
        do {
            configuration = try JSONDecoder().decode(Configuration.self, from: Data(configurationJSON.utf8))
        } catch {
            throw BenchError("the load generator's configuration is not valid: \(error)")
        }
        if case .bare(let port, let pid) = configuration.server {
            // The bare load blocks its thread for the whole run: a thread of its own, not the cooperative pool's.
            let result = try await onThreadOfItsOwn { () throws(BenchError) in
                try BareRelay.load(configuration, port: port, serverPID: pid)
            }
            do { return String(decoding: try JSONEncoder().encode(result), as: UTF8.self) } catch { throw BenchError("\(error)") }
        }
        guard case .external = configuration.server else { throw BenchError("the load generator needs an external server") }
        do {
            let result = try await run(configuration)
            return String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
        } catch {
            throw BenchError("the relay benchmark failed: \(error)")
        }
    }
}

/// Runs `body` on a new thread and waits for it without holding one of the cooperative pool's threads.
func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws(BenchError) -> T) async throws(BenchError) -> T {
    let outcome: Swift.Result<T, BenchError> = await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: Swift.Result { () throws(BenchError) -> T in try body() }) }.start()
    }
    return try outcome.get()
}
