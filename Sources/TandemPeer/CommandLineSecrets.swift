import Foundation

/// Secrets given as command-line arguments. Every user of the machine can read a process's arguments (`ps`,
/// `/proc/PID/cmdline`), so each such secret is warned about, naming the ways that keep it off the command line; the
/// command still runs. The ways: `join`'s invite from `--invite-file`, `-` (standard input) or `TANDEM_INVITE`;
/// `host`'s server from `--server-file` or `TANDEM_SERVER`; a Syncplay room's password from `--room-password-file`
/// or `TANDEM_ROOM_PASSWORD`.
package enum CommandLineSecrets {
    /// The environment variables that carry each secret instead of the command line.
    package static let inviteVariable = "TANDEM_INVITE"
    package static let serverVariable = "TANDEM_SERVER"
    package static let roomPasswordVariable = "TANDEM_ROOM_PASSWORD"

    private static let readable = "is on the command line, where every user of this machine can read it (ps, /proc/PID/cmdline)"

    /// Whether `text` (an invite, or a server's address) carries a session's secret: a non-empty `#fragment`.
    package static func holdsSecret(_ text: String) -> Bool {
        guard let hash = text.firstIndex(of: "#") else { return false }
        return !text[text.index(after: hash)...].trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
    }

    /// The warnings for where `join`'s invite, `host`'s server and a Syncplay room's password came from (nil: not
    /// given), in that order; none for a way off the command line, or for a value without a secret.
    package static func warnings(invite: InviteSource? = nil, server: InviteSource? = nil,
                                 roomPassword: InviteSource? = nil) -> [String] {
        var warnings: [String] = []
        if case .argument(let text) = invite, holdsSecret(text) {
            warnings.append("the invite's secret \(readable) — give the invite with --invite-file FILE, as - to read it "
                + "from standard input, or in \(inviteVariable)")
        }
        if case .argument(let text) = server, holdsSecret(text) {
            warnings.append("--server holds the session's secret (after #), which \(readable) — give it with "
                + "--server-file FILE or in \(serverVariable), or give only tandem://HOST:PORT (a new session gets a new secret)")
        }
        if case .argument = roomPassword {
            warnings.append("--room-password \(readable) — give it with --room-password-file FILE or in \(roomPasswordVariable)")
        }
        return warnings
    }
}

extension InviteSource {
    /// Where a secret option's value comes from: the option itself (`argument`), a file holding it (`file`), or the
    /// environment; nil when none gives it. `option` and `fileOption` name both options for the error when both are
    /// given.
    package static func option(_ option: String, argument: String?, fileOption: String, file: String?,
                               environment: String?) throws(PeerFailure) -> InviteSource? {
        switch (argument, file) {
        case (.some, .some):
            throw PeerFailure(.usage, "give \(option) one way: with \(option) or \(fileOption), not both")
        case (.some(let argument), nil):
            return .argument(argument)
        case (nil, .some(let file)):
            return .file(file)
        case (nil, nil):
            return environment.flatMap { $0.isEmpty ? nil : .environment($0) }
        }
    }
}
