import Synchronization
import TandemCore

/// What an operator watches on a server: its levels now (sessions, participants, connections, bytes held) and
/// what it has counted since it started (messages delivered, refusals by reason).
///
/// The server keeps these itself, in `ServerCounters` and in the state its bounds already track; reading them
/// (`SessionServer.statistics`) takes a lock or two and no event loop. Publishing them — Prometheus, a log line, a
/// test's expectation — is its reader's business: the server binds no metrics system.
public struct ServerStatistics: Sendable, Hashable {
    /// Whether the server accepts connections (false once it is shutting down).
    public var accepting: Bool
    /// How long the server has been running.
    public var uptime: TimeSpan
    /// Sessions hosted now.
    public var sessions: Int
    /// Participants joined to them with an open connection.
    public var participants: Int
    /// Connections open, authenticated or not, and those of them that have not authenticated yet.
    public var connections: Int
    public var unauthenticatedConnections: Int
    /// Bytes queued for connections beyond what their sockets took.
    public var queuedOutboundBytes: Int
    /// Journal (attachment) bytes held across sessions.
    public var journalBytesHeld: Int64
    /// Session messages handed to a participant's connection (its queue or its datagram path), one per recipient.
    public var messagesDelivered: Int
    /// Connections and requests refused at a bound, by reason, since the server started (every reason present).
    public var refusals: [ServerRefusal: Int]
}

/// Why the server refused a connection, an authentication, a creation or a join: the refusals it logs, in few
/// enough kinds to count (a Prometheus label value each). The log line keeps the words and the numbers.
public enum ServerRefusal: String, CaseIterable, Sendable, Hashable, Comparable {
    /// The source address already holds `maxConnectionsPerAddress` connections.
    case connectionsPerAddress = "connections_per_address"
    /// The unauthenticated places were full and no idle connection could give way.
    case unauthenticatedFull = "unauthenticated_full"
    /// An idle unauthenticated connection was closed to make room for a newer one.
    case unauthenticatedEvicted = "unauthenticated_evicted"
    /// A wrong secret, or a session that does not exist (the two look alike on purpose).
    case authenticationFailed = "authentication_failed"
    /// A creation whose proof did not match the key it supplied.
    case creationWrongProof = "creation_wrong_proof"
    /// A creation without the server's creation token, or with a wrong one.
    case creationToken = "creation_token"
    /// An address over its sessions created per minute.
    case creationQuota = "creation_quota"
    /// A creation at `maxSessions`.
    case serverFull = "server_full"
    /// A creation of a session whose name is taken.
    case sessionExists = "session_exists"
    /// An address at its live sessions created (`maxSessionsPerAddress`).
    case sessionsPerAddress = "sessions_per_address"
    /// A creation refused otherwise (the server stopping, an invalid name).
    case creationFailed = "creation_failed"
    /// An authenticated connection for a session that has ended meanwhile.
    case sessionEnded = "session_ended"
    /// An authenticated connection over the session's connections waiting to join.
    case waitingToJoinFull = "waiting_to_join_full"

    /// The reason a failed creation is counted under.
    init(creationError error: SessionServerError) {
        switch error {
        case .serverFull: self = .serverFull
        case .sessionExists: self = .sessionExists
        case .tooManySessionsFromAddress: self = .sessionsPerAddress
        default: self = .creationFailed
        }
    }

    public static func < (a: ServerRefusal, b: ServerRefusal) -> Bool { a.rawValue < b.rawValue }
}

/// The counts a server keeps for its statistics, updated where things happen: relaxed atomics on the delivery
/// path (one addition per fan-out, not per recipient), a lock for refusals, which are rare.
final class ServerCounters: Sendable {
    private let participantCount = Atomic<Int>(0)
    private let deliveredCount = Atomic<Int>(0)
    private let refusalCounts = Mutex<[ServerRefusal: Int]>([:])

    func participantsChanged(by delta: Int) { participantCount.add(delta, ordering: .relaxed) }
    func delivered(_ count: Int) { deliveredCount.add(count, ordering: .relaxed) }
    func refused(_ reason: ServerRefusal) { refusalCounts.withLock { $0[reason, default: 0] += 1 } }

    var participants: Int { participantCount.load(ordering: .relaxed) }
    var messagesDelivered: Int { deliveredCount.load(ordering: .relaxed) }
    var refusals: [ServerRefusal: Int] {
        let counted = refusalCounts.withLock { $0 }
        return Dictionary(uniqueKeysWithValues: ServerRefusal.allCases.map { ($0, counted[$0] ?? 0) })
    }
}

extension SessionServer {
    /// Levels now and counts since the start, for an operator's health check and metrics. Any thread.
    public var statistics: ServerStatistics {
        ServerStatistics(accepting: isAccepting, uptime: clock.now - startedAt,
                         sessions: sessions.withLock { $0.count }, participants: counters.participants,
                         connections: connectionCount, unauthenticatedConnections: unauthenticatedConnectionCount,
                         queuedOutboundBytes: queuedOutboundBytes, journalBytesHeld: journalBytesHeld,
                         messagesDelivered: counters.messagesDelivered, refusals: counters.refusals)
    }

    /// Whether the server accepts connections: listening, and not shutting down.
    public var isAccepting: Bool { !stopped.withLock { $0 } && listener.isActive }
}
