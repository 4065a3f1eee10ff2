import ArgumentParser
import Foundation
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
            let demo = DemoRun(file: path, show: show)
            if Terminal.stdoutIsTerminal {
                try await demo.run(print: printLine, notice: { Terminal.shared.notice($0) },
                                   status: { Terminal.shared.status($0) }, finished: { Terminal.shared.restore() })
            } else {
                try await demo.run(print: printLine, notice: nil, status: nil, finished: {})
            }
        }
    }
}
