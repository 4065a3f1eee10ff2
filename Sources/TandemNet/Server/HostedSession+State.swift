import Foundation
import Logging
import NIOCore
import TandemCore

/// What a hosted session needs to keep itself in the relay's `SessionStateStore`.
struct StateKeeping: Sendable {
    let store: any SessionStateStore
    /// The session's key, as kept (`StoredSession.key`).
    let key: Data
    /// Its directory in the spool (`StoredSession.spoolName`).
    let spoolName: String?
}

// Keeping a session across a restart of the relay (`SessionStateStore`; ARCHITECTURE.md, "A relay restart").
extension HostedSession {
    /// The session as the store keeps it.
    var stored: StoredSession? {
        guard let keeping else { return nil }
        return StoredSession(id: id, key: keeping.key, creator: creator, spoolName: keeping.spoolName,
                             authority: authority.snapshot,
                             accounted: accounted.mapValues { .init(address: $0.address, size: $0.size) })
    }

    /// Writes the session's state to the store (on `loop`, or before anyone can reach the session). A store that
    /// cannot write is logged and the session goes on: it would then not survive a restart.
    func persist() {
        guard let keeping, !ended, let stored else { return }
        do {
            try keeping.store.keep(stored)
        } catch {
            logger.error("cannot keep the session's state", metadata: ["session": "\(id)", "error": "\(error)"])
        }
    }

    /// Removes the session from the store (it ended).
    func forgetState() {
        guard let keeping else { return }
        do {
            try keeping.store.forget(session: id)
        } catch {
            logger.error("cannot remove the session's state", metadata: ["session": "\(id)", "error": "\(error)"])
        }
    }

    /// Continues a session restored from the store: its journal bytes counted again against the server's bounds,
    /// every member that was connected now disconnected within its grace period. On `loop`, before the server
    /// accepts connections.
    func resumeAfterRestart(accounted restored: [String: StoredSession.AccountedUpload]) {
        loop.preconditionInEventLoop()
        for (attachment, entry) in restored where authority.receivedBytes(ofAttachment: attachment) != nil {
            // Counted again even over a bound that shrank meanwhile: the bytes are there already.
            journal.ledger.restore(entry.size, for: entry.address)
            accounted[attachment] = (entry.address, entry.size)
        }
        hasBeenJoined = authority.memberCount > 0
        perform(authority.resumeAfterRestart(now: sessionNow))
    }
}

extension ClientMessage {
    var isLinkReport: Bool { if case .linkReport = self { true } else { false } }
}

extension JournalMessage {
    /// A chunk changes only an upload in progress, which a restored session drops (its running SHA-256 is gone):
    /// not worth a write per 64 KiB.
    var isChunk: Bool { if case .chunk = self { true } else { false } }
}

extension HostedSession {
    /// A fresh reconnect token: 16 bytes from the system's cryptographic random source, base64url without padding.
    static func newReconnectToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

extension HostedSession {
    /// Records that a participant has joined (called by the connection the session admitted).
    func noteJoined() {
        loop.preconditionInEventLoop()
        hasBeenJoined = true
    }

    /// Ends the session if nobody has joined it yet; returns whether it did.
    func expireIfUnjoined() -> Bool {
        loop.preconditionInEventLoop()
        guard !hasBeenJoined, !ended else { return false }
        shutdown(reason: InvalidationReason(code: .ended, message: "nobody joined the session in time"))
        return true
    }
}
