import Foundation
import TandemCore

/// Where a relay keeps what its sessions need to continue after a restart (`tandem serve --state-dir`;
/// ARCHITECTURE.md, "A relay restart"). The server calls it on the sessions' event loops, synchronously, before
/// it sends what an input caused: what a peer was told is on disk first. Implementations serialise their own
/// writes (several loops call at once) and must not call back into the server.
public protocol SessionStateStore: Sendable {
    /// The sessions an earlier run of the server kept, to host again. Called once, before the server listens.
    func storedSessions() throws(SessionStateError) -> [StoredSession]
    /// Keeps `session` (created, or its state changed): replaces what was kept under its id.
    func keep(_ session: StoredSession) throws(SessionStateError)
    /// Forgets the session `id` (it ended).
    func forget(session id: String) throws(SessionStateError)
}

/// One session as a `SessionStateStore` keeps it.
public struct StoredSession: Sendable, Codable {
    public var id: String
    /// The key proofs of the session's secret are checked with (`SHA-256(secret)`): whoever holds it can join.
    public var key: Data
    /// The address of the client that created the session remotely (nil: created in-process).
    public var creator: String?
    /// The name of the session's directory in the attachment spool (nil without a spool).
    public var spoolName: String?
    /// The authority's state (nil: not written yet, a session nobody has joined).
    public var authority: AuthoritySnapshot?
    /// Journal bytes this session holds, per attachment: the address its upload came from and its announced size
    /// (so the server-wide bounds count them again after a restart).
    public var accounted: [String: AccountedUpload]

    public struct AccountedUpload: Sendable, Codable, Hashable {
        public var address: String
        public var size: Int64
        public init(address: String, size: Int64) {
            self.address = address
            self.size = size
        }
    }

    public init(id: String, key: Data, creator: String?, spoolName: String?, authority: AuthoritySnapshot?,
                accounted: [String: AccountedUpload]) {
        self.id = id
        self.key = key
        self.creator = creator
        self.spoolName = spoolName
        self.authority = authority
        self.accounted = accounted
    }
}

/// What went wrong with the relay's state; the message says what the operator can do.
public struct SessionStateError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
