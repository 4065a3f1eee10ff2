import Foundation

extension RelayBenchmark {
    /// Instructions the server executes per delivered message, counted by `valgrind --tool=callgrind` (repeatable
    /// on a noisy machine, unlike time). The same participants and sessions run twice for the same time at two
    /// message rates; the difference in the server's instructions over the difference in deliveries is the cost
    /// of a delivery alone. Only the load phase is counted (start-up, joining and clock sync's acquisition vary
    /// from run to run); heartbeats and steady clock probes during it are the same in both runs and cancel.
    package struct InstructionCount: Sendable, CustomStringConvertible {
        package var participants: Int
        package var perSession: Int
        package var rates: (low: Double, high: Double)
        package var duration: Double
        /// The server's instructions and the deliveries of each run.
        package var low: (instructions: UInt64, deliveries: Int)
        package var high: (instructions: UInt64, deliveries: Int)

        package init(participants: Int, perSession: Int, rates: (low: Double, high: Double), duration: Double,
                     low: (instructions: UInt64, deliveries: Int), high: (instructions: UInt64, deliveries: Int)) {
            self.participants = participants
            self.perSession = perSession
            self.rates = rates
            self.duration = duration
            self.low = low
            self.high = high
        }

        package var perDelivery: Double? {
            let deliveries = high.deliveries - low.deliveries
            guard deliveries > 0, high.instructions > low.instructions else { return nil }
            return Double(high.instructions - low.instructions) / Double(deliveries)
        }

        /// What a participant costs a second apart from its deliveries (clock probes, link reports, heartbeats,
        /// timers): the low run's count less its deliveries, over the participants and the counted time (the load
        /// and the second of draining after it).
        package var perParticipantSecond: Double? {
            guard let perDelivery, participants > 0 else { return nil }
            let background = Double(low.instructions) - perDelivery * Double(low.deliveries)
            guard background > 0 else { return nil }
            return background / Double(participants) / (duration + 1)
        }

        package var description: String {
            let each = perDelivery.map { String(format: "%.0f", $0) } ?? "–"
            return """
                relay instructions (callgrind, server only): \(participants) participants in sessions of \(perSession), \
                \(String(format: "%g", duration)) s at \(String(format: "%g", rates.low)) and \(String(format: "%g", rates.high)) msg/s each
                  \(String(format: "%g", rates.low)) msg/s: \(low.instructions) instructions, \(low.deliveries) deliveries
                  \(String(format: "%g", rates.high)) msg/s: \(high.instructions) instructions, \(high.deliveries) deliveries
                  per delivery (the difference over the difference): \(each) instructions
                  per participant a second besides its deliveries (probes, link reports, timers): \(perParticipantSecond.map { String(format: "%.0f", $0) } ?? "–") instructions
                """
        }
    }

    /// Counts the server's instructions per delivery (see `InstructionCount`). The server runs as this executable
    /// under callgrind; valgrind 3.19 cannot read the debug information of Swift's shared runtime, so this needs a
    /// release build with the runtime linked in (`make release`), which is copied without symbols first.
    package static func countInstructions(participants: Int = 16, perSession: Int = 4, rates: (Double, Double) = (2, 6),
                                          duration: Double = 8, linkReports: Bool = true) async throws(BenchError) -> InstructionCount {
        let valgrind = "/usr/bin/valgrind"
        guard FileManager.default.isExecutableFile(atPath: valgrind) else {
            throw BenchError("valgrind is not installed — `make deps` installs it")
        }
        // TANDEM_CALLGRIND_PROFILE=DIR keeps both runs' counts in DIR, with function names (only the debug
        // information is stripped), for `callgrind_annotate DIR/relay-high.out | swift demangle`.
        let profiles = ProcessInfo.processInfo.environment["TANDEM_CALLGRIND_PROFILE"]
        let stripped = NSTemporaryDirectory() + "tandem-callgrind-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: stripped) }
        try strip(BenchProcess.executable, to: stripped, keepingNames: profiles != nil)
        var count = InstructionCount(participants: participants, perSession: perSession, rates: rates, duration: duration,
                                     low: (0, 0), high: (0, 0))
        for (index, rate) in [rates.0, rates.1].enumerated() {
            let output = profiles.map { "\($0)/relay-\(index == 0 ? "low" : "high").out" }
                ?? NSTemporaryDirectory() + "tandem-callgrind-\(getpid())-\(index).out"
            defer { if profiles == nil { try? FileManager.default.removeItem(atPath: output) } }
            var configuration = Configuration()
            configuration.participants = participants
            configuration.sessions = max(1, participants / perSession)
            configuration.messagesPerSecond = rate
            configuration.duration = duration
            configuration.clientThreads = 1
            configuration.collectOnlyDuringLoad = true
            configuration.linkReports = linkReports
            let started = try ServeProcess.start(sessions: configuration.sessions, perSession: perSession,
                                                 executable: stripped, wrapper: [valgrind, "--tool=callgrind", "--instr-atstart=no",
                                                                                 "--callgrind-out-file=\(output)"])
            let server = started.process
            // taskset runs valgrind, which runs the server, in one process: its identifier is the server's.
            configuration.server = .external(host: "127.0.0.1", port: started.port, processID: server.processIdentifier)
            let result: Result
            do { result = try await runGenerator(configuration) } catch {
                if server.isRunning { server.terminate() }
                throw error
            }
            // callgrind writes its counts when the server exits (SIGTERM: a graceful stop).
            server.terminate()
            for _ in 0..<600 where server.isRunning { try? await Task.sleep(for: .milliseconds(100)) }
            guard !server.isRunning, let instructions = callgrindTotal(atPath: output) else {
                if server.isRunning { kill(server.processIdentifier, SIGKILL) }
                throw BenchError("callgrind wrote no counts for the server (\(output)); is this a release build (`make release`)?")
            }
            if index == 0 { count.low = (instructions, result.received) } else { count.high = (instructions, result.received) }
        }
        return count
    }

    /// Turns callgrind's counting in process `pid` on or off (`callgrind_control -i`).
    static func callgrindCollect(_ on: Bool, pid: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/callgrind_control")
        process.arguments = ["-i", on ? "on" : "off", "\(pid)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return }
        process.waitUntilExit()
    }

    /// The total of a callgrind output file (its `summary:` or `totals:` line), if it has one.
    package static func callgrindTotal(atPath path: String) -> UInt64? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n").reversed() where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
            if let value = line.split(separator: " ").dropFirst().first.flatMap({ UInt64($0) }) { return value }
        }
        return nil
    }

    private static func strip(_ path: String, to destination: String, keepingNames: Bool) throws(BenchError) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/strip")
        process.arguments = [keepingNames ? "--strip-debug" : "--strip-all", "-o", destination, path]
        do { try process.run() } catch { throw BenchError("cannot run strip (binutils): \(error)") }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("strip failed on \(path)") }
    }
}
