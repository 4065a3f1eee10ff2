import ArgumentParser
import TandemBench
import TandemPeer

/// `tandem bench syncplay`: two Tandem peers in a real syncplay-server room; their render skew from ground truth.
struct SyncplayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncplay",
        abstract: "Measure the render skew of two Tandem peers in a syncplay-server room (needs `make deps`).")

    @Option(help: "Seconds of the run (at least 10): play, seek, pause and play again, then steady play.")
    var duration = 24.0

    @Option(help: "The media file, with video, 30 s or longer (default: the bundled countdown.webm).")
    var file: String?

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        try await reportingErrors {
            printLine(try await SyncplaySkewBench.run(media: try file ?? Samples.path("countdown.webm"), duration: duration).description)
            printLine("machine: \(machineDescription())\nreproduce: tandem bench syncplay --duration \(String(format: "%g", duration))")
        }
    }
}
