/// A start one participant proposed (`TimelineRequest.proposedStart`), sent straight to the peers it reaches
/// without the authority (`SessionLink.sendDirect(_:to:)`) beside the request itself: a peer that gets it follows
/// the proposed start at once, as its proposer does, until the authority's next timeline (which keeps the start, or
/// names another that replaces it) — so a command from one joiner reaches another joiner in one leg, not two.
///
/// A proposal is only a hint: it is followed only on the generation it was made from, on the item loaded here, by a
/// peer that is not itself waiting on a proposal; without the authority's word within
/// `PlaybackCoordinatorStateMachine.Configuration.proposalHold` the peer goes back to the timeline it had.
public struct DirectProposal: Hashable, Sendable, Codable {
    /// Who proposed it (the transport checks it names the sender of its way).
    public var from: ParticipantID
    /// The proposer's request (`TimelineRequest.requestID`).
    public var requestID: UInt64
    /// The proposed timeline: the authority's generation it was made from, with the proposed start as its anchor.
    public var timeline: Timeline

    public init(from: ParticipantID, requestID: UInt64, timeline: Timeline) {
        self.from = from
        self.requestID = requestID
        self.timeline = timeline
    }
}

/// A way to another participant that does not cross the authority (peers that reach each other's datagrams), with
/// the one-way delay this peer measured on it.
public struct DirectPath: Hashable, Sendable, Codable {
    public var participant: ParticipantID
    public var oneWayDelay: TimeSpan

    public init(participant: ParticipantID, oneWayDelay: TimeSpan) {
        self.participant = participant
        self.oneWayDelay = oneWayDelay
    }

    /// The longest direct delay a request may name (`TimelineRequest.direct`); longer ones are taken as no way.
    public static let maxOneWayDelay = TimeSpan.seconds(1)
    /// The most direct paths a request names.
    public static let maxPerRequest = 32
}
