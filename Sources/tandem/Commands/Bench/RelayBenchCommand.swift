import ArgumentParser
import Foundation
import Tandem
import TandemPeer
import TandemBench

/// `tandem bench relay`: one standalone session server under many participants, sessions and messages.
struct RelayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Load a standalone session server with participants and messages; report latency, loss, CPU, memory.",
        discussion: """
            Starts `tandem serve` as a process of its own with one event-loop thread, pinned to core 0, and the \
            load generator as another process pinned to core 1 (one event loop), so the two never compete for a \
            core. Each participant sends small reliable messages to everyone in its session at --rate while \
            clock-syncing at the normal rate and sending a link report a second, as a real peer does \
            (--no-link-reports leaves them out). Latency is end to end on one clock (the sender's CLOCK_MONOTONIC \
            travels in the payload), so it includes loopback and the clients: an upper bound on what the relay \
            adds. The server's CPU per delivered message, resident memory and open descriptors are read from \
            /proc; the generator reports its own CPU, and a run where it used more than 90 % of its core is \
            flagged (its figures would be the generator's limit, not the relay's).

            With --floor, the same load goes through a bare relay instead: a few dozen lines of epoll, read and \
            write (no authentication, authority or clock sync), pinned as the server would be. Its CPU per \
            delivery is what the kernel charges here for one write per recipient — the floor under any relay on \
            this machine, which Tandem's figures can be read against.

            With --ramp, the load doubles from --participants until a target is missed (p99 ≤ 2 ms, no loss, \
            ≤ 100 MB resident, generator neither saturated nor lagging), which shows where it breaks.
            """
    )

    @Option(help: "Participants in all.")
    var participants = 1000

    @Option(help: "Participants per session.")
    var perSession = 4

    @Option(help: "Messages per second each participant sends.")
    var rate = 10.0

    @Option(help: "Seconds of sending.")
    var duration = 20.0

    @Option(help: "Longest wait between the joins and the load, which starts once clock sync probes at its steady rate.")
    var settle = 40.0

    @Flag(help: "Double the participants until a target is missed.")
    var ramp = false

    @Option(help: "Stop ramping beyond this many participants.")
    var maxParticipants = 16_000

    @Flag(help: "Count the server's instructions per delivered message with callgrind instead (four sessions of --per-session, 8 s at 2 and 6 msg/s; needs a release build, `make release`).")
    var instructions = false

    @Flag(help: "Measure the bare relay (system calls only) under the same load: this machine's floor for any relay.")
    var floor = false

    @Flag(inversion: .prefixedNo, help: "Have each participant send a link report a second, as a real peer's coordinator does.")
    var linkReports = true

    @Flag(name: .customLong("in-process"), help: "Run the server and the load inside this process instead (no pinning; memory is the whole process's).")
    var inProcess = false

    func validate() throws {
        guard perSession >= 2 else { throw ValidationError("--per-session must be at least 2") }
        guard participants >= perSession else { throw ValidationError("--participants must be at least --per-session") }
        guard rate > 0, duration > 0 else { throw ValidationError("--rate and --duration must be positive") }
        guard (0...600).contains(settle) else { throw ValidationError("--settle must be 0 to 600 seconds") }
        guard !(floor && inProcess) else { throw ValidationError("--floor runs the bare relay as a process of its own; leave out --in-process") }
        guard !(floor && instructions) else { throw ValidationError("--instructions counts Tandem's server; leave out --floor") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        try await reportingErrors {
            if instructions {
                printLine(try await RelayBenchmark.countInstructions(participants: 4 * perSession, perSession: perSession,
                                                                     linkReports: linkReports).description)
                printLine("machine: \(machineDescription())\nreproduce: tandem bench relay --instructions"
                          + (perSession == 4 ? "" : " --per-session \(perSession)") + (linkReports ? "" : " --no-link-reports"))
                return
            }
            try await RelayBenchmark.run(.init(participants: participants, perSession: perSession, rate: rate, duration: duration,
                                               settle: settle, ramp: ramp, maxParticipants: maxParticipants,
                                               inProcess: inProcess, floor: floor, linkReports: linkReports), say: printLine)
        }
    }
}

/// `tandem bench relay-load CONFIGURATION`: the load generator of `tandem bench relay`, a process of its own so
/// that it can be pinned to a core apart from the server's. Prints the result as one line of JSON.
struct RelayLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-load",
        abstract: "The load generator of `tandem bench relay` (started by it).",
        shouldDisplay: false
    )

    @Argument(help: "The run's configuration (JSON).")
    var configurationJSON: String

    func run() async throws {
        CLILogging.bootstrap(verbose: false)
        try await reportingErrors {
            printLine(try await RelayBenchmark.generate(configurationJSON: configurationJSON))
        }
    }
}

/// `tandem bench relay-floor-serve`: the bare relay of `tandem bench relay --floor`, a process of its own (pinned by
/// the bench). Prints the port it listens on, then relays until it is stopped.
struct RelayFloorServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-floor-serve",
        abstract: "The bare relay of `tandem bench relay --floor` (started by it).",
        shouldDisplay: false
    )

    func run() throws {
        do { try BareRelay.serve() } catch {
            printError("tandem: \(error.description)")
            throw ExitCode(1)
        }
    }
}
