// Timeline requests, readiness, suspensions and waiting.

extension SessionAuthority {
    // MARK: Requests

    mutating func handle(_ request: TimelineRequest, from id: ParticipantID, now: SessionInstant) -> [Action] {
        let who = name(of: id)
        switch request.command {
        case .play:
            guard case .paused = timeline.status else {
                // Already playing or about to: nothing to change; tell the requester where the group stands.
                return [.send(.timeline(timeline), to: id)]
            }
            let position = ItemPosition(itemID: timeline.itemID, itemTime: timeline.anchorItemTime)
            let blocking = blockers(at: position, requiringPreparation: false)
            if blocking.isEmpty {
                return startPlaying(at: timeline.anchorItemTime, originator: id, now: now,
                                    proposed: StartProposal(request, now: now))
                    + broadcast(notice(.played, id, "\(who) played from \(AuthorityText.itemTime(timeline.anchorItemTime))", now))
            }
            waitingRequiresPreparation = false
            let actions = publish(status: .waiting(for: blocking), anchorSessionTime: now,
                                  anchorItemTime: timeline.anchorItemTime, originator: id)
            beginWaiting(blocking, now: now)
            return actions + broadcast(notice(.waiting, blocking.keys.sorted().first,
                                              "\(who) pressed play; \(waitingText(blocking))", now))

        case .pause(let itemTime):
            let target = clampToItem(itemTime)
            stopWaiting()
            var actions = publish(status: .paused, anchorSessionTime: now, anchorItemTime: target, originator: id)
            actions += broadcast(notice(.paused, id, "\(who) paused at \(AuthorityText.itemTime(target))", now))
            return actions

        case .seek(let requested, let play):
            // Clamped to the item (`PlaybackLimits.clampedSeek`): a step from a position a moment old still moves.
            let itemTime = configuration.playback.clampedSeek(requested, itemDuration: referenceMedia?.info.duration)
            stopWaiting()
            var actions: [Action]
            let position = ItemPosition(itemID: timeline.itemID, itemTime: itemTime)
            if play, schedulesStarts, blockers(at: position, requiringPreparation: false).isEmpty {
                // Nobody is loading or held: start on a schedule everyone can make, without a prepare round.
                actions = startPlaying(at: itemTime, originator: id, now: now, proposed: StartProposal(request, now: now),
                                       seeking: true)
            } else if play {
                let blocking = blockers(at: position, requiringPreparation: true)
                waitingRequiresPreparation = true
                actions = publish(status: .waiting(for: blocking), anchorSessionTime: now, anchorItemTime: itemTime,
                                  originator: id)
                beginWaiting(blocking, now: now)
            } else {
                actions = publish(status: .paused, anchorSessionTime: now, anchorItemTime: itemTime, originator: id)
            }
            actions += broadcast(notice(.seeked, id, "\(who) jumped to \(AuthorityText.itemTime(itemTime))", now))
            // Nobody to wait for (e.g. everyone else is excused): start at once.
            return actions + reconcile(now: now)

        case .rate(let rate):
            return changeRate(to: rate, from: id, now: now, proposed: StartProposal(request, now: now))
        }
    }

    /// A peer had already rendered up to `itemTime` when waiting generation `generation` reached it (a request
    /// delayed on its link, e.g. by a retransmission): the group resumes from there instead of the planned stop,
    /// so that peer does not show those frames again while the others show them for the first time.
    mutating func resumeLater(renderedUpTo itemTime: ItemTime, generation: UInt64, now: SessionInstant) -> [Action] {
        // The same stop: the waiting list may have changed since (new generations, same position), but nobody
        // has moved the group elsewhere.
        guard case .waiting = timeline.status, generation <= timeline.generation,
              generationPositions[generation] == ItemPosition(itemID: timeline.itemID, itemTime: timeline.anchorItemTime),
              itemTime > max(timeline.anchorItemTime, proposedResumeItemTime ?? .zero), seekProblem(itemTime) == nil
        else { return [] }
        // Only past a stop on the line the group was playing (not a seek's target, which a peer still on the old
        // line is "past" whenever the seek goes back), and no farther than that line has gone by now: a report
        // cannot move the group anywhere else.
        guard let stop = lineStop, stop.stopAt == timeline.anchorSessionTime,
              itemTime <= stop.line.expectedItemTime(atSessionTime: now + LineStop.allowance)
        else { return [] }
        proposedResumeItemTime = itemTime
        // Everyone prepares again at the new point; that is no news to show as "waiting for …".
        return reconcile(now: now).filter { action in
            if case .send(.notice(let notice), _) = action { return notice.kind != .waiting }
            return true
        }
    }

    func seekProblem(_ itemTime: ItemTime) -> String? {
        if itemTime < .zero { return "cannot seek to \(AuthorityText.itemTime(itemTime)): before the start of the item" }
        if let end = itemEnd, itemTime > end {
            return "cannot seek to \(AuthorityText.itemTime(itemTime)): the item is only \(AuthorityText.itemTime(end)) long"
        }
        return nil
    }

    func clampToItem(_ itemTime: ItemTime) -> ItemTime {
        var value = max(.zero, itemTime)
        if let end = itemEnd { value = min(value, end) }
        return value
    }

    /// The item time at the end of the reference media, when its duration is known.
    var itemEnd: ItemTime? { referenceMedia?.info.duration.map { ItemTime.zero + $0 } }

    // MARK: Readiness, suspensions, activity

    mutating func updateReadiness(_ readiness: Readiness, of id: ParticipantID, now: SessionInstant) -> [Action] {
        let readiness = Self.bounded(readiness)
        members[id]?.readiness = readiness
        var actions: [Action] = []
        switch readiness {
        case .ready(let info):
            members[id]?.hasLoadedItem = true
            actions += compareMedia(of: id, info: info, now: now)
        case .failed(let why):
            actions += broadcast(notice(.info, id, "\(name(of: id)) could not load the item: \(why)", now))
        case .loading, .unknown:
            break
        }
        actions += broadcastParticipants()
        return actions + reconcile(now: now)
    }

    mutating func updateSuspension(_ update: SuspensionUpdate, of id: ParticipantID, now: SessionInstant) -> [Action] {
        guard var member = members[id] else { return [] }
        switch update {
        case .begin(let suspensionID, let reason):
            guard !member.suspensions.contains(where: { $0.id == suspensionID }) else { return [] }
            guard member.suspensions.count < TextBounds.maxSuspensionsPerParticipant else {
                return [.send(.refused(Refusal(.limit, "too many suspensions: the limit is "
                    + "\(TextBounds.maxSuspensionsPerParticipant) at once — end one first")), to: id)]
            }
            member.suspensions.append(HeldSuspension(id: suspensionID, reason: Self.bounded(reason)))
        case .end(let suspensionID, let proposedItemTime):
            guard member.suspensions.contains(where: { $0.id == suspensionID }) else { return [] }
            member.suspensions.removeAll { $0.id == suspensionID }
            if let proposed = proposedItemTime, case .waiting = timeline.status, seekProblem(proposed) == nil {
                proposedResumeItemTime = proposed
            }
        }
        members[id] = member
        return broadcastParticipants() + reconcile(now: now)
    }

    /// Makes `envelope` the session's activity: everyone loads its item, and the group starts from `itemTime` once
    /// all have (and, away from 0, prerolled there). `play` nil keeps what the group does: a playing or waiting
    /// group plays the new item, a paused one stays paused. `text` replaces the notice's words.
    mutating func changeActivity(to envelope: ActivityEnvelope, by id: ParticipantID?, now: SessionInstant,
                                 startingAt itemTime: ItemTime = .zero, play: Bool? = nil, text: String? = nil) -> [Action] {
        let wantsToPlay: Bool
        switch timeline.status {
        case .paused: wantsToPlay = play ?? false
        case .playing, .waiting: wantsToPlay = play ?? true
        }
        activity = envelope
        for memberID in memberOrder {
            members[memberID]?.readiness = .loading(progress: nil)
            members[memberID]?.hasLoadedItem = false
            members[memberID]?.prepared = nil
            members[memberID]?.isExcused = false
        }
        referenceMedia = nil
        flaggedAsDifferentMedia = []
        stopWaiting()
        resetEndOfItem()
        var actions = presentIDs.map { Action.send(.activity(envelope), to: $0) }
        let title = envelope.metadata.title ?? envelope.itemID
        actions += broadcast(notice(.activityChanged, id,
                                    text ?? "\(id.map { name(of: $0) } ?? "the session") changed the activity to \(title)", now))
        actions += broadcastParticipants()
        var next = Timeline(generation: timeline.generation + 1, itemID: envelope.itemID, rate: 1,
                            anchorSessionTime: now,
                            anchorItemTime: max(.zero, itemTime), status: .paused, originator: id)
        itemStartGeneration = next.generation
        if wantsToPlay {
            waitingRequiresPreparation = itemTime > .zero
            let blocking = blockers(at: ItemPosition(itemID: envelope.itemID, itemTime: max(.zero, itemTime)),
                                    requiringPreparation: itemTime > .zero)
            next.status = .waiting(for: blocking)
            beginWaiting(blocking, now: now)
        }
        actions += publish(next)
        return actions + reconcile(now: now)
    }

    // MARK: Waiting

    /// Who the group would wait for at `position`, and why.
    func blockers(at position: ItemPosition, requiringPreparation: Bool) -> [ParticipantID: [SuspensionReason]] {
        var result: [ParticipantID: [SuspensionReason]] = [:]
        for id in memberOrder {
            guard let member = members[id], !member.isExcused else { continue }
            let reasons = blockingReasons(of: member, at: position, requiringPreparation: requiringPreparation)
            if !reasons.isEmpty { result[id] = reasons }
        }
        return result
    }

    /// Reasons for which the group waits for this participant, ignoring whether it is excused (and, unless
    /// `applyingLimits`, ignoring the per-reason limits).
    func blockingReasons(of member: Member, at position: ItemPosition, requiringPreparation: Bool,
                         applyingLimits: Bool = true) -> [SuspensionReason] {
        guard member.isConnected, member.hasJoined, !member.hasFailed else { return [] }
        var reasons = member.heldReasons(treatingUnknownAsLoading: configuration.treatsUnreportedReadinessAsLoading)
            .filter { configuration.suspensionReasonsThatTriggerWaiting.contains($0)
                || ($0 == .missedStart && configuration.optimisticStarts) }
        if applyingLimits { reasons.removeAll { reasonsOverLimit.contains($0) } }
        if requiringPreparation, !member.isPrepared(at: position), !reasons.contains(.loading) {
            reasons.append(.loading)
        }
        return reasons
    }

    /// Reasons held by more connected participants than their limit allows.
    func computeReasonsOverLimit() -> Set<SuspensionReason> {
        var over: Set<SuspensionReason> = []
        for (reason, limit) in configuration.participantLimitPerReason where holderCount(of: reason) > limit {
            over.insert(reason)
        }
        return over
    }

    /// How many connected participants hold `reason` (explicitly or through their readiness).
    func holderCount(of reason: SuspensionReason) -> Int {
        connectedIDs.filter {
            members[$0]?.heldReasons(treatingUnknownAsLoading: configuration.treatsUnreportedReadinessAsLoading)
                .contains(reason) == true
        }.count
    }

    mutating func beginWaiting(_ blocking: [ParticipantID: [SuspensionReason]], now: SessionInstant) {
        waitingSince = blocking.mapValues { _ in now }
    }

    mutating func stopWaiting() {
        waitingSince = [:]
        waitingRequiresPreparation = false
        proposedResumeItemTime = nil
        lineStop = nil
    }

    /// Brings the timeline in line with who holds what: pauses a playing group for a new stall, updates the list
    /// of a waiting group, and starts it once nobody blocks.
    mutating func reconcile(now: SessionInstant) -> [Action] {
        guard endReason == nil else { return [] }
        var actions: [Action] = []
        let over = computeReasonsOverLimit()
        for reason in over.subtracting(reasonsOverLimit).sorted(by: { $0.rawValue < $1.rawValue }) {
            let limit = configuration.participantLimitPerReason[reason] ?? 0
            actions += broadcast(notice(.limitExceeded, nil,
                                        "\(holderCount(of: reason)) participants are \(reason) (limit \(limit)); "
                                            + "the group goes on without waiting for them", now))
        }
        reasonsOverLimit = over
        // The holders of a reason beyond its limit catch up alone, even once fewer hold it.
        for reason in over {
            for id in connectedIDs where members[id]?.heldReasons(
                treatingUnknownAsLoading: configuration.treatsUnreportedReadinessAsLoading).contains(reason) == true {
                members[id]?.isExcused = true
            }
        }

        // Lift excuses of participants that no longer hold anything the group would wait for.
        let position = ItemPosition(itemID: timeline.itemID, itemTime: proposedResumeItemTime ?? timeline.anchorItemTime)
        let requiresPreparation: Bool
        if case .waiting = timeline.status { requiresPreparation = waitingRequiresPreparation } else { requiresPreparation = false }
        for id in memberOrder where members[id]?.isExcused == true {
            let member = members[id]!
            if member.isConnected, case .ready = member.readiness,
               blockingReasons(of: member, at: position, requiringPreparation: requiresPreparation,
                               applyingLimits: false).isEmpty {
                members[id]?.isExcused = false
            }
        }

        switch timeline.status {
        case .paused:
            return actions
        case .playing:
            var blocking = blockers(at: position, requiringPreparation: false)
            guard !blocking.isEmpty else { return actions }
            // A stall: stop everyone at a common item time, a little ahead so every peer stops short of it.
            var (stopAt, itemTime) = stopPoint(now: now)
            stopWaiting()
            let stopped = timeline
            if stopAt <= timeline.anchorSessionTime {
                // The stop reaches everyone before the group's start (a peer that cannot make it, or loads again):
                // the group stays at the start's item time and waits for everyone's "prepared" there, as a start
                // without a schedule does. A peer the stop reaches after the start says how far it got.
                stopAt = timeline.anchorSessionTime
                waitingRequiresPreparation = true
                blocking = blockers(at: ItemPosition(itemID: timeline.itemID, itemTime: itemTime), requiringPreparation: true)
            }
            actions += publish(status: .waiting(for: blocking), anchorSessionTime: stopAt, anchorItemTime: itemTime,
                               originator: nil)
            lineStop = LineStop(line: stopped, stopAt: stopAt)
            beginWaiting(blocking, now: now)
            actions += broadcast(notice(.waiting, blocking.keys.sorted().first,
                                        "paused at \(AuthorityText.itemTime(itemTime)); \(waitingText(blocking))", now))
            return actions
        case .waiting(let current):
            let blocking = blockers(at: position, requiringPreparation: waitingRequiresPreparation)
            for id in blocking.keys where waitingSince[id] == nil { waitingSince[id] = now }
            waitingSince = waitingSince.filter { blocking[$0.key] != nil }
            if blocking.isEmpty {
                let itemTime = position.itemTime
                stopWaiting()
                actions += startPlaying(at: itemTime, originator: nil, now: now)
                actions += broadcast(notice(.resumed, nil,
                                            "everyone is ready; playing from \(AuthorityText.itemTime(itemTime))", now))
            } else if blocking != current || position.itemTime != timeline.anchorItemTime {
                let added = blocking.filter { current[$0.key] != $0.value }
                actions += publish(status: .waiting(for: blocking), anchorSessionTime: timeline.anchorSessionTime,
                                   anchorItemTime: position.itemTime, originator: timeline.originator)
                proposedResumeItemTime = nil
                if !added.isEmpty {
                    actions += broadcast(notice(.waiting, added.keys.sorted().first, waitingText(blocking), now))
                }
            }
            return actions
        }
    }

    /// Gives up waiting for participants whose timeout has passed; the group goes on and they catch up alone.
    mutating func expireWaiting(now: SessionInstant) -> [Action] {
        guard case .waiting(let current) = timeline.status else { return [] }
        var actions: [Action] = []
        for id in memberOrder {
            guard let since = waitingSince[id], let member = members[id], !member.isExcused else { continue }
            let timeout = waitingTimeout(for: member)
            guard since + timeout <= now else { continue }
            members[id]?.isExcused = true
            waitingSince[id] = nil
            let why = (current[id] ?? []).map(\.description).joined(separator: ", ")
            actions += broadcast(notice(.waitingTimedOut, id,
                                        "going on without \(member.participant.name) (still \(why.isEmpty ? "not ready" : why) "
                                            + "after \(AuthorityText.duration(timeout))); they will catch up", now))
        }
        return actions
    }

    func waitingText(_ blocking: [ParticipantID: [SuspensionReason]]) -> String {
        let names = memberOrder.compactMap { id -> String? in
            guard let reasons = blocking[id] else { return nil }
            return "\(name(of: id)) (\(reasons.map(\.description).joined(separator: ", ")))"
        }
        return "waiting for " + names.joined(separator: ", ")
    }

    // MARK: Publishing

    /// Starts the group from `itemTime` as soon as everyone can (or at the start `originator` proposed, see
    /// `proposedStart`), moved onto the reported displays' refreshes.
    /// `seeking`: a seek scheduled without a prepare round, whose first frame is the seek's own item time on a
    /// page (`alignedToDisplays`).
    mutating func startPlaying(at itemTime: ItemTime, originator: ParticipantID?, now: SessionInstant,
                               proposed: StartProposal? = nil, seeking: Bool = false) -> [Action] {
        let position = ItemPosition(itemID: timeline.itemID, itemTime: itemTime)
        let scheduled = now + lead(at: position)
        let start = proposedStart(proposed, by: originator, at: position, scheduled: scheduled, now: now) ?? scheduled
        // A proposal kept as it is was put on the displays' refreshes by its proposer, from the grids the list
        // carried (`ParticipantState.display`): one that falls just after a refresh here stays on it, rather than
        // going to the next.
        let earlier = start == proposed?.at ? DisplayGrid.listedRefreshTolerance : .zero
        let anchor = alignedToDisplays(start, itemTime: itemTime, rate: timeline.rate, earlier: earlier, seeking: seeking)
        return publish(status: .playing, anchorSessionTime: anchor, anchorItemTime: itemTime, originator: originator)
    }

    mutating func publish(status: Timeline.Status, anchorSessionTime: SessionInstant, anchorItemTime: ItemTime,
                          rate: Double? = nil, originator: ParticipantID?) -> [Action] {
        publish(Timeline(generation: timeline.generation + 1, itemID: timeline.itemID, rate: rate ?? timeline.rate,
                         anchorSessionTime: anchorSessionTime, anchorItemTime: anchorItemTime, status: status,
                         originator: originator))
    }

    /// Makes `next` the current timeline and broadcasts it.
    mutating func publish(_ next: Timeline) -> [Action] {
        timeline = next
        generationPositions[next.generation] = ItemPosition(itemID: next.itemID, itemTime: next.anchorItemTime)
        generationPositions[next.generation &- 64] = nil
        if next.isPlaying {
            // Positions prepared while paused are stale once the group plays.
            for id in memberOrder { members[id]?.prepared = nil }
        }
        return broadcast(.timeline(next))
    }

    // MARK: Item identity

    mutating func compareMedia(of id: ParticipantID, info: MediaInfo, now: SessionInstant) -> [Action] {
        let isHost = members[id]?.isHost == true
        var toCheck: [ParticipantID]
        if referenceMedia == nil || (isHost && referenceMedia?.owner != id) {
            referenceMedia = (id, info)
            flaggedAsDifferentMedia = []
            toCheck = memberOrder.filter { $0 != id }
        } else {
            toCheck = [id]
        }
        guard let reference = referenceMedia else { return [] }
        var actions: [Action] = []
        toCheck = toCheck.filter { members[$0]?.isConnected == true && members[$0]?.hasJoined == true }
        for other in toCheck {
            guard let member = members[other], case .ready(let otherInfo) = member.readiness else { continue }
            var differences: [String] = []
            if let mine = otherInfo.duration, let theirs = reference.info.duration,
               (mine - theirs).magnitude > configuration.mediaDurationTolerance {
                differences.append("duration \(AuthorityText.itemTime(.zero + mine)) vs \(AuthorityText.itemTime(.zero + theirs))")
            }
            if let mine = otherInfo.contentID, let theirs = reference.info.contentID, mine != theirs {
                differences.append("different content")
            }
            if differences.isEmpty {
                flaggedAsDifferentMedia.remove(other)
            } else if !flaggedAsDifferentMedia.contains(other) {
                flaggedAsDifferentMedia.insert(other)
                let text = "\(member.participant.name) seems to have a different file than \(name(of: reference.owner)): "
                    + differences.joined(separator: ", ")
                actions += broadcast(notice(.differentMedia, other, text, now))
            }
        }
        return actions
    }
}

/// A stop the authority published on the line the group was playing: the playing timeline and the stop's session
/// time (`SessionAuthority.lineStop`).
struct LineStop: Sendable, Equatable {
    /// How far past where the line is by the authority's clock a peer may say it got: its own stop allowance and
    /// the error of its clock estimate.
    static let allowance = TimeSpan.milliseconds(50)
    var line: Timeline
    var stopAt: SessionInstant
}
