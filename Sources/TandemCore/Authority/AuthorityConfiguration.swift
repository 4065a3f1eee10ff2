/// Policies and limits of one session's authority. All durations are spans of session time.
public struct AuthorityConfiguration: Sendable, Hashable {
    /// Suspension reasons for which the group waits before starting (or pauses when they appear during play).
    public var suspensionReasonsThatTriggerWaiting: Set<SuspensionReason>
    /// When more participants than this hold a reason, the group stops waiting for that reason. Absent: no limit.
    public var participantLimitPerReason: [SuspensionReason: Int]
    /// How long the group waits for a participant that has not yet loaded the current item.
    public var firstLoadWaitingTimeout: TimeSpan
    /// How long the group waits for a participant that had loaded the item (re-buffering, preparing after a seek).
    public var rebufferWaitingTimeout: TimeSpan
    /// Safety margin added to every scheduled start (and to where a playing group stops).
    public var startMargin: TimeSpan
    /// The margin instead, when smaller, while the largest one-way delay is under `optimisticStartsFromOneWayDelay`
    /// (loopback, a LAN): there it only covers handing the command to every player, not a long path's jitter, and a
    /// start that reaches a prerolled player a little late is still made on its line
    /// (`PlaybackCoordinatorStateMachine.Configuration.lateStartAllowance`). Measured (`tandem bench sync --peers 4
    /// --link loopback --duration 180 --start-margin N`): with 8 ms play took 9 ms and a seek 29 (p50), none missed,
    /// the render skew as with 20 ms (play 21 ms, seek 33–37).
    public var shortLinkStartMargin = TimeSpan.milliseconds(8)
    /// The margin of where a playing group stops (a pause, a stall, a rate change made by stopping) on such links,
    /// when smaller than `startMargin`. Peers stop as the stop arrives, short of it, so it costs no latency; one that
    /// it reaches after that point has shown frames past it and the group resumes from where it got
    /// (`renderedPast`): so stops keep a wider margin than starts, which a player makes a little late on their line.
    public var shortLinkStopMargin = TimeSpan.milliseconds(20)
    /// Whether starts over longer links (a largest one-way delay of `optimisticStartsFromOneWayDelay` or more) take
    /// as their margin, instead of `startMargin`, the widest spread of the way from the authority to a participant
    /// (about the 99th percentile of its clock probes' answers' delay beyond the least, which every peer reports:
    /// `linkReport.returnDelaySpread`) combined in quadrature with `shortLinkStartMargin` (the root of the sum of
    /// their squares: the two are independent), up to `startMargin`. `startMargin` stays while anyone's spread is
    /// unknown (a browser page, an older peer). A link with little jitter then starts as soon as the command can have
    /// reached everyone: measured (`tandem bench sync --peers 4 --link wired|wan`), about 12 ms
    /// on `wired` (50 ms, an exponential jitter of 1 ms mean: play 114–116 ms from a joiner instead of 142–143, a seek
    /// 155–163 instead of 184–196) and 34–38 ms on `wan` (5 ms mean). Default true.
    public var marginFromDelaySpread = true
    /// The margin instead, when smaller, of a rate change every player makes in place (the new line continues the
    /// playing one): a player that such a change reaches a little late still switches without stopping and puts
    /// its frames back on the line (`PlaybackCoordinatorStateMachine.Configuration.inPlaceSwitchMargin`), so the
    /// margin only has to hand the change over, not to cover every delay's tail.
    public var rateSwitchMargin = TimeSpan.milliseconds(5)
    /// Whether a seek while playing, and a rate change someone's player cannot make in place, start at once on a
    /// schedule every peer can make (the largest one-way delay plus each peer's reported preroll time plus
    /// `startMargin`), instead of stopping the group until everyone has said it is prepared. A peer that cannot be
    /// ready by then says so (`SuspensionReason.missedStart`); the group then stops and starts together as before.
    /// With it, `missedStart` suspensions make the group wait. Default true; false gives the prepare round for
    /// every such command (`tandem bench sync --prepare-rounds` compares the two).
    public var optimisticStarts = true
    /// Whether starts are moved later, by less than a refresh, so that the line's frames fall on the refreshes of
    /// the displays that peers report (`ClientMessage.linkReport`'s `display`: browser pages, which show each frame
    /// on a refresh, send it). Without it a line falling halfway between two refreshes leaves such a page half a
    /// refresh (8.3 ms at 60 Hz) from the group at best. Costs a start up to one refresh, and only where someone
    /// reported a display. Default true.
    public var alignsStartsToDisplays = true
    /// Whether a start the requester proposes (`TimelineRequest.proposedStart`: a play, a seek that plays, a rate
    /// change every player makes in place) is kept when every other participant can make it. The requester starts itself at its proposal, so its own way
    /// back from the authority is not waited for: a command from a joiner whose link is the longest (one peer with
    /// the host, whose player runs beside the authority) starts a leg sooner. A proposal earlier than the others
    /// can make gives the earliest they can; one later than `maxProposedStartDelay` after the start the authority
    /// would schedule itself is ignored. Default true.
    public var honoursProposedStarts = true
    /// How much later than its own schedule a proposed start may be and still be kept: what one participant's
    /// proposals can delay a start by.
    public var maxProposedStartDelay = TimeSpan.seconds(1)
    /// Scheduled starts only when the largest one-way delay to the participants is at least this: on shorter
    /// links (loopback, a LAN) the prepare round's two extra legs cost less than the headroom a preroll estimate
    /// must keep over the preroll itself (measured: a seek on loopback 64 ms with the round, 86–100 ms scheduled).
    public var optimisticStartsFromOneWayDelay = TimeSpan.milliseconds(10)
    /// Whether a participant joining while the group plays makes the group wait for it.
    /// Default false: late joiners preroll at the projected position and join the running timeline.
    public var lateJoinersPauseGroup: Bool
    /// Most participants a session admits at once.
    public var maxParticipants: Int
    /// Whether the host leaving ends the session for everyone (an embedded server).
    public var endsWhenHostLeaves: Bool
    /// How long a participant whose connection dropped keeps its identity for a reconnect.
    public var reconnectGracePeriod: TimeSpan
    /// Largest app message payload in bytes.
    public var maxAppMessageSize: Int
    /// Sustained app messages per second per sender.
    public var appMessagesPerSecond: Int
    /// App messages a sender may send in a burst above the sustained rate.
    public var appMessageBurst: Int
    /// Largest journal attachment in bytes.
    public var maxAttachmentSize: Int64
    /// Most journal bytes one participant may have announced (in progress and committed). Default 200 MB.
    public var maxAttachmentBytesPerParticipant: Int64
    /// Most journal attachments one participant may have announced (in progress and committed). Default 32.
    public var maxAttachmentsPerParticipant: Int
    /// Most journal bytes the whole session holds (in progress and committed). Default 500 MB.
    public var maxAttachmentBytesPerSession: Int64
    /// Most journal attachments the whole session holds (in progress and committed). Default 128.
    public var maxAttachmentsPerSession: Int
    /// Whether the authority keeps attachments' bytes itself (default), or only their order and sizes while the
    /// transport keeps the bytes elsewhere (a server's spool files): then it replays stored chunks as
    /// `Action.sendStoredChunk`, for the transport to read when the recipient can take them.
    public var keepsAttachmentBytes = true
    /// Largest activity envelope (payload, metadata and identifiers, JSON-encoded) a participant may set.
    /// Default 64 KiB, so a maximal activity leaves a welcome far below the 1 MiB frame limit.
    public var maxActivitySize: Int
    /// Whether any participant may end the session for everyone. Default false: only the host may (everyone
    /// else leaves for themselves). SharePlay lets every participant end the activity for everyone.
    public var everyoneMayEndSession: Bool
    /// Whether any participant may change the activity. Default false: only the host may. SharePlay lets
    /// every participant start a new activity.
    public var everyoneMayChangeActivity: Bool
    /// Whether any participant may remove journal attachments of others. Default false: the owner and the host
    /// may. SharePlay's journal lets every participant remove attachments.
    public var everyoneMayRemoveAttachments: Bool
    /// A participant whose item duration differs from the reference by more than this is flagged.
    public var mediaDurationTolerance: TimeSpan
    /// Whether a participant that has not reported its readiness yet counts as loading (an implicit
    /// `.loading` suspension). Default true, so a joiner is not skipped before its first report arrives.
    public var treatsUnreportedReadinessAsLoading: Bool
    /// The queue's bounds and how long the group waits at the end of an item. Editing the queue (add, remove,
    /// move) is the host's unless `everyoneMayChangeActivity`; moving the group between entries is everyone's,
    /// as play, pause and seek are.
    public var queue = QueuePolicy()
    /// The rate range, rate and seek steps, and where a seek past the item lands: enforced here and announced in the
    /// welcome (`SessionSnapshot.playbackLimits`), so every participant decides its user's intents with them.
    public var playback = PlaybackLimits()

    public init() {
        suspensionReasonsThatTriggerWaiting = [.loading, .stallRecovery, .userChangingTime, .userActionRequired]
        participantLimitPerReason = [:]
        firstLoadWaitingTimeout = 30_000_000_000
        rebufferWaitingTimeout = 10_000_000_000
        startMargin = 40_000_000
        lateJoinersPauseGroup = false
        maxParticipants = 32
        endsWhenHostLeaves = true
        reconnectGracePeriod = 35_000_000_000
        maxAppMessageSize = 256 * 1024
        appMessagesPerSecond = 100
        appMessageBurst = 200
        maxAttachmentSize = 100_000_000
        maxAttachmentBytesPerParticipant = 200_000_000
        maxAttachmentsPerParticipant = 32
        maxAttachmentBytesPerSession = 500_000_000
        maxAttachmentsPerSession = 128
        maxActivitySize = 64 * 1024
        everyoneMayEndSession = false
        everyoneMayChangeActivity = false
        everyoneMayRemoveAttachments = false
        mediaDurationTolerance = 1_500_000_000
        treatsUnreportedReadinessAsLoading = true
    }

    /// What participants other than the host may do, as the welcome announces it.
    public var rules: SessionRules {
        SessionRules(everyoneMayEndSession: everyoneMayEndSession, everyoneMayChangeActivity: everyoneMayChangeActivity,
                     everyoneMayRemoveAttachments: everyoneMayRemoveAttachments)
    }

    /// This configuration with the host's roles (ending the session, changing the activity, removing others'
    /// attachments) given to every participant, as SharePlay does.
    public var withHostRolesForEveryone: AuthorityConfiguration {
        var copy = self
        copy.everyoneMayEndSession = true
        copy.everyoneMayChangeActivity = true
        copy.everyoneMayRemoveAttachments = true
        return copy
    }
}

extension AuthorityConfiguration {
    /// Queue bounds and end-of-item policy. Kept apart from the stored properties above so that `init()` lists
    /// the defaults in one place for each group.
    public struct QueuePolicy: Sendable, Hashable {
        /// Most entries the session's queue holds.
        public var maxEntries = 100
        /// Most bytes the queue's entries take, JSON-encoded (each entry's activity is also bounded like any
        /// activity), so that a full queue leaves a welcome far below the 1 MiB frame limit.
        public var maxBytes = 256 * 1024
        /// Once the first participant reports the end of an item, how long the group waits for the others to
        /// report it before going on without them.
        public var endOfItemGrace = TimeSpan.seconds(5)
        public init() {}
    }
}
