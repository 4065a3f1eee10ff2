import Foundation

// The session protocol between a peer and the session authority, independent of transport.
// TandemNet frames these over TCP (see docs/PROTOCOL.md); TandemTesting carries them over a simulated network.
// Connection-level concerns (hello, authentication, heartbeats) belong to the transport, not here.
// Times are typed (`LocalInstant`, `SessionInstant`, `ItemTime`, `TimeSpan`) and encode as bare nanoseconds, so the
// bytes on the wire are the same plain numbers docs/PROTOCOL.md shows.

/// Four-timestamp clock exchange: the peer stamps `t1` (local send), the authority stamps `t2` (receive) and
/// `t3` (send) on session time, the peer stamps `t4` (local receive) when the pong arrives.
public struct ClockPing: Hashable, Sendable, Codable {
    public var sequence: UInt32
    /// The peer's local clock when it sent the ping.
    public var t1: LocalInstant
    public init(sequence: UInt32, t1: LocalInstant) {
        self.sequence = sequence
        self.t1 = t1
    }
}

public struct ClockPong: Hashable, Sendable, Codable {
    public var sequence: UInt32
    /// Echoed from the ping: the peer's local clock when it sent it.
    public var t1: LocalInstant
    /// Session time when the authority received the ping, and when it sent the pong.
    public var t2: SessionInstant
    public var t3: SessionInstant
    public init(sequence: UInt32, t1: LocalInstant, t2: SessionInstant, t3: SessionInstant) {
        self.sequence = sequence
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
    }
}

/// A participant's request to change the shared timeline.
public struct TimelineRequest: Hashable, Sendable, Codable {
    public enum Command: Hashable, Sendable, Codable {
        case play
        /// Pause; everyone snaps to `itemTime` (the originator's position when it paused).
        case pause(itemTime: ItemTime)
        /// Seek; `play` says whether to play once everyone has prerolled at the new time.
        case seek(itemTime: ItemTime, play: Bool)
        case rate(Double)
    }
    /// Chosen by the requester to match rejections and measure latency.
    public var requestID: UInt64
    public var command: Command
    /// The generation the requester saw when it asked (for diagnostics; the authority orders regardless).
    public var basedOnGeneration: UInt64
    /// Session time at which the requester made the request (its own estimate), for latency figures.
    public var requestedAtSessionTime: SessionInstant
    /// Set by a connection that sends the request twice, over its stream and as a datagram (a number it gives each
    /// such request, from 1 up): the authority's side acts on whichever copy comes first, once. Absent on the wire
    /// otherwise.
    public var copy: UInt64?
    /// For a play or a seek that plays: the session time the requester proposes to start at, and starts at itself
    /// without waiting for the timeline to come back (`PlaybackCoordinatorStateMachine.Configuration
    /// .proposesStarts`). The authority keeps it when every other participant can make it, or schedules the
    /// earliest they can; it ignores one more than `AuthorityConfiguration.maxProposedStartDelay` after the start
    /// it would schedule itself. Absent on the wire otherwise.
    public var proposedStart: SessionInstant?
    /// With a proposed start: the participants the requester also sent it to straight (`DirectProposal`), and the
    /// one-way delay of its way to each as it measured it. The authority counts those participants' way from the
    /// request's time (`requestedAtSessionTime`) along that path where it is shorter than the way from itself.
    /// Absent on the wire otherwise.
    public var direct: [DirectPath]?

    public init(requestID: UInt64, command: Command, basedOnGeneration: UInt64, requestedAtSessionTime: SessionInstant) {
        self.requestID = requestID
        self.command = command
        self.basedOnGeneration = basedOnGeneration
        self.requestedAtSessionTime = requestedAtSessionTime
    }
}

/// How app messages are delivered.
public enum MessageDelivery: String, Hashable, Sendable, Codable {
    /// In send order per sender, to every participant active at send time.
    case reliable
    /// Best effort: may be dropped, never blocks reliable traffic.
    case unreliable

    /// The largest plaintext payload of an unreliable message (bytes): what one UDP datagram carries without
    /// fragmenting, sealing and headers included. Larger ones are refused before sending; send them reliably.
    public static let maxUnreliableSize = 1200
}

/// Who an app message is for.
public enum Recipients: Hashable, Sendable, Codable {
    case all
    case only(Set<ParticipantID>)

    /// One participant, as SharePlay spells it (`.only(participant)`).
    public static func only(_ participant: Participant) -> Recipients { .only([participant.id]) }
    /// Some participants, as SharePlay spells it.
    public static func only(_ participants: Set<Participant>) -> Recipients { .only(Set(participants.map(\.id))) }
}

/// An app message a participant sends.
public struct OutgoingAppMessage: Hashable, Sendable, Codable {
    public var recipients: Recipients
    public var delivery: MessageDelivery
    /// A per-sender sequence number.
    public var sequence: UInt64
    /// The app's payload (the messenger's own encoding of a Codable value, or raw bytes).
    public var payload: Data
    public init(recipients: Recipients, delivery: MessageDelivery, sequence: UInt64, payload: Data) {
        self.recipients = recipients
        self.delivery = delivery
        self.sequence = sequence
        self.payload = payload
    }
}

/// An app message as delivered; the authority stamps `source`, so nobody can speak as someone else.
public struct IncomingAppMessage: Hashable, Sendable, Codable {
    public var source: ParticipantID
    public var delivery: MessageDelivery
    public var sequence: UInt64
    public var payload: Data
    public init(source: ParticipantID, delivery: MessageDelivery, sequence: UInt64, payload: Data) {
        self.source = source
        self.delivery = delivery
        self.sequence = sequence
        self.payload = payload
    }
}

/// Describes a journal attachment (the bytes travel separately, in chunks).
public struct AttachmentInfo: Hashable, Sendable, Codable, Identifiable {
    public var id: String
    public var owner: ParticipantID
    public var name: String
    public var size: Int64
    /// Lowercase hex SHA-256 of the whole attachment.
    public var sha256: String
    public init(id: String, owner: ParticipantID, name: String, size: Int64, sha256: String) {
        self.id = id
        self.owner = owner
        self.name = name
        self.size = size
        self.sha256 = sha256
    }
}

/// Journal traffic in either direction.
public enum JournalMessage: Hashable, Sendable, Codable {
    /// Announces an attachment; chunks follow in order, then `commit`.
    case begin(AttachmentInfo)
    case chunk(id: String, offset: Int64, bytes: Data)
    case commit(id: String)
    case remove(id: String)
    /// The attachment failed (bad checksum, too large, …); the text says why.
    case failed(id: String, reason: String)
    /// Authority → a participant that loads attachments lazily: a complete attachment it can `fetch`.
    case available(AttachmentInfo)
    /// Participant → authority: send me this complete attachment (`begin`, its chunks, `commit`), now.
    case fetch(id: String)
}

/// A participant's suspension, as sent to the authority.
public enum SuspensionUpdate: Hashable, Sendable, Codable {
    case begin(id: UInt64, reason: SuspensionReason)
    /// Ends a suspension; optionally proposes the item time the group should resume from.
    case end(id: UInt64, proposedItemTime: ItemTime?)
}

/// What the authority tells everyone about one participant.
public struct ParticipantState: Hashable, Sendable, Codable {
    public var participant: Participant
    public var readiness: Readiness
    /// Active suspension reasons (empty when none).
    public var suspensions: [SuspensionReason]
    /// Whether this participant hosts the session (its leaving ends the session for an embedded server).
    public var isHost: Bool
    /// Whether it has joined (`ClientMessage.takePart`); one that has not sees only the activity and the
    /// participants. Absent on the wire means joined.
    public var hasJoined: Bool
    /// The authority's estimate of the one-way delay to this participant.
    public var oneWayDelay: TimeSpan
    /// The participant's preroll estimate.
    public var prerollEstimate: TimeSpan
    /// The generation this participant has reported being prepared for, if any.
    public var preparedGeneration: UInt64?
    /// The participant's last reported render offset from the group's line (positive: ahead), if it reports one.
    /// Absent on the wire when none.
    public var renderOffset: TimeSpan?
    /// Whether it reported a display its frames land on (`linkReport.display`, a browser page): the authority moves
    /// starts onto its refreshes, so a start proposed by another participant (`TimelineRequest.proposedStart`) is
    /// put there by the proposer too (`display`), or not proposed where the list has no grid (an older server).
    /// Absent on the wire when false.
    public var reportsDisplay: Bool
    /// That display's grid as the authority has it (its refreshes, its media's frames): a proposed start is put on
    /// it as the authority would. The list is sent again when the grid it carried would put a refresh 0.25 ms or
    /// more from where the display now reports one (at most once a second). Absent on the wire when none.
    public var display: DisplayGrid?
    /// How much the way from the authority to it spreads, as it reported (`linkReport.returnDelaySpread`): the
    /// authority's start margin follows the widest, and so does a proposed start's. Absent on the wire when unknown.
    public var returnDelaySpread: TimeSpan?
    /// How long before a start it must have its timeline even when prerolled there, as it reported
    /// (`linkReport.startLatency`, a browser page's `play()`): the authority's starts from a prepared position
    /// allow for it, and so does a proposed start. Absent on the wire when none was reported.
    public var startLatency: TimeSpan?

    public init(participant: Participant, readiness: Readiness = .unknown, suspensions: [SuspensionReason] = [],
                isHost: Bool = false, oneWayDelay: TimeSpan = .zero, prerollEstimate: TimeSpan = .zero,
                preparedGeneration: UInt64? = nil, hasJoined: Bool = true, renderOffset: TimeSpan? = nil) {
        self.renderOffset = renderOffset
        self.reportsDisplay = false
        self.display = nil
        self.returnDelaySpread = nil
        self.startLatency = nil
        self.participant = participant
        self.hasJoined = hasJoined
        self.readiness = readiness
        self.suspensions = suspensions
        self.isHost = isHost
        self.oneWayDelay = oneWayDelay
        self.prerollEstimate = prerollEstimate
        self.preparedGeneration = preparedGeneration
    }

    private enum CodingKeys: String, CodingKey {
        case participant, readiness, suspensions, isHost, hasJoined, oneWayDelay, prerollEstimate, preparedGeneration
        case renderOffset, reportsDisplay, display, returnDelaySpread, startLatency
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(participant, forKey: .participant)
        try c.encode(readiness, forKey: .readiness)
        try c.encode(suspensions, forKey: .suspensions)
        try c.encode(isHost, forKey: .isHost)
        try c.encode(hasJoined, forKey: .hasJoined)
        try c.encode(oneWayDelay, forKey: .oneWayDelay)
        try c.encode(prerollEstimate, forKey: .prerollEstimate)
        try c.encodeIfPresent(preparedGeneration, forKey: .preparedGeneration)
        try c.encodeIfPresent(renderOffset, forKey: .renderOffset)
        if reportsDisplay { try c.encode(true, forKey: .reportsDisplay) }
        try c.encodeIfPresent(display, forKey: .display)
        try c.encodeIfPresent(returnDelaySpread, forKey: .returnDelaySpread)
        try c.encodeIfPresent(startLatency, forKey: .startLatency)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        participant = try c.decode(Participant.self, forKey: .participant)
        readiness = try c.decode(Readiness.self, forKey: .readiness)
        suspensions = try c.decode([SuspensionReason].self, forKey: .suspensions)
        isHost = try c.decode(Bool.self, forKey: .isHost)
        hasJoined = try c.decodeIfPresent(Bool.self, forKey: .hasJoined) ?? true
        oneWayDelay = try c.decode(TimeSpan.self, forKey: .oneWayDelay)
        prerollEstimate = try c.decode(TimeSpan.self, forKey: .prerollEstimate)
        preparedGeneration = try c.decodeIfPresent(UInt64.self, forKey: .preparedGeneration)
        renderOffset = try c.decodeIfPresent(TimeSpan.self, forKey: .renderOffset)
        reportsDisplay = try c.decodeIfPresent(Bool.self, forKey: .reportsDisplay) ?? false
        display = try c.decodeIfPresent(DisplayGrid.self, forKey: .display)
        returnDelaySpread = try c.decodeIfPresent(TimeSpan.self, forKey: .returnDelaySpread)
        startLatency = try c.decodeIfPresent(TimeSpan.self, forKey: .startLatency)
    }
}

/// An event worth showing to people ("bob paused at 12:31", "carol joined", "waiting for dave (buffering)").
public struct Notice: Hashable, Sendable, Codable {
    public enum Kind: String, Hashable, Sendable, Codable {
        case joined, left, played, paused, seeked, rateChanged, waiting, resumed, activityChanged
        case differentMedia, waitingTimedOut, limitExceeded, info
        /// Posted by an app (`GroupSession.showNotice`); `participant` is who posted it.
        case app
        /// Raised by the participant's own link, never sent: app data arrived altered (replayed, reordered, credited
        /// to another sender, or with messages left out) and was dropped. Said once per connection.
        case appDataAltered
    }
    public var kind: Kind
    public var participant: ParticipantID?
    public var text: String
    /// Session time at which it happened.
    public var sessionTime: SessionInstant
    /// Where in the app it happened, for a notice an app shows from a `GroupSessionEvent` (never sent).
    public var url: URL?
    public init(kind: Kind, participant: ParticipantID?, text: String, sessionTime: SessionInstant, url: URL? = nil) {
        self.kind = kind
        self.participant = participant
        self.text = text
        self.sessionTime = sessionTime
        self.url = url
    }

    private enum CodingKeys: String, CodingKey { case kind, participant, text, sessionTime }
}

/// Everything a (late) joiner needs to take part.
public struct SessionSnapshot: Hashable, Sendable, Codable {
    public var sessionID: String
    public var localParticipant: Participant
    public var activity: ActivityEnvelope?
    public var timeline: Timeline?
    public var participants: [ParticipantState]
    public var attachments: [AttachmentInfo]
    /// The secret that lets this participant (and only it) reconnect as itself; never shown to the others.
    public var reconnectToken: String?
    /// The session's queue (absent from servers before protocol version 3, and empty without one).
    public var queue: SessionQueue?
    /// What participants other than the host may do (absent from older authorities: then only the host may).
    public var rules: SessionRules?
    /// The rate range, the rate and seek steps and where a seek past the item lands (absent from older authorities:
    /// then `PlaybackLimits()`).
    public var playbackLimits: PlaybackLimits?
    public init(sessionID: String, localParticipant: Participant, activity: ActivityEnvelope?, timeline: Timeline?,
                participants: [ParticipantState], attachments: [AttachmentInfo], reconnectToken: String? = nil,
                queue: SessionQueue? = nil, rules: SessionRules? = nil, playbackLimits: PlaybackLimits? = nil) {
        self.playbackLimits = playbackLimits
        self.rules = rules
        self.queue = queue
        self.sessionID = sessionID
        self.localParticipant = localParticipant
        self.activity = activity
        self.timeline = timeline
        self.participants = participants
        self.attachments = attachments
        self.reconnectToken = reconnectToken
    }
}

/// Why a session ended for someone, in words a user can read.
public struct InvalidationReason: Hashable, Sendable, Codable, CustomStringConvertible, Error {
    public enum Code: String, Hashable, Sendable, Codable {
        case ended, hostLeft, serverShutdown, removed, sessionFull, authenticationFailed, protocolError
        case connectionLost, left
    }
    public var code: Code
    public var message: String
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }
}

/// Peer → authority.
public enum ClientMessage: Hashable, Sendable, Codable {
    /// First message after the transport has authenticated the peer. `reconnectAs` with the `reconnectToken` the
    /// welcome gave that participant takes its identity back (and its host role); without the right token the
    /// joiner gets a new identity.
    ///
    /// `waiting: true` (protocol 3) enters without taking part: the authority sends the activity and the
    /// participants only, until `takePart`. `lazyJournal: true` announces complete attachments as
    /// `journal(.available)` instead of sending their bytes; the participant `journal(.fetch)`es the ones it wants.
    ///
    /// To a server that offers resends (`accepted.appMessageResend`): `resends: true` says this peer keeps its last
    /// reliable app messages and answers `resend` requests; `received` (on a reconnect) says where it stands with
    /// each sender (`AppMessageMark`), so that each sends it again what it missed.
    case join(name: String, reconnectAs: ParticipantID?, reconnectToken: String? = nil, prerollEstimate: TimeSpan,
              waiting: Bool? = nil, lazyJournal: Bool? = nil, via: String? = nil, resends: Bool? = nil,
              received: [AppMessageMark]? = nil)
    /// Takes part after entering with `waiting`: the timeline, app messages, notices and the journal flow from now
    /// on (SharePlay's `join()`). A repeated one means nothing.
    case takePart
    case clockPing(ClockPing)
    case timelineRequest(TimelineRequest)
    case readiness(Readiness)
    /// The peer has prerolled for this timeline generation and can start on the authority's schedule.
    case prepared(generation: UInt64)
    /// When waiting generation `generation` reached the peer, it had already rendered up to `itemTime`, past the
    /// generation's stop: the group resumes from there, so nobody sees those frames twice.
    case renderedPast(generation: UInt64, itemTime: ItemTime)
    case suspension(SuspensionUpdate)
    case setActivity(ActivityEnvelope)
    case appMessage(OutgoingAppMessage)
    /// The answer to a `resend` request: the messages for `to` have been sent again (before this), and what this
    /// peer sends it from now on may go on.
    case resent(to: ParticipantID)
    case journal(JournalMessage)
    /// The peer's own estimate of its one-way delay and clock error, for scheduling and status. `renderOffset`
    /// (optional) is how far the peer's picture is from the group's line, as the peer measures it (positive:
    /// ahead); the authority passes it on in `ParticipantState` (browser pages send it, measured per frame).
    /// `prerollEstimate` (optional, sent when it changes) is how long this peer recently took from a timeline's
    /// arrival to being ready to start at a new position (seek and preroll): the authority schedules starts with it
    /// in place of the estimate the join carried. `returnDelaySpread` (optional, sent when it changes) is how much
    /// later than the least-delayed one this peer's clock probes' answers arrived, at about the 99th percentile of
    /// their jitter: the authority sizes the margin of starts over long links by it
    /// (`AuthorityConfiguration.marginFromDelaySpread`). `display` (optional) is where the peer's display refreshes
    /// and its media's frames fall: the authority puts the frames of new lines on those refreshes
    /// (`AuthorityConfiguration.alignsStartsToDisplays`; browser pages send it). `startLatency` (optional, sent when
    /// it changes) is how long before a start this peer must have its timeline even when prerolled where it starts
    /// (a browser's `play()` takes 80–100 ms to show its first frame; a GStreamer pipeline starts on a clock time and
    /// sends none): the authority schedules starts from a prepared position that much ahead for it.
    case linkReport(oneWayDelay: TimeSpan, errorBound: TimeSpan, renderOffset: TimeSpan? = nil,
                    prerollEstimate: TimeSpan? = nil, returnDelaySpread: TimeSpan? = nil, display: DisplayGrid? = nil,
                    startLatency: TimeSpan? = nil)
    /// An app's notice for everyone (`GroupSession.showNotice`): one line, bounded and rate-limited like app
    /// messages; everyone receives it as a `notice` of kind `app`.
    case notice(text: String)
    /// Changes the session's queue, or moves the group to another of its entries.
    case queue(QueueRequest)
    /// The peer's player reached the end of the item of timeline generation `generation`; once everyone has, the
    /// group goes on to the queue's next entry (or pauses at the end of the last).
    case reachedEnd(generation: UInt64)
    case leave
    /// Ends the session for everyone.
    case end
}

/// Authority → peer.
public enum ServerMessage: Hashable, Sendable, Codable {
    case welcome(SessionSnapshot)
    case clockPong(ClockPong)
    case timeline(Timeline)
    case participants([ParticipantState])
    case activity(ActivityEnvelope)
    /// The session's queue changed (entries, order or the entry that plays).
    case queue(SessionQueue)
    case appMessage(IncomingAppMessage)
    /// The receiver `participant` has this peer's reliable app messages up to these numbers: send it the later ones
    /// this peer still keeps, to it alone, then `resent(to:)` (only to a peer that joined with `resends`).
    case resend(AppMessageMark)
    case journal(JournalMessage)
    case notice(Notice)
    /// A timeline request could not be honoured; the text says why. Sent by older authorities (a seek past the end,
    /// an invalid rate); current ones clamp seeks to the item and refuse rates with `refused` (`.invalid`).
    case rejected(requestID: UInt64, reason: String)
    /// A request was refused (not the host's, not joined, size, rate…); the text says why, `code` what kind of
    /// refusal and `request` which kind of request (both absent from authorities before them). See `Refusal`.
    case refused(reason: String, code: Refusal.Code? = nil, request: Refusal.Request? = nil)
    case invalidated(InvalidationReason)
}

extension ServerMessage {
    /// `refusal` on the wire.
    public static func refused(_ refusal: Refusal) -> ServerMessage {
        .refused(reason: refusal.reason, code: refusal.code, request: refusal.request)
    }

    /// The refusal this message carries, if it is one (`.other` for an authority that gives no code).
    public var refusal: Refusal? {
        guard case .refused(let reason, let code, let request) = self else { return nil }
        return Refusal(code ?? .other, reason, request: request)
    }
}
