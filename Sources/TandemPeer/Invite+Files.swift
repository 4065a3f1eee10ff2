import Foundation
import Tandem

extension Invite {
    /// Writes the invite and a newline to `path`, which only its owner may read or write (mode 0600, also when the
    /// file existed before).
    package func save(toPrivateFile path: String) throws(PeerFailure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PeerFailure(.failure, "cannot write the invite to \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else {
            throw PeerFailure(.failure, "cannot make \(path) private: \(String(cString: strerror(errno)))")
        }
        let bytes = Array((description + "\n").utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            guard n > 0 else {
                throw PeerFailure(.failure, "cannot write the invite to \(path): \(String(cString: strerror(errno)))")
            }
            written += n
        }
    }

    /// The invite for a session on a standalone server: `text` is a full invite (reused as it is) or a server
    /// address `tandem://HOST[:PORT][/SESSION]` (a fresh session name and secret are made up where missing).
    package static func forNewSession(onServer text: String) throws(PeerFailure) -> Invite {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let invite = try? Invite(parsing: trimmed) { return invite }
        guard var components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
              scheme == "tandem" || scheme == "tandems", !(components.host ?? "").isEmpty else {
            throw PeerFailure(.badInvite,
                           "--server \"\(text)\" is not a server address — use tandem://HOST:PORT (or tandems:// for TLS)")
        }
        let fresh = Invite.random(host: "localhost", port: Invite.defaultPort)
        if components.path.split(separator: "/").isEmpty { components.path = "/" + fresh.session }
        if (components.fragment ?? "").isEmpty { components.fragment = fresh.secret }
        do {
            return try Invite(parsing: components.string ?? trimmed)
        } catch {
            throw PeerFailure(.badInvite, "--server: \(error.description)")
        }
    }
}
