import ArgumentParser
import Tandem
import TandemPeer

@main
struct TandemCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tandem",
        abstract: "Watch together, precisely: play the same media in lockstep with friends.",
        discussion: """
            Each person plays their own copy of the media; Tandem keeps everyone's playback in step. Start with \
            `tandem host FILE`, send the invite it prints, and friends run `tandem join INVITE THEIR-COPY`.

            \(TandemExit.documentation)
            """,
        version: TandemVersion.string,
        subcommands: [HostCommand.self, JoinCommand.self, ServeCommand.self, DemoCommand.self, ProbeCommand.self,
                      BenchCommand.self]
    )
}
