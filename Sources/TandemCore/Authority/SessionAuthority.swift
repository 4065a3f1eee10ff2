/// The session authority: a pure state machine that owns one session's timeline, participants, app messages and
/// journal. The transport feeds it messages and connection events stamped with the authority's own monotonic
/// time (`now`, which *is* session time) and carries out the actions it returns. It never reads a clock.
///
/// Policies worth knowing (see also `AuthorityConfiguration`):
/// - Every accepted timeline request gets the next generation and is broadcast to everyone; requests are
///   applied in arrival order, so conflicting requests end with every peer on the same last generation.
///   A `play` while already playing or waiting changes nothing and answers the requester with the current
///   timeline.
/// - Starts are scheduled at `now + lead`, where `lead` is the largest one-way delay plus preroll estimate
///   (zero preroll for a participant prepared at that position) plus `startMargin`.
/// - `.waiting` timelines name who is waited for and why. After a seek, a participant that has not reported
///   `.prepared(generation:)` for a generation at the seek's item and time is listed with the reason `.loading`.
///   A waiting timeline whose list changes gets a new generation with the same item and anchor; a `.prepared`
///   for any generation at that item and time counts.
/// - A stall during play pauses the group at `anchorItemTime` from `anchorSessionTime` (slightly in the future
///   so peers can stop there) with status `.waiting`.
/// - A participant the group stopped waiting for (timeout or a per-reason limit exceeded) or a late joiner is
///   *excused*: the group neither waits nor pauses for it until it holds no waiting-triggering suspension and
///   is ready; a client catching up alone should keep its suspension until it plays in step.
/// - Changing the activity resets everyone to loading at item time 0. If the group was playing or waiting to
///   play, it waits for everyone to load the new item and then starts together; if it was paused it stays paused.
/// - Roles: ending the session for everyone, changing the activity and removing others' journal attachments are
///   the host's (unless `everyoneMayEndSession`, `everyoneMayChangeActivity`, `everyoneMayRemoveAttachments`);
///   anyone else gets `.refused(reason:)` and nothing changes. The host role goes to the first participant that
///   asks for it and comes back only with that participant's reconnect token.
/// - Everything peers put into shared state is bounded (`TextBounds`, `maxActivitySize`, the journal quotas), so
///   a full session's welcome stays far below the transport's 1 MiB frame limit.
public struct SessionAuthority: Sendable {
    /// What the transport must do.
    public enum Action: Sendable, Hashable {
        /// Deliver a message. The transport may drop `.appMessage` with `.unreliable` delivery under load.
        case send(ServerMessage, to: ParticipantID)
        /// The transport sends `.invalidated(reason)` to this participant and then closes its connection.
        /// The authority does not send that `.invalidated` message separately.
        case close(ParticipantID, InvalidationReason)
        /// Call `timerFired(now:)` at or after this session time (a later `wakeUp` replaces an earlier one).
        case wakeUp(at: SessionInstant)
        /// Everyone was told; the host can drop this session.
        case sessionEnded(InvalidationReason)
        /// Send `length` bytes of attachment `attachment` at `offset` as a journal chunk, read from where the
        /// transport keeps them (only without `AuthorityConfiguration.keepsAttachmentBytes`).
        case sendStoredChunk(attachment: String, offset: Int64, length: Int, to: ParticipantID)
    }

    /// The answer to a join.
    public enum JoinOutcome: Sendable {
        case joined(ParticipantID, [Action])
        case refused(InvalidationReason)
    }

    public let sessionID: String
    public let configuration: AuthorityConfiguration
    /// The current activity, if any.
    public internal(set) var activity: ActivityEnvelope?
    /// The current timeline.
    public internal(set) var timeline: Timeline
    /// Why the session ended, once it has.
    public internal(set) var endReason: InvalidationReason?
    /// The session's queue; while an activity is set, its current entry is that activity.
    public internal(set) var queue = SessionQueue()

    // Participants by id, and their join order (kept for deterministic output).
    var members: [ParticipantID: Member] = [:]
    var memberOrder: [ParticipantID] = []
    /// `connectedIDs`, kept for the app-message path (which runs for every message and changes no membership):
    /// renewed by `membershipChanged()` wherever a member joins, takes part, connects, drops or goes.
    var connectedCache: [ParticipantID] = []
    var nextParticipantNumber = 1
    /// Item and item time of recent generations, so `.prepared(generation:)` for an older one still counts.
    var generationPositions: [UInt64: ItemPosition] = [:]
    /// While waiting: whether participants must report `.prepared` at the anchor (after a seek).
    var waitingRequiresPreparation = false
    /// While waiting: when each participant waited for began to block this wait.
    var waitingSince: [ParticipantID: SessionInstant] = [:]
    /// A resume time proposed by a participant ending its suspension while the group waits.
    var proposedResumeItemTime: ItemTime?
    /// While the group waits at a stop on the line it was playing (a stall, a rate change): that stop. Only such a
    /// stop can have been played past (`renderedPast`); a seek names an item time of its own. Not kept across a
    /// relay restart: a report after one is ignored, and the group resumes at the stop.
    var lineStop: LineStop?
    /// Reasons currently held by more participants than their limit.
    var reasonsOverLimit: Set<SuspensionReason> = []
    /// The media every participant's item is compared against (the host's, else the first to load).
    var referenceMedia: (owner: ParticipantID, info: MediaInfo)?
    var flaggedAsDifferentMedia: Set<ParticipantID> = []
    var attachments: [String: StoredAttachment] = [:]
    var attachmentOrder: [String] = []
    var scheduledWakeUp: SessionInstant?
    /// Whether someone has held the host role in this session (the role is given once).
    var hasHadHost = false
    /// The number in the next queue entry's id.
    var nextQueueEntryNumber = 1
    /// The first generation of the current item: ends reported for earlier ones are of another item.
    var itemStartGeneration: UInt64 = 1
    /// Who reported reaching the end of the current item, and when the group stops waiting for the rest.
    var endReports: Set<ParticipantID> = []
    var endOfItemDeadline: SessionInstant?

    public init(sessionID: String, activity: ActivityEnvelope?, configuration: AuthorityConfiguration, now: SessionInstant) {
        self.sessionID = sessionID
        self.activity = activity
        self.configuration = configuration
        self.timeline = Timeline(generation: 1, itemID: activity?.itemID ?? "", rate: 1,
                                 anchorSessionTime: now,
                                 anchorItemTime: 0, status: .paused)
        generationPositions[1] = ItemPosition(itemID: timeline.itemID, itemTime: 0)
        if let activity { queue = SessionQueue(entries: [takeQueueEntry(QueueEntry(activity: activity))], currentIndex: 0) }
    }

    /// The connected participants, in join order.
    public var participants: [ParticipantState] {
        presentIDs.compactMap { members[$0]?.state }
    }


    /// Admits a participant, or takes back one reconnecting with its token (same id and role, fresh snapshot).
    ///
    /// - `name` is cleaned and bounded here (`TextBounds.name`), once for everyone.
    /// - `newReconnectToken` is the secret a new participant will need to reconnect as itself. The transport draws
    ///   it from a cryptographic random source (the authority reads no randomness, so it stays deterministic);
    ///   it is sent in that participant's own welcome only, never in participant lists.
    /// - `reconnectAs` is honoured only with the matching `reconnectToken` (`TextBounds.tokensMatch`), while the
    ///   identity is connected or within its grace period. A connected identity is taken over: the transport
    ///   closes the old connection (the authority sends nothing to it). A reconnect keeps the participant's id,
    ///   host role and token (the token is not rotated, so it stays valid for later reconnects). Without the
    ///   right token the joiner gets a new identity (and never the host role of the identity it named).
    /// - `wantsHost` gives the host role only to the first participant to ask for it in this session's life; a
    ///   later one joins as a normal participant.
    ///
    /// Ids are "p1", "p2", … in join order. Refused with `.sessionFull` when `maxParticipants` (connected or within
    /// their grace period) are taken, and with the end reason once the session has ended.
    /// - `waiting` admits a new participant without taking part: it receives the activity and the participant list
    ///   only, and may send nothing but `takePart`, `leave`, clock pings and link reports, until `takePart`. A
    ///   reconnect keeps what the identity had (joined or not), whatever it asks.
    /// - `lazyJournal` sends this connection complete attachments as `available`, their bytes only on `fetch`.
    public mutating func join(name rawName: String, reconnectAs: ParticipantID? = nil, reconnectToken: String? = nil,
                              prerollEstimate: TimeSpan, wantsHost: Bool, newReconnectToken: String,
                              waiting: Bool = false, lazyJournal: Bool = false, via rawVia: String? = nil,
                              now: SessionInstant) -> JoinOutcome {
        if let endReason { return .refused(endReason) }
        let name = TextBounds.name(rawName)
        // How it follows, if not as a Tandem player: a short word, cleaned like a name.
        let via = rawVia.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : String(TextBounds.name($0).prefix(16)) }
        var actions: [Action] = []
        let id: ParticipantID
        let noticeText: String
        if let previous = reconnectAs, var member = members[previous], let reconnectToken,
           TextBounds.tokensMatch(reconnectToken, member.reconnectToken) {
            id = previous
            if member.isConnected {
                // The old connection is replaced (the transport closes it): what it had in flight is gone.
                member.prepared = nil
                members[id] = member
                actions += dropUnfinishedAttachments(of: id)
                member = members[id]!
            }
            member.participant.name = name
            member.participant.via = via
            member.lazyJournal = lazyJournal
            member.isConnected = true
            member.disconnectedAt = nil
            member.prerollEstimate = Self.boundedPreroll(prerollEstimate)
            member.suspensions = []
            // Like a late joiner, it catches up with a running timeline on its own.
            member.isExcused = member.isExcused || (timeline.isPlaying && !configuration.lateJoinersPauseGroup)
            members[id] = member
            noticeText = "\(name) reconnected"
        } else {
            guard members.count < configuration.maxParticipants else {
                return .refused(InvalidationReason(
                    code: .sessionFull,
                    message: "the session is full (\(configuration.maxParticipants) participants) — "
                        + "try again when someone leaves"))
            }
            id = ParticipantID("p\(nextParticipantNumber)")
            nextParticipantNumber += 1
            let isHost = wantsHost && !hasHadHost
            if isHost { hasHadHost = true }
            var member = Member(participant: Participant(id: id, name: name, via: via), isHost: isHost,
                                reconnectToken: newReconnectToken, prerollEstimate: Self.boundedPreroll(prerollEstimate),
                                joinedAt: now, messageTokens: Double(configuration.appMessageBurst))
            // A late joiner catches up with the running timeline instead of pausing everyone.
            member.isExcused = timeline.isPlaying && !configuration.lateJoinersPauseGroup
            member.hasJoined = !waiting
            member.lazyJournal = lazyJournal
            members[id] = member
            memberOrder.append(id)
            noticeText = "\(name) joined"
        }
        membershipChanged()
        actions.append(.send(.welcome(snapshot(for: id)), to: id))
        let joined = members[id]?.hasJoined == true
        if joined { actions += journalReplay(to: id) }
        actions += broadcastParticipants()
        if joined { actions += broadcast(notice(.joined, id, noticeText, now)) }
        actions += reconcile(now: now)
        actions += scheduleWakeUp()
        return .joined(id, actions)
    }

    /// The refusal of anything shared before joining.
    static let joinFirst = Refusal.joinFirst.reason

    /// Handles one message from a connected participant. Messages from unknown or disconnected ids are ignored.
    /// A refusal names the kind of request it refuses (`Refusal.Request`).
    public mutating func receive(_ message: ClientMessage, from id: ParticipantID, now: SessionInstant) -> [Action] {
        let actions = handle(message, from: id, now: now)
        guard let request = Refusal.Request(message) else { return actions }
        return actions.map { action in
            guard case .send(.refused(let reason, let code, nil), let target) = action, target == id else { return action }
            return .send(.refused(reason: reason, code: code ?? .other, request: request), to: target)
        }
    }

    private mutating func handle(_ message: ClientMessage, from id: ParticipantID, now: SessionInstant) -> [Action] {
        guard endReason == nil, let member = members[id], member.isConnected else { return [] }
        var actions: [Action]
        if !member.hasJoined {
            switch message {
            case .join, .clockPing, .linkReport, .leave, .takePart: break
            default:
                // Enforced here, not only by the client: nothing shared is sent or changed before joining.
                return [.send(.refused(.joinFirst), to: id)]
            }
        }
        switch message {
        case .join:
            actions = []  // The transport turns the first join into `join(...)`; a repeated one means nothing.
        case .takePart:
            actions = takePart(id, now: now)
        case .notice(let text):
            actions = appNotice(text, from: id, now: now)
        case .clockPing(let ping):
            return [.send(.clockPong(ClockPong(sequence: ping.sequence, t1: ping.t1, t2: now, t3: now)), to: id)]
        case .timelineRequest(let request):
            // A pause or a seek moves the group away from wherever peers ended.
            switch request.command {
            case .pause, .seek: resetEndOfItem()
            case .play, .rate: break
            }
            actions = handle(request, from: id, now: now)
        case .readiness(let readiness):
            actions = updateReadiness(readiness, of: id, now: now)
        case .prepared(let generation):
            actions = notePrepared(generation, by: id, now: now)
        case .renderedPast(let generation, let itemTime):
            actions = resumeLater(renderedUpTo: itemTime, generation: generation, now: now)
        case .suspension(let update):
            actions = updateSuspension(update, of: id, now: now)
        case .setActivity(let envelope):
            if let refusal = configuration.rules.refusingActivityChange(isHost: member.isHost) {
                return [.send(.refused(refusal), to: id)]
            }
            switch bounded(envelope) {
            case .success(let envelope):
                guard let replaced = replaceCurrentEntry(with: envelope) else {
                    return refuse(.limit, "the queue has no room for this activity (\(configuration.queue.maxEntries) items, "
                        + "\(AuthorityText.bytes(Int64(configuration.queue.maxBytes))) encoded) — remove an item first", to: id)
                }
                actions = changeActivity(to: envelope, by: id, now: now) + replaced
            case .failure(let problem): return refuse(.tooLarge, problem.reason, to: id)
            }
        case .resent:
            return []  // The transport's business (it holds and releases messages around a resend).
        case .appMessage(let outgoing):
            // Changes nothing but the sender's message allowance: no deadline moves, so the checks below are not
            // needed (the relay's most frequent message).
            return relay(outgoing, from: id, now: now)
        case .journal(let entry):
            actions = handleJournal(entry, from: id, now: now)
        case .queue(let request):
            actions = handleQueue(request, from: id, now: now)
        case .reachedEnd(let generation):
            actions = reachedEnd(generation: generation, by: id, now: now)
        case .linkReport(let oneWayDelay, let errorBound, let renderOffset, let prerollEstimate, let spread, let display,
                         let startLatency):
            actions = noteLinkReport(of: id, oneWayDelay: oneWayDelay, errorBound: errorBound, renderOffset: renderOffset,
                                     prerollEstimate: prerollEstimate, spread: spread, display: display,
                                     startLatency: startLatency, now: now)
        case .leave:
            actions = remove(id, leaving: true, now: now)
        case .end:
            if let refusal = configuration.rules.refusingEnd(isHost: member.isHost) {
                return [.send(.refused(refusal), to: id)]
            }
            actions = endSession(InvalidationReason(code: .ended, message: "\(member.participant.name) ended the session"))
        }
        actions += advanceIfEveryoneReachedEnd(now: now)
        actions += scheduleWakeUp()
        return actions
    }

    /// The participant's connection dropped: it keeps its identity for the grace period, but its suspensions are
    /// released and the group stops waiting for it at once.
    /// `what` says what happened, for the others' notice ("lost connection" when nil).
    public mutating func connectionLost(_ id: ParticipantID, now: SessionInstant, what: String? = nil) -> [Action] {
        guard endReason == nil, var member = members[id], member.isConnected else { return [] }
        member.isConnected = false
        member.disconnectedAt = now
        member.suspensions = []
        member.prepared = nil
        members[id] = member
        membershipChanged()
        var actions = dropUnfinishedAttachments(of: id)
        actions += broadcastParticipants()
        if member.hasJoined {
            actions += broadcast(notice(.left, id, "\(member.participant.name) \(what ?? "lost connection")", now))
        }
        actions += reconcile(now: now)
        actions += advanceIfEveryoneReachedEnd(now: now)
        actions += scheduleWakeUp()
        return actions
    }

    /// Runs what is due: waiting timeouts and expired reconnect grace periods.
    public mutating func timerFired(now: SessionInstant) -> [Action] {
        guard endReason == nil else { return [] }
        scheduledWakeUp = nil
        var actions: [Action] = []
        for id in memberOrder {
            guard let member = members[id], let lostAt = member.disconnectedAt,
                  lostAt + configuration.reconnectGracePeriod <= now else { continue }
            actions += remove(id, leaving: false, now: now)
            if endReason != nil { return actions }
        }
        actions += expireWaiting(now: now)
        actions += reconcile(now: now)
        actions += advanceIfEveryoneReachedEnd(now: now)
        if endReason != nil { return actions }
        actions += scheduleWakeUp()
        return actions
    }

    /// Invalidates everyone (e.g. the server stops).
    public mutating func shutdown(reason: InvalidationReason, now: SessionInstant) -> [Action] {
        guard endReason == nil else { return [] }
        return endSession(reason)
    }
}

// MARK: - Participants and session life

extension SessionAuthority {
    /// Connected participants that have joined: those the timeline, messages, notices and the journal reach.
    var connectedIDs: [ParticipantID] {
        memberOrder.filter { members[$0]?.isConnected == true && members[$0]?.hasJoined == true }
    }
    /// Renews `connectedCache` after a member joined, took part, connected, dropped or went.
    mutating func membershipChanged() { connectedCache = connectedIDs }
    /// Every connected participant, joined or not: those the activity and the participant list reach.
    var presentIDs: [ParticipantID] { memberOrder.filter { members[$0]?.isConnected == true } }

    /// The welcome of `id`: the only message that carries its reconnect token. One that has not joined sees the
    /// activity and the participants only.
    func snapshot(for id: ParticipantID) -> SessionSnapshot {
        let joined = members[id]!.hasJoined
        let lazy = members[id]!.lazyJournal
        return SessionSnapshot(sessionID: sessionID, localParticipant: members[id]!.participant, activity: activity,
                               timeline: joined ? timeline : nil, participants: participants,
                               attachments: joined && !lazy ? committedAttachments : [],
                               reconnectToken: members[id]!.reconnectToken, queue: joined ? queue : nil,
                               rules: configuration.rules, playbackLimits: configuration.playback)
    }

    /// Whether `id` may do what the host may: it is the host, or the configuration gives the role to everyone.
    func mayActAsHost(_ id: ParticipantID, everyoneMay: Bool) -> Bool {
        everyoneMay || members[id]?.isHost == true
    }

    /// The cleaned, bounded name of a participant (nil for an unknown id).
    public func participantName(_ id: ParticipantID) -> String? { members[id]?.participant.name }

    func broadcast(_ message: ServerMessage, except excluded: ParticipantID? = nil) -> [Action] {
        connectedIDs.filter { $0 != excluded }.map { .send(message, to: $0) }
    }

    func broadcastParticipants() -> [Action] { presentIDs.map { .send(.participants(participants), to: $0) } }

    func notice(_ kind: Notice.Kind, _ participant: ParticipantID?, _ text: String, _ now: SessionInstant) -> ServerMessage {
        .notice(Notice(kind: kind, participant: participant,
                       text: TextBounds.line(text, maxBytes: TextBounds.maxNoticeBytes), sessionTime: now))
    }

    func name(of id: ParticipantID) -> String { members[id]?.participant.name ?? id.rawValue }

    /// Removes a participant for good (it left, or its grace period ran out).
    mutating func remove(_ id: ParticipantID, leaving: Bool, now: SessionInstant) -> [Action] {
        guard let member = members[id] else { return [] }
        if member.isHost && configuration.endsWhenHostLeaves {
            return endSession(InvalidationReason(code: .hostLeft, message: "the host left; the session has ended"))
        }
        var actions: [Action] = []
        if leaving && member.isConnected {
            actions.append(.close(id, InvalidationReason(code: .left, message: "you left the session")))
        }
        actions += dropUnfinishedAttachments(of: id)
        members[id] = nil
        memberOrder.removeAll { $0 == id }
        membershipChanged()
        waitingSince[id] = nil
        flaggedAsDifferentMedia.remove(id)
        if members.isEmpty {
            return actions + endSession(InvalidationReason(code: .ended, message: "everyone left the session"))
        }
        if member.isConnected {
            actions += broadcastParticipants()
            if member.hasJoined { actions += broadcast(notice(.left, id, "\(member.participant.name) left", now)) }
        }
        actions += reconcile(now: now)
        return actions
    }

    mutating func endSession(_ reason: InvalidationReason) -> [Action] {
        let actions: [Action] = presentIDs.map { .close($0, reason) } + [.sessionEnded(reason)]
        endReason = reason
        scheduledWakeUp = nil
        waitingSince = [:]
        return actions
    }

    /// Asks for a wake-up at the earliest pending deadline when it changed.
    mutating func scheduleWakeUp() -> [Action] {
        guard endReason == nil, let next = nextDeadline() else {
            scheduledWakeUp = nil
            return []
        }
        guard next != scheduledWakeUp else { return [] }
        scheduledWakeUp = next
        return [.wakeUp(at: next)]
    }

    func nextDeadline() -> SessionInstant? {
        var deadlines: [SessionInstant] = []
        for (id, since) in waitingSince {
            guard let member = members[id], !member.isExcused else { continue }
            deadlines.append(since + waitingTimeout(for: member))
        }
        for member in members.values {
            if let lostAt = member.disconnectedAt { deadlines.append(lostAt + configuration.reconnectGracePeriod) }
        }
        if let endOfItemDeadline { deadlines.append(endOfItemDeadline) }
        return deadlines.min()
    }

    func waitingTimeout(for member: Member) -> TimeSpan {
        member.hasLoadedItem ? configuration.rebufferWaitingTimeout : configuration.firstLoadWaitingTimeout
    }
}
