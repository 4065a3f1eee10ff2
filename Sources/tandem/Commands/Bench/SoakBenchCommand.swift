import ArgumentParser
import Foundation
import TandemPeer
import TandemBench

/// `tandem bench soak`: a standalone server under churn (joins, leaves, kills, reconnects) while reliable messages
/// flow; counts lost, duplicated and reordered messages and watches the server's memory and file descriptors.
struct SoakBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Churn participants on a standalone server while reliable messages flow; report loss, memory, fds.",
        discussion: """
            Starts `tandem serve` as a process of its own and one session on it. Stable participants stay for the \
            whole run; churning participants join, send for a while, then leave, are killed (their socket cut \
            without a goodbye) or are cut and reconnect as themselves with their reconnect token. Everyone sends \
            numbered reliable messages at --rate through the messenger (sealed end to end).

            Lost: messages from a stable sender missing at a stable receiver (both present throughout, so every one \
            must arrive). Duplicated and reordered: over every sender, as seen by the stable receivers. The \
            server's resident memory is read after a warm-up (the first tenth of the run) and at the end; its file \
            descriptors before any client connects and after every client has gone.

            Targets: 0 lost, 0 duplicated, 0 reordered, RSS growth ≤ 5 MB, fds back to the baseline.
            """
    )

    @Option(help: "Seconds of churn.")
    var duration = 60.0

    @Option(help: "Participants present for the whole run.")
    var stable = 4

    @Option(help: "Participants that keep joining, leaving, being killed and reconnecting.")
    var churners = 6

    @Option(help: "Reliable messages per second each participant sends.")
    var rate = 20.0

    @Option(help: "Seed for the churn schedule.")
    var seed: UInt64 = 1

    func validate() throws {
        guard duration >= 2, duration <= 24 * 3600 else { throw ValidationError("--duration must be 2 s to 24 h") }
        guard (2...16).contains(stable) else { throw ValidationError("--stable must be 2 to 16") }
        guard (0...32).contains(churners) else { throw ValidationError("--churners must be 0 to 32") }
        guard rate > 0, rate <= 50 else { throw ValidationError("--rate must be above 0 and at most 50 (the server's per-sender limit is 100/s)") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        try await reportingErrors {
            // Killed participants keep their place for the reconnect grace period, so there is room for many.
            let started = try ServeProcess.start(sessions: 1, perSession: 200)
            defer { if started.process.isRunning { started.process.terminate() } }
            let soak = Soak(port: started.port, serverPID: started.process.processIdentifier, duration: duration,
                            stable: stable, churners: churners, rate: rate, seed: seed)
            let report = try await soak.run()
            printLine(report.rendered)
            printLine("machine: \(machineDescription())")
            printLine("reproduce: tandem bench soak --duration \(String(format: "%g", duration)) --stable \(stable) --churners \(churners) --rate \(String(format: "%g", rate)) --seed \(seed)")
        }
    }
}
