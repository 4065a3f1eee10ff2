import TandemCore

/// Which path a connection's unreliable app messages take (`TandemClientConnection.unreliablePath`).
public enum UnreliablePath: Sendable, Hashable, CustomStringConvertible {
    /// As UDP datagrams to the server's port: they never wait behind the TCP stream.
    case udp
    /// Over the TCP connection, and why (no UDP offered, no answer to the UDP hellos, answers stopped).
    case tcp(reason: String)

    public var description: String {
        switch self {
        case .udp: return "udp"
        case .tcp(let reason): return "tcp (\(reason))"
        }
    }
}

/// The state of a connection's datagrams (`TandemClientConnection.datagramStatus`).
public struct DatagramStatus: Sendable, Hashable {
    public var path: UnreliablePath
    /// Datagrams sent (hellos included) and accepted.
    public var sent = 0
    public var received = 0
    /// Of those, the unreliable app messages.
    public var messagesSent = 0
    public var messagesReceived = 0
    /// Datagrams dropped: from another address, forged, replayed, malformed.
    public var rejected = 0
    /// Times the path fell back to TCP after UDP had worked.
    public var fallbacks = 0
    /// Clock probes sent as datagrams, and their answers received (each a clock sample).
    public var clockPingsSent = 0
    public var clockPongsReceived = 0
    /// Of those answers, the ones whose arrival is the kernel's stamp rather than the event loop's reading.
    public var clockPongsKernelStamped = 0
    /// Copies of timelines received as datagrams (the server sends each timeline over TCP as well), and how many of
    /// them were acted on because they came first; the rest were left for the TCP copy (`TimelineCopies`).
    public var timelinesReceived = 0
    public var timelinesTaken = 0
    /// Timeline requests sent as datagrams too (beside their TCP frames, to a server that takes them).
    public var requestsSent = 0
    /// Clock probes whose departure (`t1`) is the kernel's transmit stamp; answers whose departure (`t3`) is, from
    /// the stamp the server sent after them; and samples with both (`ClockSample.departure` `.kernel`).
    public var clockPingsSendStamped = 0
    public var clockPongStampsTaken = 0
    public var clockSamplesSendStamped = 0
    /// Direct paths (`TandemClient.Options.directPaths`): the peers the server listed, those whose path is up (a
    /// pong within the last 3 s), the direct datagrams sent and accepted, those dropped (unlisted channel, forged,
    /// replayed, over the peer's rate, malformed, a proposal naming another participant than its sender), and the
    /// proposals accepted.
    public var directPeers = 0
    public var directPathsUp = 0
    public var directSent = 0
    public var directReceived = 0
    public var directRejected = 0
    public var directProposalsReceived = 0

    /// Where the clock answers' arrival times come from: `kernel` once any answer was kernel-stamped, `user`
    /// otherwise (no stamps on this system, or a clock other than CLOCK_MONOTONIC).
    public var clockStamps: ClockStampSource { clockPongsKernelStamped > 0 ? .kernel : .user }
    /// Where the send times come from: `kernel` once any sample had both departures stamped by the kernels,
    /// `user` otherwise.
    public var sendStamps: ClockStampSource { clockSamplesSendStamped > 0 ? .kernel : .user }
}
