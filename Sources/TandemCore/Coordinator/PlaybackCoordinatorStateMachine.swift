import Foundation

/// The peer side of coordinated playback, as a pure value: no clock reads, no I/O, no concurrency.
///
/// Inputs are server messages, engine outcomes and events, the user's intents, local suspensions and periodic
/// ticks; every input carries `now` on the peer's **local** monotonic clock, and the state machine turns it into
/// session time with the latest clock mapping it was given. Outputs are `Action`s the driver carries out: messages
/// to the authority, engine commands (run in order; their outcomes come back through `engineCompleted`), and
/// events for the app.
///
/// How it plays: local requests go to the authority, which orders them into timeline generations. A playing
/// generation is applied at its scheduled session time (prepare at the anchor, then
/// `play(from: anchorItem, atSessionTime: anchorSession)`), or, when that time is already too close or past
/// (a late joiner, a resync), the peer prerolls at the projected position and joins the running timeline alone.
/// This is the only place a start moves: an engine that cannot make the start it was given refuses it
/// (`PlaybackError.startMissed`), and the state machine plans a later one, allowing more time after each miss.
/// A paused or waiting generation makes the peer preroll at the anchor and report `.prepared(generation)`.
public struct PlaybackCoordinatorStateMachine: Sendable {
    /// Tunables.
    public struct Configuration: Sendable, Hashable {
        /// Local suspensions with these reasons are sent to the authority (the group may wait); others only hold
        /// this peer back, which rejoins the running timeline when they end.
        public var suspensionReasonsThatTriggerWaiting: Set<SuspensionReason> = [.loading, .stallRecovery,
                                                                                  .missedStart, .userChangingTime]
        /// How long the engine typically takes to preroll; `PlaybackEngine.prerollEstimate`.
        public var prerollEstimate: TimeSpan = .milliseconds(300)
        /// How far ahead of a start the engine must be prerolled (it refuses closer starts): added to the measured
        /// preroll times this peer reports to the authority.
        public var startHandover: TimeSpan = .milliseconds(5)
        /// Extra time added to the preroll when this peer joins a running timeline on its own.
        public var joinMargin: TimeSpan = .milliseconds(100)
        /// How far ahead of its anchor a line that continues the playing one (a rate change) must still be for an
        /// engine that changes rate in place (`MediaInfo.changesRateInPlace`) to be given it; negative, how far past
        /// the anchor it may already be (such an engine switches at once and puts its frames back on the line;
        /// `GStreamerPlayer` does up to 130 ms late, while the correction stays within 50 ms). Later than this, the
        /// peer joins the new line on its own like a late joiner. The anchor is only 5 ms beyond the farthest one-way
        /// delay (`AuthorityConfiguration.rateSwitchMargin`), so a stall or a retransmission on the way makes a change
        /// late: at −30 ms, one in a few two-minute runs on 50 ms links then froze one peer's picture for 230–370 ms
        /// (a flush and a join) where switching late costs a frame or two.
        public var inPlaceSwitchMargin: TimeSpan = .milliseconds(-120)
        /// How far past its start a start may already be when it reaches an engine prerolled where it starts: the
        /// engine is given it anyway and starts on the line, leaving out what is already past (`GStreamerPlayer`
        /// does up to 40 ms late; an engine that cannot throws `startMissed`). Later than this the peer joins alone.
        /// It is what lets a start after a prepare round have a short margin (`AuthorityConfiguration
        /// .shortLinkStartMargin`): one that arrives a few milliseconds late costs a frame, not a lone join.
        public var lateStartAllowance: TimeSpan = .milliseconds(30)
        /// The drift watchdog resynchronises when the engine strays further than this from the timeline…
        public var driftThreshold: TimeSpan = .milliseconds(20)
        /// …for at least this long.
        public var driftPersistence: TimeSpan = .seconds(1)
        /// The watchdog leaves a fresh start alone for this long.
        public var driftSettleTime: TimeSpan = .milliseconds(500)
        /// How often the peer reports its one-way delay and clock error to the authority.
        public var linkReportInterval: TimeSpan = .seconds(1)
        /// Durations further apart than this count as different media.
        public var mediaDurationTolerance: TimeSpan = .milliseconds(1_500)
        /// How long after a stop arrives the engine may still render: the stop goes through the command queue
        /// and a flush.
        public var stopAllowance: TimeSpan = .milliseconds(10)
        /// How long a local pause holds playback back while its generation is on its way.
        public var localPauseHold: TimeSpan = .seconds(3)
        /// Whether this peer proposes the start of its own plays and seeks (`TimelineRequest.proposedStart`) and
        /// starts itself then, instead of waiting for the timeline to come back (+Proposals.swift). Default true.
        public var proposesStarts = true
        /// Proposals only where this peer's one-way delay to the authority is at least this: over shorter links a
        /// seek has a prepare round (`AuthorityConfiguration.optimisticStartsFromOneWayDelay`, 10 ms) and a play
        /// would save a few milliseconds.
        public var proposesStartsFromOneWayDelay: TimeSpan = .milliseconds(15)
        /// Proposals only where they start at least this much sooner than the authority's own schedule would
        /// (this peer's way back is the longest): elsewhere they save nothing and only risk a start the authority
        /// moves, which this peer would then join alone.
        public var proposesStartsSaving: TimeSpan = .milliseconds(10)
        /// The most a proposal adds to its delays and prerolls, and what it adds while someone's spread is unknown:
        /// the authority's start margin over long links (`AuthorityConfiguration.startMargin`).
        public var proposedStartMargin: TimeSpan = .milliseconds(40)
        /// Added to the widest spread everyone reported, as the authority does (`AuthorityConfiguration
        /// .shortLinkStartMargin`), with this peer's own spread for the request's way there (`proposalMargin`).
        public var proposedStartSlack: TimeSpan = .milliseconds(8)
        /// The margin of a proposed rate change every player makes in place: the authority's for such a switch
        /// (`AuthorityConfiguration.rateSwitchMargin`); a player the switch reaches late makes it at once and
        /// corrects.
        public var proposedRateSwitchMargin: TimeSpan = .milliseconds(5)
        /// How long this peer follows a start it proposed without an answer from the authority.
        public var proposalHold: TimeSpan = .seconds(2)
        /// Whether this peer also sends its proposals straight to the participants it reaches without the
        /// authority (`directPaths`), counting those shorter ways in its proposals, and follows the proposals
        /// others send it that way (`receiveDirect`). Default true.
        public var directProposals = true
        /// How far from now a start sent straight to this peer may be, either way, to be followed.
        public var directProposalWindow: TimeSpan = .seconds(2)
        public init() {}
    }

    /// What the driver should do.
    public enum Action: Hashable, Sendable {
        case send(ClientMessage)
        /// Run `command` on the engine after every earlier engine command, then report its outcome with `id`.
        case engine(id: UInt64, EngineCommand)
        case event(CoordinatorEvent)
        /// The authority refused one of this coordinator's requests (a timeline request or a suspension); tell the
        /// caller (`PlaybackCoordinator.refusals`).
        case refused(Refusal)
        /// Send this peer's proposed start straight to these participants too (`SessionLink.sendDirect(_:to:)`).
        case sendDirect(DirectProposal, to: [ParticipantID])
    }

    /// What the engine was last told to do (commands are assumed to land in order).
    enum EngineTarget: Hashable, Sendable {
        case idle
        case prepared(itemTime: ItemTime, rate: Double)
        case playing(Line)
        case paused
    }

    /// A playing timeline's line: session time → item time.
    typealias Line = ItemProjection

    public var configuration: Configuration

    // Session state.
    public internal(set) var localParticipantID: ParticipantID?
    public internal(set) var timeline: Timeline?
    public internal(set) var activity: ActivityEnvelope?
    /// The session's queue, as the authority last described it.
    public internal(set) var queue: SessionQueue?
    /// Everyone else, as the authority last described them.
    public internal(set) var otherParticipants: [ParticipantState] = []
    public internal(set) var invalidation: InvalidationReason?
    /// The latest clock-sync estimate (local → session).
    public internal(set) var clockMapping: ClockMapping?
    /// The rate range and steps the authority announced in its welcome (`PlaybackLimits()` from one that announces
    /// none): the intents (`togglePlayPause`, `seek(by:)`, `stepRate(up:)`…) decide with them.
    public internal(set) var limits = PlaybackLimits()

    // Engine state (CoordinatorStates.swift).
    /// The item the engine holds, and its media information.
    var loaded: LoadedItem = .none
    public var loadedItemID: String? { loaded.itemID }
    public var mediaInfo: MediaInfo? { loaded.info }
    /// A load in flight, or the item that could not be loaded.
    var load: ItemLoad = .none
    var target: EngineTarget = .idle
    var nextCommandID: UInt64 = 1
    /// The latest load, prepare, play or pause (clock mappings need no outcome).
    var lastCommandID: UInt64 = 0
    var preroll: Preroll = .none
    var start: StartState = .none
    var reportedPreparedGeneration: UInt64?
    /// Starts in a row the engine was ready too late for (`PlaybackError.startMissed`); each one makes the next
    /// late join allow more time.
    var missedStarts = 0
    var stall: StallState = .flowing
    var recovery: StallRecovery = .none
    // Scheduled starts (+Starts.swift): the playing generation to start on schedule, the suspension held after
    // missing one, and the measured preroll times reported to the authority.
    var scheduledStart: UInt64?
    var scheduledStartPlay: UInt64?
    var missedStartSuspension: UInt64?
    var readyTimes = ReadyTimes()
    var readyTiming: (command: UInt64, issuedAt: LocalInstant)?
    var reportedPrerollEstimate: TimeSpan?
    /// How much the way from the authority to this peer spreads (`SessionLink.returnDelaySpread`), as the link last
    /// measured it; link reports carry it when it moved by a millisecond or more since the authority last heard it.
    public var returnDelaySpread: TimeSpan?
    var reportedReturnDelaySpread: TimeSpan?
    /// Engine commands given and not yet reported on (clock mappings need no report).
    var commandsInFlight = 0

    // Suspensions.
    var nextSuspension: UInt64 = 1
    var suspensions: [UInt64: SuspensionReason] = [:]

    // Requests.
    var nextRequestID: UInt64 = 1
    var pauseHold: LocalPauseHold = .none
    /// A start this peer proposed, followed until the authority answers (+Proposals.swift).
    var provisional: ProvisionalStart?
    /// This peer as the authority last described it (its one-way delay, for proposals).
    var ownState: ParticipantState?
    /// The others this peer reaches without the authority (`SessionLink.directPaths()`), set by the coordinator.
    public var directPaths: [DirectPath] = []
    /// How many starts others sent straight to this peer it followed (`receiveDirect`).
    public internal(set) var directProposalsFollowed = 0

    // Watchdog and reports.
    var drift: DriftWatch = .steady
    /// How many times the drift watchdog resynchronised this peer.
    public internal(set) var resyncCount = 0
    var lastLinkReport: LocalInstant?
    /// The generation whose end this peer reported reaching.
    var reportedEndGeneration: UInt64?
    var flaggedMedia: Set<ParticipantID> = []

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    // MARK: Queries

    /// The item time the group should be rendering at session time `t` (nil before the first timeline).
    public func expectedItemTime(atSessionTime t: SessionInstant) -> ItemTime? {
        timeline?.expectedItemTime(atSessionTime: t)
    }

    /// The reasons of the suspensions this peer holds now.
    public var localSuspensionReasons: [SuspensionReason] {
        suspensions.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Participants whose media differs from ours (by content id or duration).
    public var participantsWithDifferentMedia: Set<ParticipantID> { flaggedMedia }

    /// Session time at local time `now`, when the clock is synchronised.
    public func sessionTime(atLocal now: LocalInstant) -> SessionInstant? {
        clockMapping?.sessionTime(atLocal: now)
    }

    // MARK: Server messages

    /// Feeds one message from the authority.
    public mutating func receive(_ message: ServerMessage, now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        guard invalidation == nil else { return actions }
        switch message {
        case .welcome(let snapshot):
            // A second welcome comes from a reconnect: the authority kept the identity but forgot this peer's
            // suspensions and preroll acknowledgement with the lost connection, so they are reported again.
            let rejoining = localParticipantID != nil
            localParticipantID = snapshot.localParticipant.id
            limits = snapshot.playbackLimits ?? PlaybackLimits()
            if let env = snapshot.activity, !rejoining || env != activity {
                activity = env
                actions.append(.event(.activityChanged(env)))
            }
            updateParticipants(snapshot.participants, into: &actions)
            if let queue = snapshot.queue { updateQueue(queue, into: &actions) }
            if rejoining { reannounce(into: &actions) }
            if let tl = snapshot.timeline { accept(tl, into: &actions) }
        case .timeline(let tl):
            // A playing generation that reaches a peer following the group is a start it is expected to make —
            // unless it ends a wait where the group stood (everyone had prepared there): a peer that gets that
            // restart late joins alone as before, rather than stop everyone again (on a lossy link, a stop and a
            // restart that both travel slowly would repeat).
            let previous = timeline
            let following = previous.map { tl.generation > $0.generation } ?? false
            let proposed = provisional != nil
            accept(tl, into: &actions)
            if following {
                var restartAfterWait = false
                if let previous, case .waiting = previous.status {
                    restartAfterWait = previous.itemID == tl.itemID && previous.anchorItemTime == tl.anchorItemTime
                }
                scheduledStart = tl.isPlaying && !restartAfterWait ? tl.generation : nil
            }
            // The answer to a start this peer proposed: it began that start itself (or missed it, and said so); a
            // start the authority moved is joined alone rather than held against the group.
            if proposed && provisional == nil { scheduledStart = nil }
        case .participants(let states):
            updateParticipants(states, into: &actions)
        case .activity(let env):
            activity = env
            actions.append(.event(.activityChanged(env)))
            // The authority counts everyone as loading a new activity; an item already loaded here (the same item
            // again, e.g. twice in a row in the queue) is not loaded again, so say at once that it is ready.
            if case .loaded(env.itemID, let info) = loaded, load.item == nil {
                actions.append(.send(.readiness(.ready(info))))
            }
        case .queue(let queue):
            updateQueue(queue, into: &actions)
        case .notice(let notice):
            actions.append(.event(.notice(notice)))
        case .rejected(let requestID, let reason):
            // From an authority before refusals with codes: the same refusal, for callers of either kind.
            if requestID == pauseHold.request { pauseHold = .none }
            if requestID == provisional?.request { dropProvisional() }
            actions.append(.event(.requestRejected(requestID: requestID, reason: reason)))
            actions.append(.refused(Refusal(.invalid, reason, request: .timeline)))
        case .refused:
            // Only the refusals of this coordinator's own requests: the session's are `GroupSession.refusals`'.
            if let refusal = message.refusal, refusal.request == .timeline || refusal.request == .suspension {
                actions.append(.refused(refusal))
            }
            if message.refusal?.request == .timeline { dropProvisional() }
        case .invalidated(let reason):
            invalidation = reason
            if case .playing = target { issue(.pause, into: &actions); target = .paused }
            actions.append(.event(.invalidated(reason)))
            return actions
        case .clockPong, .appMessage, .resend, .journal:
            // Clock sync, messenger and journal traffic belong to other parts of the peer.
            break
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    /// After a reconnect: tells the authority again where this peer stands (readiness, the suspensions that make
    /// the group wait); the next reconcile acknowledges the current generation's preroll again.
    mutating func reannounce(into actions: inout [Action]) {
        if load.item != nil {
            actions.append(.send(.readiness(.loading(progress: nil))))
        } else if let info = loaded.info {
            actions.append(.send(.readiness(.ready(info))))
        }
        for (id, reason) in suspensions.sorted(by: { $0.key < $1.key })
        where reason != .loading && configuration.suspensionReasonsThatTriggerWaiting.contains(reason) {
            actions.append(.send(.suspension(.begin(id: id, reason: reason))))
        }
        reportedPreparedGeneration = nil
        reportedPrerollEstimate = nil
        reportedReturnDelaySpread = nil
        lastLinkReport = nil
    }

    mutating func accept(_ tl: Timeline, into actions: inout [Action]) {
        if let provisional {
            // Any word from the authority from the proposal's base on replaces what this peer assumed.
            guard tl.generation >= provisional.base.generation else { return }
            self.provisional = nil
        } else if let current = timeline, tl.generation <= current.generation {
            return
        }
        timeline = tl
        if let me = localParticipantID, tl.originator == me, pauseHold.request != nil { pauseHold = .none }
        drift = .steady
        actions.append(.event(.timelineChanged(tl)))
        if case .waiting(let who) = tl.status { actions.append(.event(.waiting(for: who))) }
    }

    mutating func updateQueue(_ queue: SessionQueue, into actions: inout [Action]) {
        guard queue != self.queue else { return }
        self.queue = queue
        actions.append(.event(.queueChanged(queue)))
    }

    mutating func updateParticipants(_ states: [ParticipantState], into actions: inout [Action]) {
        ownState = states.first { $0.participant.id == localParticipantID }
        let others = states.filter { $0.participant.id != localParticipantID }
        if others != otherParticipants {
            otherParticipants = others
            actions.append(.event(.otherParticipantsChanged(others)))
        }
        checkMedia(now: nil, into: &actions)
    }

    func isWaiting(_ tl: Timeline) -> Bool {
        if case .waiting = tl.status { return true } else { return false }
    }

    mutating func request(_ command: TimelineRequest.Command, now: LocalInstant) -> [Action] {
        guard invalidation == nil else { return [] }
        let id = nextRequestID
        nextRequestID += 1
        let req = TimelineRequest(requestID: id, command: command, basedOnGeneration: timeline?.generation ?? 0,
                                  requestedAtSessionTime: sessionTime(atLocal: now) ?? .zero)
        return [.send(.timelineRequest(req))]
    }
}
