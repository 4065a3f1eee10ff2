import ArgumentParser

/// Documented exit codes of `tandem` (see README "Exit codes").
enum TandemExit: Int32, CaseIterable {
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

    var code: ExitCode { ExitCode(rawValue) }

    static let documentation = """
        Exit codes:
          0 ok · 1 internal failure · 3 bad media file · 4 server unreachable
          5 invite refused · 6 malformed invite · 7 session full
          8 session ended · 9 port in use · 64 bad usage
        """
}

/// An error the CLI reports as one line on stderr with a documented exit code.
struct CLIError: Error, CustomStringConvertible {
    let exit: TandemExit
    let description: String
    init(_ exit: TandemExit, _ message: String) {
        self.exit = exit
        self.description = message
    }
}
