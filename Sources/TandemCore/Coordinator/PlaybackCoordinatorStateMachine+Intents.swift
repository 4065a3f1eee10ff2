// The user's intents: play, pause, toggle, seek (to a time, by an offset, by a step) and rate (a value, a step). Each
// is decided here, from this machine's own state (the timeline, a pause on its way, the loaded item's duration) and
// the limits the authority announced (`limits`), and becomes a timeline request. A request the limits refuse throws
// the refusal, in the authority's words, before anything is sent.

extension PlaybackCoordinatorStateMachine {
    // MARK: Play and pause

    /// Asks the group to play.
    public mutating func play(now: LocalInstant) -> [Action] {
        requestProposing(.play, now: now) ?? request(.play, now: now)
    }

    /// Pauses here at once and asks the group to stop at `currentItemTime` (this engine's position).
    public mutating func pause(currentItemTime: ItemTime, now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        if case .playing = target {
            issue(.pause, into: &actions)
            target = .paused
        }
        let base = timeline
        actions += request(.pause(itemTime: currentItemTime), now: now)
        pauseHold = .holding(request: nextRequestID - 1, until: now + configuration.localPauseHold)
        // The peers this one reaches straight stop too without waiting for the authority (`receiveDirect`).
        let reach = directReach()
        if let base, base.isPlaying, !reach.isEmpty, let me = localParticipantID,
           let sessionNow = sessionTime(atLocal: now) {
            let stop = Timeline(generation: base.generation, itemID: base.itemID, rate: base.rate,
                                anchorSessionTime: sessionNow, anchorItemTime: currentItemTime, status: .paused,
                                originator: me)
            actions.append(.sendDirect(DirectProposal(from: me, requestID: nextRequestID - 1, timeline: stop),
                                       to: reach.map(\.participant)))
        }
        return actions
    }

    /// Pauses here at once and asks the group to stop where this peer is: `engineItemTime` (the engine's position),
    /// else where the group's line is now, else where the timeline stands.
    public mutating func pause(engineItemTime: ItemTime?, now: LocalInstant) -> [Action] {
        pause(currentItemTime: position(engineItemTime: engineItemTime, now: now), now: now)
    }

    /// Where this peer is in the item: the engine's position when it has one, else the group's line at `now` (or
    /// where a paused or waiting timeline stands), else 0.
    public func position(engineItemTime: ItemTime?, now: LocalInstant) -> ItemTime {
        if let engineItemTime { return engineItemTime }
        guard let timeline else { return .zero }
        if timeline.isPlaying, let session = sessionTime(atLocal: now) {
            return max(.zero, timeline.expectedItemTime(atSessionTime: session))
        }
        return timeline.anchorItemTime
    }

    /// Whether the group is paused as this peer sees it: the timeline says so, or this peer's pause is on its way.
    public func isPaused(now: LocalInstant) -> Bool {
        pauseHold.holds(at: now) || timeline.map { $0.status == .paused } ?? true
    }

    /// Play when paused (or before the first timeline), pause when playing or waiting to play.
    public mutating func togglePlayPause(engineItemTime: ItemTime?, now: LocalInstant) -> [Action] {
        isPaused(now: now) ? play(now: now) : pause(engineItemTime: engineItemTime, now: now)
    }

    // MARK: Seek

    /// Asks the group to seek to `itemTime`; it keeps playing if it was. Throws (`.invalid`) for a time before 0 or
    /// at or past the end of the loaded item.
    public mutating func seek(to itemTime: ItemTime, now: LocalInstant) throws(Refusal) -> [Action] {
        if let refusal = limits.refusingSeek(to: itemTime, itemDuration: mediaInfo?.duration) { throw refusal }
        return requestSeek(to: itemTime, now: now)
    }

    /// Asks the group to seek `offset` from where this peer is (`position(engineItemTime:now:)`), clamped to the item
    /// as the limits say (`PlaybackLimits.clampedSeek`).
    public mutating func seek(by offset: TimeSpan, engineItemTime: ItemTime?, now: LocalInstant) -> [Action] {
        let target = position(engineItemTime: engineItemTime, now: now) + offset
        return requestSeek(to: limits.clampedSeek(target, itemDuration: mediaInfo?.duration), now: now)
    }

    /// One seek step (the arrow keys), as large as the limits say.
    public mutating func seek(_ step: PlaybackLimits.SeekStep, engineItemTime: ItemTime?, now: LocalInstant) -> [Action] {
        seek(by: limits.offset(of: step), engineItemTime: engineItemTime, now: now)
    }

    mutating func requestSeek(to itemTime: ItemTime, now: LocalInstant) -> [Action] {
        let playing = timeline.map { $0.isPlaying || isWaiting($0) } ?? false
        let command = TimelineRequest.Command.seek(itemTime: max(.zero, itemTime), play: playing)
        return requestProposing(command, now: now) ?? request(command, now: now)
    }

    // MARK: Rate

    /// The rate the group plays at, as this peer knows it (1 before the first timeline).
    public var rate: Double { timeline?.rate ?? 1 }

    /// Asks the group to play at `rate`. Throws (`.invalid`) for a rate outside the limits' range.
    public mutating func setRate(_ rate: Double, now: LocalInstant) throws(Refusal) -> [Action] {
        if let refusal = limits.refusingRate(rate) { throw refusal }
        return requestProposing(.rate(rate), now: now) ?? request(.rate(rate), now: now)
    }

    /// Asks the group to play at the next rate step up (or down) from its rate. Throws (`.invalid`) at the end of
    /// the steps.
    public mutating func stepRate(up: Bool, now: LocalInstant) throws(Refusal) -> [Action] {
        let next = try limits.steppedRate(from: rate, up: up).get()
        return try setRate(next, now: now)
    }
}
