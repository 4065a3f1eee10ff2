import ArgumentParser
import Tandem

@main
struct TandemCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tandem",
        abstract: "Watch together, precisely: play the same media in lockstep with friends.",
        subcommands: [ProbeCommand.self]
    )
}
