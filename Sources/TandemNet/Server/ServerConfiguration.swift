import Foundation
import TandemCore

/// Limits and timings of a `SessionServer`.
public struct ServerConfiguration: Sendable {
    /// The rules each hosted session's authority applies (participants, grace period, message limits).
    public var authority: AuthorityConfiguration
    /// Sessions this server hosts at once; creating one more fails with `serverFull`.
    public var maxSessions: Int = 1_000
    /// Largest frame (kind + body) accepted; bigger announcements are refused before anything is allocated.
    public var maxFrameSize: Int = 1 << 20
    /// Heartbeat period.
    public var heartbeatInterval: TimeSpan = .milliseconds(500)
    /// Silence after which a peer is considered gone. Keep well under 3 s.
    public var heartbeatTimeout: TimeSpan = .seconds(2)
    /// A connection that has not finished authenticating (TLS handshake included) after this long is closed.
    public var handshakeTimeout: TimeSpan = .seconds(3)
    /// Frames per second a connection may send before it is closed as a flood.
    public var maxFramesPerSecond: Int = 2_000
    /// Whether clients may create sessions themselves (`hello.create`). Off for embedded servers, where the
    /// hosting process creates its session in-process; on for a standalone relay.
    public var allowsRemoteSessionCreation: Bool = false
    /// Largest frame a peer may send before it has authenticated (hello, proof); bigger ones are refused with
    /// `frameTooLarge` before anything is buffered. `maxFrameSize` applies once the server has sent `accepted`.
    public var maxUnauthenticatedFrameSize: Int = 4 * 1024
    /// Connections that have not authenticated yet, in all; one more is closed at once (before TLS).
    public var maxUnauthenticatedConnections: Int = 512
    /// Connections from one source address that have not authenticated yet. When this (or
    /// `maxUnauthenticatedConnections`) is full, the address's idle connection that has shown least gives way to
    /// the newcomer (`ConnectionAdmission`).
    public var maxUnauthenticatedConnectionsPerAddress: Int = 16
    /// Connections from one source address, authenticated or not; one more is closed at once. A household behind
    /// one NAT address fits many times over; raise it for a relay whose users share a carrier-grade NAT.
    public var maxConnectionsPerAddress: Int = 64
    /// An authenticated connection must send its `join` (as a participant, or waiting to read the activity) this
    /// long after `accepted`, or it is closed.
    public var joinTimeout: TimeSpan = .seconds(10)
    /// Authenticated connections of one session that have not sent their `join` yet; one more is refused.
    public var maxWaitingToJoinPerSession: Int = 16
    /// When set, a client creating a session must present this token (`authProof.createToken`).
    public var createToken: String?
    /// Sessions one source address may create per minute (remote creation only).
    public var sessionCreationsPerMinute: Int = 10
    /// Live sessions one source address may have created (remote creation); one more is refused.
    public var maxSessionsPerAddress: Int = 4
    /// Journal bytes (attachments in progress and complete) that uploads from one source address may hold on this
    /// server across all its sessions; each session's own quotas apply too.
    public var maxJournalBytesPerAddress: Int64 = 256 << 20
    /// Journal bytes this server holds in all its sessions.
    public var maxJournalBytes: Int64 = ServerConfiguration.defaultJournalBudget
    /// Where journal attachments are kept: files in a private directory under this one (`AttachmentSpool`), or
    /// the server's memory when nil (an embedded server's default).
    public var spoolDirectory: String?
    /// Where sessions are kept across a restart of the server (`tandem serve --state-dir`); nil: they live as
    /// long as the process. With a store, the spool is kept too (`spoolDirectory` is then used as it is, not
    /// per process) and stopping the server leaves sessions to the next start instead of ending them.
    public var stateStore: (any SessionStateStore)?

    /// Where a standalone server spools attachments unless told otherwise: `$TMPDIR/tandem-spool-UID`.
    public static var defaultSpoolDirectory: String {
        let temporary = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return temporary + "/tandem-spool-\(getuid())"
    }

    /// An eighth of this machine's memory, at least 64 MiB and at most 4 GiB.
    public static var defaultJournalBudget: Int64 {
        let eighth = Int64(clamping: ProcessInfo.processInfo.physicalMemory / 8)
        return min(max(eighth, 64 << 20), 4 << 30)
    }

    /// A remotely created session that nobody has joined after this long is removed.
    public var unjoinedSessionLifetime: TimeSpan = .seconds(60)
    /// Bytes queued for one connection beyond what the socket takes. Over it, unreliable app messages are
    /// dropped first; if that is not enough the connection is closed with `slowConsumer`. Journal replay
    /// (paced by the socket, its bytes shared with the journal) counts a fixed 64 bytes per message.
    public var maxQueuedBytesPerConnection: Int = 8 << 20
    /// Whether to bind a UDP socket beside the TCP listener (same address and port) for unreliable app messages.
    /// Without it, or when it cannot be bound, unreliable messages go over TCP.
    public var datagrams: Bool = true
    /// Authenticated datagrams one member may send per second (and in a burst); more are dropped and counted.
    public var datagramsPerSecond: Int = 1_000
    /// A member's UDP endpoint is used while its latest hello is at most this old.
    public var datagramEndpointTimeout: TimeSpan = .seconds(3)
    /// Take a datagram clock probe's receive time (its `t2`) from the kernel's stamp of its arrival rather than
    /// from the clock when the event loop reads it; falls back to the loop's reading wherever a stamp is missing
    /// (`DatagramStatistics.clockPingsKernelStamped` counts the stamped ones).
    public var kernelReceiveStamps: Bool = true
    /// With `kernelReceiveStamps`: send each datagram clock answer from a socket whose sends the kernel stamps, and
    /// follow it with that stamp (its `t3`) to a peer that asks; falls back to the answer's own `t3` wherever no stamp
    /// comes (`DatagramStatistics.clockPongsSendStamped` counts the stamped ones).
    public var kernelSendStamps: Bool = true
    /// Event-loop threads (the server's sessions are spread over them; each session lives on one).
    public var threads: Int = 1
    /// The browser page and its WebSocket endpoint on the same port (nil: the native protocol only).
    public var web: WebConfiguration?
    /// Pass the byte ranges of the host's shared items between it and its joiners (`serve --relay-media`), sealed
    /// end to end, within these bounds (nil: every request is refused with words that say what to do).
    public var relayMedia: RelayMediaConfiguration?
    /// Sees (and may replace) every shared-media chunk the relay passes on, for tests that play a relay reading or
    /// altering them.
    package var mediaTap: (@Sendable (Frame) -> Frame)?

    public init(authority: AuthorityConfiguration = AuthorityConfiguration()) {
        self.authority = authority
    }
}

/// Certificate and key files (PEM) for a TLS server.
public struct ServerTLSFiles: Sendable, Hashable {
    public var certificateChainPath: String
    public var privateKeyPath: String
    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

/// Why the server refused something, in words the user can act on.
public enum SessionServerError: Error, Hashable, Sendable, CustomStringConvertible {
    case serverFull(limit: Int)
    case sessionExists(String)
    case invalidSessionID(String)
    case bindFailed(host: String, port: Int, detail: String)
    case tls(String)
    case notRunning
    case tooManySessionsFromAddress(limit: Int)
    case spool(String)
    case state(String)

    public var description: String {
        switch self {
        case .serverFull(let limit): return "the server already hosts its limit of \(limit) sessions; end one or raise --max-sessions"
        case .sessionExists(let id): return "a session named \(id) already exists on this server; pick another name"
        case .invalidSessionID(let id): return "\"\(id)\" is not a valid session name (1–64 of A–Z a–z 0–9 - _ .)"
        case .bindFailed(let host, let port, let detail): return "cannot listen on \(host):\(port): \(detail)"
        case .tls(let detail): return "TLS setup failed: \(detail)"
        case .notRunning: return "the server has shut down"
        case .tooManySessionsFromAddress(let limit):
            return "this address already has \(limit) live sessions on this server; end one before creating another"
        case .spool(let detail): return "attachment spool: \(detail)"
        case .state(let detail): return "relay state: \(detail)"
        }
    }
}

/// What happened to datagrams on a server's UDP socket (`SessionServer.datagramStatistics`).
public struct DatagramStatistics: Sendable, Hashable {
    /// Datagrams accepted (authenticated, fresh, within the sender's rate) and sent.
    public var received: Int
    public var sent: Int
    /// Dropped: larger than the largest datagram accepted (2048 bytes).
    public var oversized: Int
    /// Dropped: not a Tandem datagram (magic, version, type, length, body).
    public var malformed: Int
    /// Dropped: no connection has the channel id.
    public var unknownChannel: Int
    /// Dropped: the tag does not verify with the channel's key (forged or altered).
    public var badAuthentication: Int
    /// Dropped: a sequence number already seen or older than the replay window.
    public var replayed: Int
    /// Dropped: over the member's datagram rate.
    public var rateLimited: Int
    /// Clock probes answered, and of those the ones whose receive time is the kernel's stamp.
    public var clockPingsAnswered: Int
    public var clockPingsKernelStamped: Int
    /// Clock answers whose departure the kernel stamped, each followed by that stamp (to peers that ask for it).
    public var clockPongsSendStamped: Int
    /// Copies of timelines sent as datagrams beside their TCP frames (to members that asked for them).
    public var timelineCopies: Int
    /// Copies of timeline requests received as datagrams (each acted on only when it came before its TCP frame).
    public var requestCopies: Int
    /// Lists of direct peers sent, answering hellos that shared their endpoint (`DatagramHelloFlags.direct`).
    public var directLists: Int

    /// Every datagram dropped, whatever the reason.
    public var rejected: Int { oversized + malformed + unknownChannel + badAuthentication + replayed + rateLimited }

    init(_ counters: DatagramRelay.Counters) {
        received = counters.received
        sent = counters.sent
        oversized = counters.oversized
        malformed = counters.malformed
        unknownChannel = counters.unknownChannel
        badAuthentication = counters.badAuthentication
        replayed = counters.replayed
        rateLimited = counters.rateLimited
        clockPingsAnswered = counters.clockPingsAnswered
        clockPingsKernelStamped = counters.clockPingsKernelStamped
        clockPongsSendStamped = counters.clockPongsSendStamped
        timelineCopies = counters.timelineCopies
        requestCopies = counters.requestCopies
        directLists = counters.directLists
    }
}
