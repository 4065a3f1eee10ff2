import ArgumentParser
import Foundation
import Tandem
import TandemPeer

/// `tandem probe FILE`: what GStreamer finds in a media file — duration, streams, codecs.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show a media file's duration, streams and codecs.",
        discussion: """
            Reads FILE (a path, file://, http:// or https:// URI) with GStreamer and prints its duration, whether \
            it can be seeked, and each stream's codec and format.

            Exit codes: 0 on success; 3 when FILE is missing, a directory, not media, truncated, needs a plugin \
            that is not installed, or cannot be reached (one line on standard error says which and what to do); \
            1 for other failures.
            """
    )

    /// Exit code for input files Tandem cannot use.
    static let badInputExitCode: Int32 = 3

    @Argument(help: "The media file or URI to probe.")
    var file: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        let probe: MediaProbe
        do {
            probe = try await MediaProbe.probe(file)
        } catch {
            FileHandle.standardError.write(Data("tandem: \(error.description)\n".utf8))
            switch error {
            case .engineFailure: throw ExitCode.failure
            default: throw ExitCode(Self.badInputExitCode)
            }
        }
        print(json ? try probe.prettyJSON() : probe.report)
    }
}
