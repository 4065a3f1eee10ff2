import ArgumentParser
import Tandem
import TandemPeer
import TandemBench

extension CLIError {
    /// A media file Tandem cannot use.
    init(_ error: PlaybackError) {
        switch error {
        case .engineFailure: self.init(.failure, error.description)
        default: self.init(.badMedia, error.description)
        }
    }

    /// A session that could not be reached or joined.
    init(_ error: TandemClientError) {
        switch error {
        case .unreachable, .timedOut, .tls, .reconnecting:
            self.init(.unreachable, error.description)
        case .wrongSecret:
            self.init(.wrongSecret, error.description)
        case .sessionFull, .serverFull:
            self.init(.sessionFull, "\(error.description) — try again later, or ask the host to raise the limit")
        case .sessionEnded, .closed:
            self.init(.sessionEnded, "\(error.description) — ask the host for a new invite")
        case .noSuchSession:
            self.init(.sessionEnded, "\(error.description) — the session has ended or the invite is stale; ask the host for a new invite")
        case .protocolVersion:
            self.init(.failure, "\(error.description) — use the same Tandem version as the host")
        case .refused, .messageTooLarge, .unreliableMessageTooLarge, .rateLimited, .attachmentTooLarge:
            self.init(.failure, error.description)
        }
    }

    init(_ problem: InviteSource.Problem) {
        self.init(problem.kind == .usage ? .usage : .badInvite, problem.description)
    }

    init(_ error: InviteError) {
        self.init(.badInvite, error.description)
    }

    init(_ error: SessionServerError) {
        switch error {
        case .bindFailed(let host, let port, let detail):
            let inUse = detail.lowercased().contains("in use")
            self.init(.portInUse, inUse
                ? "port \(port) on \(host) is already in use — pick another with --port, or stop what is using it"
                : "cannot listen on \(host):\(port) (\(detail)) — pick another --port or --bind address")
        default:
            self.init(.failure, error.description)
        }
    }

    /// Any error from the libraries, mapped by its type (closures lose typed throws).
    init(_ error: any Error) {
        switch error {
        case let error as CLIError: self = error
        case let error as PlaybackError: self.init(error)
        case let error as TandemClientError: self.init(error)
        case let error as InviteError: self.init(error)
        case let problem as InviteSource.Problem: self.init(problem)
        case let error as SessionServerError: self.init(error)
        case let error as MissingSample: self.init(.badMedia, error.description)
        case let error as BenchError: self.init(.failure, error.description)
        case let error as InviteSetupError: self.init(error.kind == .malformed ? .badInvite : .failure, error.description)
        default: self.init(.failure, "\(error)")
        }
    }

    /// The session ended for this participant while it was taking part.
    init(ended reason: InvalidationReason) {
        self.init(.sessionEnded, "the session ended: \(reason.message)")
    }
}

/// Runs a command's body; an error becomes one line on standard error and its documented exit code (library
/// errors are mapped by their type).
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        let error = CLIError(error)
        printError("tandem: \(error.description)")
        throw error.exit.code
    }
}

/// The creation token in `path` (see `CreateToken.read`).
func readCreateToken(_ path: String) throws(CLIError) -> String {
    do { return try CreateToken.read(path) } catch { throw CLIError(.usage, "--create-token-file: \(error)") }
}
