import ArgumentParser
import TandemBench
import TandemPeer

/// `tandem bench syncplay`: two Tandem peers in a real syncplay-server room, or a Tandem host and a real Syncplay
/// client with mpv in her session (`--client mpv`); their render skew from ground truth.
struct SyncplayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncplay",
        abstract: "Measure the render skew of two Tandem peers in a syncplay-server room, or of a Tandem host and a syncplay + mpv client (needs `make deps`).")

    enum Client: String, ExpressibleByArgument { case tandem, mpv, syncplayOnly = "syncplay-only" }

    @Option(help: "The second participant: `tandem` (two Tandem peers in a syncplay-server room: one plays in the session the other offers), `syncplay-only` (the same two, each following the room by Syncplay's rules) or `mpv` (syncplay with mpv joining a Tandem host's session).")
    var client = Client.tandem

    @Option(help: "Seconds of the run (at least 10): play, seek, pause and play again, then steady play.")
    var duration = 24.0

    @Option(help: "The media file, with video, 30 s or longer (default: the bundled countdown.webm).")
    var file: String?

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        try await reportingErrors {
            let media = try file ?? Samples.path("countdown.webm")
            printLine(client == .mpv ? try await SyncplayMpvSkewBench.run(media: media, duration: duration).description
                      : try await SyncplaySkewBench.run(media: media, duration: duration, findTandemPeers: client == .tandem).description)
            printLine("machine: \(machineDescription())\nreproduce: tandem bench syncplay --client \(client.rawValue) --duration \(String(format: "%g", duration))")
        }
    }
}
