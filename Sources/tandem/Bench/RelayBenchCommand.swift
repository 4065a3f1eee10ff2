import ArgumentParser
import Foundation
import Tandem

/// `tandem bench relay`: the session server under many participants and messages.
struct RelayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Load a session server with participants, sessions and messages; report latency, loss and memory.",
        discussion: """
            Participants in sessions each send small reliable messages to everyone in their session at a fixed \
            rate while clock-syncing at the normal rate. Latency is measured end to end on one clock (sender's \
            CLOCK_MONOTONIC in the payload). The server runs on one event-loop thread.
            """
    )

    @Option(help: "Participants in all.")
    var participants = 1000

    @Option(help: "Sessions they are spread over.")
    var sessions = 250

    @Option(help: "Messages per second each participant sends.")
    var rate = 10.0

    @Option(help: "Seconds of sending.")
    var duration = 20.0

    func validate() throws {
        guard participants >= 2, sessions >= 1, participants >= sessions * 2 else {
            throw ValidationError("need at least 2 participants per session")
        }
        guard rate > 0, duration > 0 else { throw ValidationError("--rate and --duration must be positive") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        var configuration = RelayBenchmark.Configuration()
        configuration.participants = participants
        configuration.sessions = sessions
        configuration.messagesPerSecond = rate
        configuration.duration = duration
        let result = try await RelayBenchmark.run(configuration)
        printLine(result.description)
        printLine("reproduce: tandem bench relay --participants \(participants) --sessions \(sessions) --rate \(String(format: "%g", rate)) --duration \(String(format: "%g", duration))")
    }
}
