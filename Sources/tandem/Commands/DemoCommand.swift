import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Tandem
import TandemPeer
import TandemBench

/// `tandem demo`: a scripted watch-together session in one process, measured from ground truth.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a watch-together session on the bundled samples and measure how tightly it holds.",
        discussion: """
            An embedded server and three peers in this process, each with its own GStreamer player and its own \
            connection: ann hosts, bob is slow to load, carol is quick. Ann presses play (the group waits for bob), \
            bob pauses, ann plays on, carol seeks, dave joins late, carol's player stalls (the group waits for her), \
            then ann ends the session. About 30 seconds. At the end: how long each command took to reach every \
            peer, and how far apart the peers rendered, both measured from what their sinks really rendered and \
            when (not from what the peers believe).

            Headless by default; --show uses real video and audio output where this machine has them.
            """
    )

    @Flag(help: "Use real video and audio output when a display / sound server exists.")
    var show = false

    @Option(help: "The media file to play (default: the bundled media-samples/countdown.webm).")
    var file: String?

    @Flag(name: .shortAndLong, help: "Debug logging on standard error.")
    var verbose = false

    func run() async throws {
        CLILogging.bootstrap(verbose: verbose)
        try await reportingErrors {
            let path = try file ?? Samples.path("countdown.webm")
            let service = DemoService(demo: DemoRun(file: path, show: show))
            // SIGINT and SIGTERM end the script early: the session ends and the report covers what was measured.
            let group = ServiceGroup(configuration: .init(
                services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "tandem.demo")))
            try? await group.run()
            if let error = service.failure.withLock({ $0 }) { throw error }
        }
    }
}

/// The demo's script as a `Service`: a graceful shutdown (a signal) interrupts it, and it still reports.
final class DemoService: Service {
    let demo: DemoRun
    /// What stopped the run, if it failed (read after the group has finished).
    let failure = Mutex<(any Error)?>(nil)

    init(demo: DemoRun) { self.demo = demo }

    func run() async {
        do {
            if Terminal.stdoutIsTerminal {
                try await demo.run(print: printLine, notice: { Terminal.shared.notice($0) },
                                   status: { Terminal.shared.status($0) }, finished: { Terminal.shared.restore() },
                                   interrupted: { try? await gracefulShutdown() })
            } else {
                try await demo.run(print: printLine, notice: nil, status: nil, finished: {},
                                   interrupted: { try? await gracefulShutdown() })
            }
        } catch {
            failure.withLock { $0 = error }
        }
    }
}
