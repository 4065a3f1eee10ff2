import Foundation
import Tandem

/// What a failure means for the person, and the documented exit code `tandem` ends with for it (docs/SCRIPTING.md, "Errors and exit codes").
package enum TandemExit: Int32, CaseIterable, Sendable {
    case ok = 0
    /// Internal failure that is not the user's doing.
    case failure = 1
    /// Bad command line (argument-parser's own code).
    case usage = 64
    /// The media file is missing, not media, or cannot be played.
    case badMedia = 3
    /// The server cannot be reached.
    case unreachable = 4
    /// The invite was refused: a wrong secret, or a session the server does not have (the server gives both the
    /// same answer, so that session names cannot be probed).
    case wrongSecret = 5
    /// The invite is malformed.
    case badInvite = 6
    /// The session is full.
    case sessionFull = 7
    /// The session has ended (or the server shut down).
    case sessionEnded = 8
    /// The port is in use or cannot be bound.
    case portInUse = 9

    package static let documentation = """
        Exit codes:
          0 ok · 1 internal failure · 3 bad media file · 4 server unreachable
          5 invite refused · 6 malformed invite · 7 session full
          8 session ended · 9 port in use · 64 bad usage
        """
}

/// A failure told to the person as one line — what went wrong and what to do about it — with its kind. Bad input
/// from the person (an invite, a playlist, a token file, a media file) and the libraries' errors (mapped by their
/// type, with advice added) all end up as one of these.
package struct PeerFailure: Error, CustomStringConvertible, Equatable {
    package let exit: TandemExit
    package let description: String

    package init(_ exit: TandemExit, _ message: String) {
        self.exit = exit
        self.description = message
    }

    /// A media file Tandem cannot use.
    package init(_ error: PlaybackError) {
        switch error {
        case .engineFailure: self.init(.failure, error.description)
        default: self.init(.badMedia, error.description)
        }
    }

    /// A session that could not be reached or joined.
    package init(_ error: TandemClientError) {
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

    package init(_ error: InviteError) {
        self.init(.badInvite, error.description)
    }

    package init(_ error: SessionServerError) {
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

    /// Any error, mapped by its type (closures lose typed throws); what is not known is an internal failure.
    package init(_ error: any Error) {
        switch error {
        case let error as PeerFailure: self = error
        case let error as PlaybackError: self.init(error)
        case let error as TandemClientError: self.init(error)
        case let error as InviteError: self.init(error)
        case let error as SessionServerError: self.init(error)
        case let error as MissingSample: self.init(.badMedia, error.description)
        default: self.init(.failure, "\(error)")
        }
    }

    /// The session ended for this participant while it was taking part.
    package init(ended reason: InvalidationReason) {
        self.init(.sessionEnded, "the session ended: \(reason.message)")
    }
}
