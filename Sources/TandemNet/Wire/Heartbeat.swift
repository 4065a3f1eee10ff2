import TandemCore

/// The heartbeat rule both sides of a connection follow (docs/PROTOCOL.md, "Heartbeats").
enum Heartbeat {
    /// Whether a heartbeat tick sends a ping. A ping tells the peer we are here and asks it to say the same; neither
    /// is needed while frames flow both ways — one went out since the last tick and one came in within the
    /// interval. A peer that only answers pings is asked again at the latest one interval after its last answer.
    static func shouldPing(sentSinceLastTick: Bool, silence: TimeSpan, interval: TimeSpan) -> Bool {
        !sentSinceLastTick || silence >= interval
    }
}
