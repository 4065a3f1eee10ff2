/// The session authority: a pure state machine that owns one session's timeline, participants, messages and
/// journal. The transport feeds it messages and connection events with the authority's own monotonic time
/// (`now`, which *is* session time) and carries out the actions it returns.
public struct SessionAuthority: Sendable {
    /// What the transport must do.
    public enum Action: Sendable, Hashable {
        /// Deliver a message. The transport may drop `.appMessage` with `.unreliable` delivery under load.
        case send(ServerMessage, to: ParticipantID)
        /// The transport sends `.invalidated(reason)` to this participant and then closes its connection.
        /// The authority does not send that `.invalidated` message separately.
        case close(ParticipantID, InvalidationReason)
        /// Call `timerFired(now:)` at or after this session time (a later `wakeUp` replaces an earlier one).
        case wakeUp(at: Int64)
        /// Everyone was told; the host can drop this session.
        case sessionEnded(InvalidationReason)
    }

    /// The answer to a join.
    public enum JoinOutcome: Sendable {
        case joined(ParticipantID, [Action])
        case refused(InvalidationReason)
    }

    public let sessionID: String
    public let configuration: AuthorityConfiguration
    /// The current activity, if any.
    public private(set) var activity: ActivityEnvelope?
    /// The current timeline.
    public private(set) var timeline: Timeline

    public init(sessionID: String, activity: ActivityEnvelope?, configuration: AuthorityConfiguration, now: Int64) {
        self.sessionID = sessionID
        self.activity = activity
        self.configuration = configuration
        self.timeline = Timeline(generation: 1, itemID: activity?.itemID ?? "", rate: 1, anchorSessionTime: now,
                                 anchorItemTime: 0, status: .paused)
    }

    /// The connected participants, in join order.
    public var participants: [ParticipantState] { [] }

    public mutating func join(name: String, reconnectAs: ParticipantID?, prerollEstimate: Int64, isHost: Bool,
                              now: Int64) -> JoinOutcome {
        .refused(InvalidationReason(code: .protocolError, message: "not implemented yet"))
    }

    public mutating func receive(_ message: ClientMessage, from: ParticipantID, now: Int64) -> [Action] { [] }

    /// The participant's connection dropped: it keeps its identity for the grace period, but its suspensions are
    /// released and the group stops waiting for it at once.
    public mutating func connectionLost(_ id: ParticipantID, now: Int64) -> [Action] { [] }

    public mutating func timerFired(now: Int64) -> [Action] { [] }

    /// Invalidates everyone (e.g. the server stops).
    public mutating func shutdown(reason: InvalidationReason, now: Int64) -> [Action] { [] }
}
