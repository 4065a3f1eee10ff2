import ArgumentParser
import Foundation
import Tandem
import TandemPeer
import TandemBench

/// `tandem bench`: how tightly peers stay together and how fast commands reach them, from ground truth.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure render skew, drift and command latency (sync), the relay (relay), clock sync (clock), the server under churn (soak), browser pages (browser) and streaming the host's copy (stream).",
        subcommands: [SyncBenchCommand.self, RelayBenchCommand.self, ClockBenchCommand.self, SoakBenchCommand.self,
                      BrowserBenchCommand.self, SyncplayBenchCommand.self, StreamBenchCommand.self, RelayLoadCommand.self,
                      RelayFloorServeCommand.self]
    )
}

/// `tandem bench sync`.
struct SyncBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Run N real peers under a simulated network and clock errors; report render skew and latency.",
        discussion: """
            Every peer is a headless GStreamer player with its own session connection through the real session \
            server, its own clock error (offset and drift, injected into its view of time only) and its own \
            simulated link. A schedule repeats: a start with one peer slow to load, pause, play, seek, rate 1.5× \
            and back, a stall on one peer, a late joiner. Skew at item time X is the spread of the true times at \
            which the peers' sinks rendered X.

            Links: loopback (none), lan (0.5 ms ± 0.1 each way), wan (50 ms + exponential tail, mean 5 ms, 1 % loss), \
            wired (as wan, mean 1 ms, 0.1 % loss), harsh (50 ± 10 ms uniform, 2 % loss), asymmetric (30 ms up, 70 down).

            Policies: tandem; syncplay-rules and jellyfin-rules are re-implementations of the sync rules those \
            systems publish, run on the same players, server and network, for side-by-side figures.
            """
    )

    @Option(help: "Peers (2–32; with --processes 2–8). Default 4, with --processes 3.")
    var peers: Int?

    @Option(help: ArgumentHelp("Link profile: \(NetworkPaths.names.joined(separator: ", ")).", valueName: "PROFILE"))
    var link = "loopback"

    @Option(help: "Seconds of schedule (10 minutes for the published figures).")
    var duration = 120.0

    @Option(parsing: .upToNextOption, help: ArgumentHelp(
        "Policies to run one after another: tandem, syncplay-rules, jellyfin-rules.", valueName: "POLICY"))
    var policy: [SyncPolicy] = [.tandem]

    @Option(help: "Seed for clock errors and link randomness.")
    var seed: UInt64 = 1

    @Option(name: .customLong("max-clock-offset"), help: "Largest clock offset of a peer (s), either way.")
    var maxClockOffset = 10.0

    @Option(name: .customLong("max-drift"), help: "Largest clock drift of a peer (ppm), either way.")
    var maxDrift = 200.0

    @Option(help: "The media file (default: the bundled media-samples/countdown.webm).")
    var file: String?

    @Option(name: .customLong("precise-wait"), help: ArgumentHelp(
        "How long before each buffer's release time sinks stop sleeping and spin (µs); 0 leaves waiting to GStreamer.",
        valueName: "µs"))
    var preciseWait = 0.0

    @Flag(name: .customLong("rate-fallback"), help: "Players change rate by stopping and starting again (a flushing seek and a prepare round), as without GStreamer's instant rate change: to compare with the in-place change.")
    var rateFallback = false

    @Flag(name: .customLong("prepare-rounds"), help: "The authority stops the group until everyone is prepared on every seek and on rate changes not made in place, as before scheduled starts: to compare.")
    var prepareRounds = false

    @Flag(name: .customLong("timelines-over-tcp"), help: "Peers take timelines (starts, pauses, seeks, rate changes) over TCP only, without their copies as datagrams: to compare on a lossy link.")
    var timelinesOverTCP = false

    @Flag(name: .customLong("joiner-commands"), help: "With --processes: the first joiner gives the commands instead of the host (its requests cross its link; it proposes their starts).")
    var joinerCommands = false

    @Flag(name: .customLong("no-direct"), help: "With --processes: the joiners do not reach each other without the server (tandem join --no-direct), so a command crosses two legs to another joiner: to compare.")
    var noDirect = false

    @Option(name: .customLong("start-margin"), help: ArgumentHelp("The authority's start margin (ms), on every link; by default 8 when every one-way delay is under 10 ms, else the widest delay spread the peers report and 8 combined in quadrature (the root of the sum of their squares), at most 40.", valueName: "ms"))
    var startMargin: Double?

    @Option(help: ArgumentHelp("Write the figures as JSON here.", valueName: "FILE"))
    var json: String?

    @Option(help: ArgumentHelp("Write the plot (SVG) here; with several policies, one file each (-POLICY added).",
                               valueName: "FILE"))
    var plot: String?

    @Option(help: ArgumentHelp("Write every rendered frame as CSV here (peer, item ns, true render ns since the start; one file per policy when several): the raw ground truth.",
                               valueName: "FILE"))
    var frames: String?

    @Flag(help: "Every peer a tandem process of its own, its clock shifted in a time namespace (root): loopback.")
    var processes = false

    @Flag(help: "As --processes, then again in the network lab (scripts/netlab.sh; root): the host behind a NAT router with UPnP, joiners behind two other NATs and on the internet; both figures side by side.")
    var netlab = false

    @Flag(name: .shortAndLong, help: "Debug logging.")
    var verbose = false

    func validate() throws {
        if let problem = ProcessSyncBench.problem(
            processes: processes || netlab, peers: peers, otherPolicies: policy != [.tandem],
            inProcessOptions: plot != nil || frames != nil || preciseWait != 0 || rateFallback || prepareRounds
                || startMargin != nil, joinerCommands: joinerCommands, noDirect: noDirect) {
            throw ValidationError(problem)
        }
        if let problem = SyncBench.problem(peers: peers, link: link, duration: duration, maxClockOffset: maxClockOffset,
                                           maxDrift: maxDrift, preciseWait: preciseWait, startMargin: startMargin) {
            throw ValidationError(problem)
        }
        guard !policy.isEmpty else { throw ValidationError("give at least one --policy") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: verbose)
        try await reportingErrors {
            let path = try file ?? Samples.path("countdown.webm")
            let terminal = Terminal.stdoutIsTerminal
            if processes || netlab { return try await runProcesses(path) }
            var configuration = SyncBench.Configuration(
                peers: peers ?? 4, link: link, duration: duration, seed: seed, maxClockOffset: maxClockOffset,
                maxDriftPPM: maxDrift, file: path, preciseWait: .microseconds(preciseWait), rateInPlace: !rateFallback,
                prepareRounds: prepareRounds, startMargin: startMargin.map { .milliseconds($0) })
            configuration.timelinesOverTCPOnly = timelinesOverTCP
            _ = try await SyncBench.run(configuration, policies: policy,
                                        outputs: .init(frames: frames, plot: plot, json: json),
                                        progress: { line in if terminal { Terminal.shared.status(line) } }, say: printLine)
        }
    }

    /// `--processes` / `--netlab`: peers as processes, on loopback and (with --netlab) in the lab, same profile.
    func runProcesses(_ path: String) async throws {
        let configuration = ProcessSyncBench.Configuration(
            file: path, peers: peers, link: link, duration: duration, seed: seed, maxClockOffset: maxClockOffset,
            timelinesOverTCPOnly: timelinesOverTCP, commandsFromJoiner: joinerCommands, directPaths: !noDirect)
        try await ProcessSyncBench.runAll(configuration, netlab: netlab, json: json, say: printLine)
    }
}

extension SyncPolicy: ExpressibleByArgument {}

/// `tandem bench clock`: the clock-sync estimator in seeded simulations over each link profile, or (`--transfer`)
/// a real peer on loopback whose TCP connection is busy with attachments, with and without clock probes over UDP.
struct ClockBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock",
        abstract: "Simulate clock sync over each link profile and print how close the estimate gets, and when.",
        discussion: """
            A peer whose clock is an hour off and drifts 200 ppm synchronises with the session authority over a \
            simulated link (deterministic, seeded). Error = estimated − true session time.

            With --transfer: a real server and peer on loopback instead. The peer joins while another participant \
            uploads attachments of --attachment-mb (which it receives) and uploads its own, so its TCP connection \
            is busy both ways; its clock is 1 s and 100 ppm off CLOCK_MONOTONIC, the server's session time, so the \
            true error is known. Run once with clock probes over TCP only, once over UDP datagrams.
            """
    )

    @Option(help: "Simulated seconds per run (with --transfer: seconds measured per mode).")
    var duration = 60.0

    @Option(help: "Seeds per link (the worst is shown).")
    var runs = 5

    @Option(help: "First seed.")
    var seed: UInt64 = 1

    @Flag(help: "Measure a real peer on loopback while large attachments keep its TCP connection busy, with clock probes over TCP only and over UDP.")
    var transfer = false

    @Option(name: .customLong("attachment-mb"), help: ArgumentHelp("With --transfer: the size of each attachment (MB).",
                                                                    valueName: "MB"))
    var attachmentMB = 40

    func validate() throws {
        guard (1...90).contains(attachmentMB) else { throw ValidationError("--attachment-mb must be 1 to 90") }
        guard duration >= 1 else { throw ValidationError("--duration must be at least 1 second") }
    }

    func run() async throws {
        guard transfer else {
            printLine(ClockBench.run(duration: duration, seed: seed, runs: runs))
            return
        }
        try await reportingErrors {
            var configuration = ClockTransferBench.Configuration()
            configuration.duration = duration
            configuration.attachmentMB = attachmentMB
            let outcomes = try await ClockTransferBench.run(configuration)
            printLine(ClockTransferBench.report(outcomes, configuration: configuration))
        }
    }
}
