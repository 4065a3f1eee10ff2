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
/// A paused or waiting generation makes the peer preroll at the anchor and report `.prepared(generation)`.
public struct PlaybackCoordinatorStateMachine: Sendable {
    /// Tunables.
    public struct Configuration: Sendable, Hashable {
        /// Local suspensions with these reasons are sent to the authority (the group may wait); others only hold
        /// this peer back, which rejoins the running timeline when they end.
        public var suspensionReasonsThatTriggerWaiting: Set<SuspensionReason> = [.loading, .stallRecovery,
                                                                                  .userChangingTime]
        /// How long the engine typically takes to preroll (ns); `PlaybackEngine.prerollEstimate`.
        public var prerollEstimate: Int64 = 300_000_000
        /// Extra time (ns) added to the preroll when this peer joins a running timeline on its own.
        public var joinMargin: Int64 = 100_000_000
        /// The drift watchdog resynchronises when the engine strays further than this from the timeline (ns)…
        public var driftThreshold: Int64 = 20_000_000
        /// …for at least this long (ns).
        public var driftPersistence: Int64 = 1_000_000_000
        /// The watchdog leaves a fresh start alone for this long (ns).
        public var driftSettleTime: Int64 = 500_000_000
        /// How often the peer reports its one-way delay and clock error to the authority (ns).
        public var linkReportInterval: Int64 = 1_000_000_000
        /// Durations further apart than this (ns) count as different media.
        public var mediaDurationTolerance: Int64 = 1_500_000_000
        /// How long after a stop arrives the engine may still render (ns): the stop goes through the command queue
        /// and a flush.
        public var stopAllowance: Int64 = 10_000_000
        /// How long a local pause holds playback back while its generation is on its way (ns).
        public var localPauseHold: Int64 = 3_000_000_000
        public init() {}
    }

    /// What the driver should do.
    public enum Action: Hashable, Sendable {
        case send(ClientMessage)
        /// Run `command` on the engine after every earlier engine command, then report its outcome with `id`.
        case engine(id: UInt64, EngineCommand)
        case event(CoordinatorEvent)
    }

    /// What the engine was last told to do (commands are assumed to land in order).
    enum EngineTarget: Hashable, Sendable {
        case idle
        case prepared(itemTime: Int64, rate: Double)
        case playing(Line)
        case paused
    }

    /// A playing timeline's line: session time → item time.
    typealias Line = ItemProjection

    public var configuration: Configuration

    // Session state.
    public private(set) var localParticipantID: ParticipantID?
    public private(set) var timeline: Timeline?
    public private(set) var activity: ActivityEnvelope?
    /// Everyone else, as the authority last described them.
    public private(set) var otherParticipants: [ParticipantState] = []
    public private(set) var invalidation: InvalidationReason?
    /// The latest clock-sync estimate (local → session).
    public private(set) var clockMapping: ClockMapping?

    // Engine state.
    public private(set) var loadedItemID: String?
    public private(set) var mediaInfo: MediaInfo?
    private var loadingItemID: String?
    private var target: EngineTarget = .idle
    private var nextCommandID: UInt64 = 1
    private var lastCommandID: UInt64 = 0
    private var pendingLoadID: UInt64?
    private var pendingPrepare: (id: UInt64, itemTime: Int64, rate: Double)?
    private var confirmedPrepared: (itemTime: Int64, rate: Double)?
    private var reportedPreparedGeneration: UInt64?
    private var pendingPlayID: UInt64?
    private var playConfirmedAt: Int64?
    private var engineStalled = false
    /// The item the engine could not load; not retried until the activity names another one.
    private var failedItemID: String?

    // Suspensions.
    private var nextSuspension: UInt64 = 1
    private var suspensions: [UInt64: SuspensionReason] = [:]
    private var stallSuspension: UInt64?
    /// After a stall while the group waits: the prepare at the group's stop, and the stall suspension that stays
    /// open until it completes.
    private var recovery: (command: UInt64, suspension: UInt64, generation: UInt64)?
    private var loadingSuspension: UInt64?

    // Requests.
    private var nextRequestID: UInt64 = 1
    private var localPauseUntil: Int64?
    private var localPauseRequest: UInt64?

    // Watchdog and reports.
    private var driftSince: Int64?
    /// How many times the drift watchdog resynchronised this peer.
    public private(set) var resyncCount = 0
    private var lastLinkReport: Int64?
    private var flaggedMedia: Set<ParticipantID> = []

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    // MARK: Queries

    /// The item time the group should be rendering at session time `t` (nil before the first timeline).
    public func expectedItemTime(atSessionTime t: Int64) -> Int64? {
        timeline?.expectedItemTime(atSessionTime: t)
    }

    /// The reasons of the suspensions this peer holds now.
    public var localSuspensionReasons: [SuspensionReason] {
        suspensions.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Participants whose media differs from ours (by content id or duration).
    public var participantsWithDifferentMedia: Set<ParticipantID> { flaggedMedia }

    /// Session time at local time `now`, when the clock is synchronised.
    public func sessionTime(atLocal now: Int64) -> Int64? { clockMapping?.sessionTime(atLocal: now) }

    // MARK: Server messages

    /// Feeds one message from the authority.
    public mutating func receive(_ message: ServerMessage, now: Int64) -> [Action] {
        var actions: [Action] = []
        guard invalidation == nil else { return actions }
        switch message {
        case .welcome(let snapshot):
            // A second welcome comes from a reconnect: the authority kept the identity but forgot this peer's
            // suspensions and preroll acknowledgement with the lost connection, so they are reported again.
            let rejoining = localParticipantID != nil
            localParticipantID = snapshot.localParticipant.id
            if let env = snapshot.activity, !rejoining || env != activity {
                activity = env
                actions.append(.event(.activityChanged(env)))
            }
            updateParticipants(snapshot.participants, into: &actions)
            if rejoining { reannounce(into: &actions) }
            if let tl = snapshot.timeline { accept(tl, into: &actions) }
        case .timeline(let tl):
            accept(tl, into: &actions)
        case .participants(let states):
            updateParticipants(states, into: &actions)
        case .activity(let env):
            activity = env
            actions.append(.event(.activityChanged(env)))
        case .notice(let notice):
            actions.append(.event(.notice(notice)))
        case .rejected(let requestID, let reason):
            if requestID == localPauseRequest { localPauseUntil = nil; localPauseRequest = nil }
            actions.append(.event(.requestRejected(requestID: requestID, reason: reason)))
        case .invalidated(let reason):
            invalidation = reason
            if case .playing = target { issue(.pause, into: &actions); target = .paused }
            actions.append(.event(.invalidated(reason)))
            return actions
        case .clockPong, .appMessage, .journal, .refused:
            // Clock sync, messenger and journal traffic belong to other parts of the peer.
            break
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    /// After a reconnect: tells the authority again where this peer stands (readiness, the suspensions that make
    /// the group wait); the next reconcile acknowledges the current generation's preroll again.
    private mutating func reannounce(into actions: inout [Action]) {
        if loadingItemID != nil {
            actions.append(.send(.readiness(.loading(progress: nil))))
        } else if loadedItemID != nil, let info = mediaInfo {
            actions.append(.send(.readiness(.ready(info))))
        }
        for (id, reason) in suspensions.sorted(by: { $0.key < $1.key })
        where reason != .loading && configuration.suspensionReasonsThatTriggerWaiting.contains(reason) {
            actions.append(.send(.suspension(.begin(id: id, reason: reason))))
        }
        reportedPreparedGeneration = nil
        lastLinkReport = nil
    }

    private mutating func accept(_ tl: Timeline, into actions: inout [Action]) {
        if let current = timeline, tl.generation <= current.generation { return }
        timeline = tl
        if let me = localParticipantID, tl.originator == me, localPauseRequest != nil {
            localPauseUntil = nil
            localPauseRequest = nil
        }
        driftSince = nil
        actions.append(.event(.timelineChanged(tl)))
        if case .waiting(let who) = tl.status { actions.append(.event(.waiting(for: who))) }
    }

    private mutating func updateParticipants(_ states: [ParticipantState], into actions: inout [Action]) {
        let others = states.filter { $0.participant.id != localParticipantID }
        if others != otherParticipants {
            otherParticipants = others
            actions.append(.event(.otherParticipantsChanged(others)))
        }
        checkMedia(now: nil, into: &actions)
    }

    /// Flags every participant whose loaded item differs from ours: another content id, or a duration more than
    /// `mediaDurationTolerance` away.
    private mutating func checkMedia(now: Int64?, into actions: inout [Action]) {
        guard let mine = mediaInfo else { return }
        for state in otherParticipants {
            guard case .ready(let theirs) = state.readiness else { continue }
            var why: String?
            if let a = mine.contentID, let b = theirs.contentID, a != b {
                why = "a different file (content \(b.prefix(12)) here \(a.prefix(12)))"
            } else if let a = mine.duration, let b = theirs.duration, abs(a - b) > configuration.mediaDurationTolerance {
                why = String(format: "a file of a different length (%.1f s, here %.1f s)", Double(b) / 1e9,
                             Double(a) / 1e9)
            }
            let id = state.participant.id
            if let why {
                if flaggedMedia.insert(id).inserted {
                    let t = now.flatMap { sessionTime(atLocal: $0) } ?? 0
                    actions.append(.event(.notice(Notice(kind: .differentMedia, participant: id,
                                                         text: "\(state.participant.name) is playing \(why)",
                                                         sessionTime: t))))
                }
            } else {
                flaggedMedia.remove(id)
            }
        }
    }

    // MARK: User intents

    /// Asks the group to play.
    public mutating func play(now: Int64) -> [Action] {
        request(.play, now: now)
    }

    /// Pauses here at once and asks the group to stop at `currentItemTime` (this engine's position).
    public mutating func pause(currentItemTime: Int64, now: Int64) -> [Action] {
        var actions: [Action] = []
        if case .playing = target {
            issue(.pause, into: &actions)
            target = .paused
        }
        actions += request(.pause(itemTime: currentItemTime), now: now)
        localPauseRequest = nextRequestID - 1
        localPauseUntil = now + configuration.localPauseHold
        return actions
    }

    /// Asks the group to seek to `itemTime`; it keeps playing if it was.
    public mutating func seek(to itemTime: Int64, now: Int64) -> [Action] {
        let playing = timeline.map { $0.isPlaying || isWaiting($0) } ?? false
        return request(.seek(itemTime: max(0, itemTime), play: playing), now: now)
    }

    /// Asks the group to play at `rate` (> 0).
    public mutating func setRate(_ rate: Double, now: Int64) -> [Action] {
        guard rate.isFinite, rate > 0 else {
            return [.event(.engineFailed(.invalidRate(rate)))]
        }
        return request(.rate(rate), now: now)
    }

    private func isWaiting(_ tl: Timeline) -> Bool {
        if case .waiting = tl.status { return true } else { return false }
    }

    private mutating func request(_ command: TimelineRequest.Command, now: Int64) -> [Action] {
        guard invalidation == nil else { return [] }
        let id = nextRequestID
        nextRequestID += 1
        let req = TimelineRequest(requestID: id, command: command, basedOnGeneration: timeline?.generation ?? 0,
                                  requestedAtSessionTime: sessionTime(atLocal: now) ?? 0)
        return [.send(.timelineRequest(req))]
    }

    // MARK: Suspensions

    /// Holds this peer back for `reason`; the group waits too when the reason triggers waiting.
    public mutating func beginSuspension(for reason: SuspensionReason, now: Int64) -> (SuspensionID, [Action]) {
        var actions: [Action] = []
        let id = openSuspension(reason, into: &actions)
        reconcile(now: now, into: &actions)
        return (SuspensionID(id), actions)
    }

    /// Ends a suspension; `proposingNewTime` asks the group to resume from that item time.
    public mutating func endSuspension(_ id: SuspensionID, proposingNewTime: Int64? = nil, now: Int64) -> [Action] {
        var actions: [Action] = []
        closeSuspension(id.rawValue, proposing: proposingNewTime, into: &actions)
        reconcile(now: now, into: &actions)
        return actions
    }

    private mutating func openSuspension(_ reason: SuspensionReason, into actions: inout [Action]) -> UInt64 {
        let id = nextSuspension
        nextSuspension += 1
        suspensions[id] = reason
        // Loading travels as readiness, which the authority treats as the loading suspension.
        if reason != .loading, configuration.suspensionReasonsThatTriggerWaiting.contains(reason) {
            actions.append(.send(.suspension(.begin(id: id, reason: reason))))
        }
        actions.append(.event(.localSuspensionsChanged(localSuspensionReasons)))
        return id
    }

    private mutating func closeSuspension(_ id: UInt64, proposing: Int64?, into actions: inout [Action]) {
        guard let reason = suspensions.removeValue(forKey: id) else { return }
        if reason != .loading, configuration.suspensionReasonsThatTriggerWaiting.contains(reason) {
            actions.append(.send(.suspension(.end(id: id, proposedItemTime: proposing))))
        }
        actions.append(.event(.localSuspensionsChanged(localSuspensionReasons)))
    }

    // MARK: Engine

    /// Feeds the outcome of engine command `id`.
    public mutating func engineCompleted(_ id: UInt64, _ outcome: EngineOutcome, now: Int64) -> [Action] {
        var actions: [Action] = []
        switch outcome {
        case .loaded(let info):
            guard id == pendingLoadID, let item = loadingItemID else { break }
            pendingLoadID = nil
            loadingItemID = nil
            loadedItemID = item
            mediaInfo = info
            failedItemID = nil
            if id == lastCommandID { confirmedPrepared = (0, 1) }
            target = .prepared(itemTime: 0, rate: 1)
            actions.append(.send(.readiness(.ready(info))))
            if let s = loadingSuspension { closeSuspension(s, proposing: nil, into: &actions); loadingSuspension = nil }
            checkMedia(now: now, into: &actions)
        case .prepared(let itemTime):
            if let p = pendingPrepare, p.id == id {
                pendingPrepare = nil
                if id == lastCommandID { confirmedPrepared = (itemTime, p.rate) }
            }
            if recovery?.command == id { finishRecovery(prepared: id == lastCommandID, into: &actions) }
        case .playing:
            if id == pendingPlayID { pendingPlayID = nil; playConfirmedAt = now }
        case .paused:
            break
        case .failed(let error):
            if id == pendingLoadID {
                pendingLoadID = nil
                failedItemID = loadingItemID
                loadingItemID = nil
                actions.append(.send(.readiness(.failed(error.description))))
                if let s = loadingSuspension { closeSuspension(s, proposing: nil, into: &actions); loadingSuspension = nil }
            } else {
                // A failed prepare or play: forget what the engine was told so the next reconcile retries.
                target = .idle
                pendingPrepare = nil
                pendingPlayID = nil
                if recovery?.command == id { finishRecovery(prepared: false, into: &actions) }
            }
            actions.append(.event(.engineFailed(error)))
            return actions
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    /// Feeds an asynchronous engine event (buffering, stalls, errors).
    public mutating func engineEvent(_ event: PlaybackEngineEvent, now: Int64) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .stalled:
            beginStall(into: &actions)
        case .buffering(let percent):
            if percent < 100, case .playing = target { beginStall(into: &actions) }
            if percent >= 100 { endStall(into: &actions) }
        case .recovered:
            endStall(into: &actions)
        case .error(let error):
            actions.append(.event(.engineFailed(error)))
        case .loading, .ready, .endOfStream, .warning:
            break
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    private mutating func beginStall(into actions: inout [Action]) {
        guard !engineStalled else { return }
        engineStalled = true
        stallSuspension = openSuspension(.stallRecovery, into: &actions)
    }

    private mutating func endStall(into actions: inout [Action]) {
        guard engineStalled else { return }
        engineStalled = false
        // The engine froze while the timeline may have gone on: rejoin it from scratch.
        if case .playing = target { target = .idle }
        confirmedPrepared = nil
        defer { stallSuspension = nil }
        guard let suspension = stallSuspension else { return }
        if let tl = timeline, case .waiting = tl.status, tl.itemID == loadedItemID, loadingItemID == nil {
            // The group waits for us: preroll at its stop first and only then end the suspension (after saying
            // we are prepared), so the group restarts on that acknowledgement rather than on a worst-case
            // preroll estimate.
            issue(.prepare(itemTime: tl.anchorItemTime, rate: tl.rate), into: &actions)
            target = .prepared(itemTime: tl.anchorItemTime, rate: tl.rate)
            recovery = (lastCommandID, suspension, tl.generation)
        } else {
            closeSuspension(suspension, proposing: nil, into: &actions)
        }
    }

    /// Ends a stall suspension kept open while the engine prerolled at the group's stop.
    private mutating func finishRecovery(prepared: Bool, into actions: inout [Action]) {
        guard let current = recovery else { return }
        recovery = nil
        if prepared, let tl = timeline, tl.generation == current.generation {
            reportedPreparedGeneration = tl.generation
            actions.append(.send(.prepared(generation: tl.generation)))
        }
        closeSuspension(current.suspension, proposing: nil, into: &actions)
    }

    // MARK: Ticks

    /// Periodic input: the latest clock estimate, its quality, and the engine's real position (for the watchdog).
    public mutating func tick(now: Int64, mapping: ClockMapping?, clockQuality: (errorBound: Int64, roundTrip: Int64)?,
                              engineItemTime: Int64?) -> [Action] {
        var actions: [Action] = []
        guard invalidation == nil else { return actions }
        if let mapping, mapping != clockMapping {
            clockMapping = mapping
            actions.append(.engine(id: takeCommandID(), .setClockMapping(mapping)))
        }
        if let q = clockQuality,
           lastLinkReport.map({ now - $0 >= configuration.linkReportInterval }) ?? true {
            lastLinkReport = now
            actions.append(.send(.linkReport(oneWayDelay: q.roundTrip / 2, errorBound: q.errorBound)))
        }
        if let until = localPauseUntil, now >= until { localPauseUntil = nil; localPauseRequest = nil }
        watchdog(now: now, engineItemTime: engineItemTime, into: &actions)
        reconcile(now: now, into: &actions)
        return actions
    }

    private mutating func watchdog(now: Int64, engineItemTime: Int64?, into actions: inout [Action]) {
        guard let position = engineItemTime, let tl = timeline, tl.isPlaying, case .playing(let line) = target,
              let confirmed = playConfirmedAt, !isHeld(now: now), let sNow = sessionTime(atLocal: now),
              sNow > line.session + configuration.driftSettleTime,
              now > confirmed + configuration.driftSettleTime
        else { driftSince = nil; return }
        let drift = position - tl.expectedItemTime(atSessionTime: sNow)
        guard abs(drift) > configuration.driftThreshold else { driftSince = nil; return }
        guard let since = driftSince else { driftSince = now; return }
        guard now - since >= configuration.driftPersistence else { return }
        driftSince = nil
        resyncCount += 1
        target = .idle
        confirmedPrepared = nil
        actions.append(.event(.resynchronising(driftNanos: drift)))
    }

    // MARK: Applying the timeline

    private func isHeld(now: Int64) -> Bool {
        !suspensions.isEmpty || engineStalled || (localPauseUntil.map { now < $0 } ?? false)
    }

    private mutating func takeCommandID() -> UInt64 {
        let id = nextCommandID
        nextCommandID += 1
        return id
    }

    private mutating func issue(_ command: EngineCommand, into actions: inout [Action]) {
        let id = takeCommandID()
        lastCommandID = id
        switch command {
        case .load: pendingLoadID = id; confirmedPrepared = nil; pendingPrepare = nil; pendingPlayID = nil
        case .prepare(let x, let r): pendingPrepare = (id, x, r); confirmedPrepared = nil
        case .play: pendingPlayID = id; playConfirmedAt = nil; confirmedPrepared = nil
        case .pause: confirmedPrepared = nil; pendingPrepare = nil
        case .setClockMapping: break
        }
        actions.append(.engine(id: id, command))
    }

    /// A waiting generation that stops the line this peer plays (a rate change, a stall elsewhere) names a stop
    /// a little ahead of where the group is. Normally it arrives before that point; when it arrives later (a slow
    /// or retransmitted message), this peer has already shown frames the others will show only after the restart,
    /// so it tells the authority how far it got and the group resumes from there.
    private func reportRenderedPast(_ tl: Timeline, playing line: Line, sessionNow: Int64, into actions: inout [Action]) {
        // Only a stop on this very line: a seek names an item time of its own.
        guard abs(line.item(at: tl.anchorSessionTime) - tl.anchorItemTime) <= Nanos.milliseconds(1) else { return }
        let stopped = sessionNow + configuration.stopAllowance
        guard stopped > tl.anchorSessionTime else { return }
        actions.append(.send(.renderedPast(generation: tl.generation, itemTime: line.item(at: stopped))))
    }

    /// Brings the engine in line with the current timeline.
    private mutating func reconcile(now: Int64, into actions: inout [Action]) {
        guard invalidation == nil else { return }
        let wantedItem = activity?.itemID ?? timeline?.itemID
        if let wantedItem, wantedItem == failedItemID { return }
        if let wantedItem, wantedItem != loadedItemID, wantedItem != loadingItemID {
            loadingItemID = wantedItem
            target = .idle
            if loadingSuspension == nil { loadingSuspension = openSuspension(.loading, into: &actions) }
            actions.append(.send(.readiness(.loading(progress: nil))))
            issue(.load(itemID: wantedItem), into: &actions)
            return
        }
        guard let tl = timeline, let loaded = loadedItemID, tl.itemID == loaded, loadingItemID == nil,
              let mapping = clockMapping
        else { return }

        if isHeld(now: now) {
            if case .playing = target { issue(.pause, into: &actions); target = .paused }
            return
        }

        switch tl.status {
        case .paused, .waiting:
            let x = tl.anchorItemTime
            if case .waiting = tl.status, case .playing(let line) = target {
                reportRenderedPast(tl, playing: line, sessionNow: mapping.sessionTime(atLocal: now), into: &actions)
            }
            if confirmedPrepared.map({ $0.itemTime == x }) ?? false {
                if reportedPreparedGeneration.map({ $0 < tl.generation }) ?? true {
                    reportedPreparedGeneration = tl.generation
                    actions.append(.send(.prepared(generation: tl.generation)))
                }
                return
            }
            if case .prepared(let px, _) = target, px == x { return }   // on its way
            issue(.prepare(itemTime: x, rate: tl.rate), into: &actions)
            target = .prepared(itemTime: x, rate: tl.rate)
        case .playing:
            let line = tl.projection
            if case .playing(let current) = target, current == line { return }
            let sNow = mapping.sessionTime(atLocal: now)
            let needed = configuration.prerollEstimate + configuration.joinMargin
            if case .playing = target, line.session > sNow + configuration.joinMargin {
                // Already rendering: switch lines at the scheduled time without stopping.
                issue(.play(from: line.item, atSessionTime: line.session, rate: line.rate), into: &actions)
            } else if line.session >= sNow + configuration.prerollEstimate
                        || (confirmedPrepared.map { $0.itemTime == line.item } ?? false && line.session > sNow) {
                if !(confirmedPrepared.map { $0.itemTime == line.item } ?? false) {
                    issue(.prepare(itemTime: line.item, rate: line.rate), into: &actions)
                }
                issue(.play(from: line.item, atSessionTime: line.session, rate: line.rate), into: &actions)
            } else {
                // Too late to make the scheduled start: preroll at the projected position and join alone.
                let start = sNow + needed
                let item = tl.expectedItemTime(atSessionTime: start)
                issue(.prepare(itemTime: item, rate: line.rate), into: &actions)
                issue(.play(from: item, atSessionTime: start, rate: line.rate), into: &actions)
            }
            target = .playing(line)
        }
    }
}

extension ItemProjection {
    /// The session time (ns) at which this line renders `item`.
    fileprivate var session: Int64 { fromAnchor.nanoseconds }
    /// The item time (ns) this line renders at `session`.
    fileprivate var item: Int64 { toAnchor.nanoseconds }
    /// The item time (ns) this line renders at session time `t` (ns).
    fileprivate func item(at t: Int64) -> Int64 { self(SessionInstant(nanoseconds: t)).nanoseconds }
}
