import ArgumentParser
import TandemPeer

extension TandemExit {
    var code: ExitCode { ExitCode(rawValue) }
}

/// Runs a command's body; an error becomes one line on standard error and its documented exit code (library
/// errors are mapped by their type, see `PeerFailure`).
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        let failure = PeerFailure(error)
        printError("tandem: \(failure.description)")
        throw failure.exit.code
    }
}

/// Says on standard error, one line each, which secrets were given on the command line (`CommandLineSecrets`); with
/// `--json` the console repeats them as `warning` events.
func warnAboutCommandLine(_ warnings: [String]) {
    for warning in warnings { printError("tandem: warning: \(warning)") }
}
