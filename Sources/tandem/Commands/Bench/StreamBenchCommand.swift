import ArgumentParser
import Foundation
import TandemPeer
import TandemBench

/// `tandem bench stream`: a joiner streaming the host's copy through a slow, distant link.
struct StreamBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Stream the host's copy to a joiner through a throttled, delayed link; report first frame, rebuffers, bytes and skew.",
        discussion: """
            The host (its own file, sharing it as --share-media does), a local peer with the file and a joiner \
            without it, all headless players around the real server on 127.0.0.1. The joiner reaches the server \
            through a link in this process: a bandwidth of --factor times the media's average bitrate shared by \
            all its connections, and --delay each way. The host presses play as soon as the joiner is in.

            First frame: from the group's play to the joiner's first rendered frame. Rebuffers: gaps of more than \
            250 ms in the joiner's rendering after its first frame. Skew: the spread of the true times at which \
            the host and the joiner (and, for reference, the host and the local peer) rendered the same frame, \
            from 2 s after the start.

            Targets: first frame ≤ 3 s at 3×, no rebuffer at 1.5×, skew p99 the same as the local peer's.
            """
    )

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Link bandwidths as multiples of the media's bitrate, one run each.",
                                                        valueName: "FACTOR"))
    var factor: [Double] = [3, 1.5]

    @Option(help: ArgumentHelp("One-way delay of the link (ms).", valueName: "ms"))
    var delay = 50.0

    @Option(help: "Seconds of playing per run (at most the media's length less 2 s).")
    var duration = 30.0

    @Flag(help: "Through a relay that passes the host's copy (serve --relay-media), sealed, instead of the embedded server.")
    var relay = false
    @Option(help: "The media file (default: the bundled media-samples/countdown.webm).")
    var file: String?

    @Option(help: ArgumentHelp("Write the figures as JSON here.", valueName: "FILE"))
    var json: String?

    func validate() throws {
        guard !factor.isEmpty, factor.allSatisfy({ $0 >= 0.1 && $0 <= 100 }) else { throw ValidationError("--factor takes multiples from 0.1 to 100") }
        guard (0...2000).contains(delay) else { throw ValidationError("--delay must be 0 to 2000 ms") }
        guard duration >= 3, duration <= 3600 else { throw ValidationError("--duration must be 3 s to 1 h") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        try await reportingErrors {
            var configuration = StreamBench.Configuration(file: try file ?? Samples.path("countdown.webm"))
            (configuration.factors, configuration.duration, configuration.relay) = (factor, duration, relay)
            configuration.delay = .microseconds(Int64(delay * 1000))
            let runs = try await StreamBench.run(configuration, say: printLine)
            printLine(StreamBench.report(runs))
            printLine("machine: \(machineDescription())")
            printLine("reproduce: " + StreamBench.reproduceCommand(configuration, file: file))
            if let json { try BenchJSON.write(runs, to: json) }
        }
    }
}
