/// Engine bookkeeping: command ids, what each command came to, and engine events.
extension PlaybackCoordinatorStateMachine {
    // MARK: Engine

    /// Feeds the outcome of engine command `id`.
    public mutating func engineCompleted(_ id: UInt64, _ outcome: EngineOutcome, now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        if case .prepared = outcome {} else if case .playing = outcome {} else {
            commandsInFlight = max(0, commandsInFlight - 1)   // the others count in `noteReady`
        }
        switch outcome {
        case .loaded(let info):
            // Only the latest load counts; one replaced by another is ignored.
            guard case .loading(let item, id, let suspension, _) = load else { break }
            load = .none
            loaded = .loaded(itemID: item, info: info)
            if id == lastCommandID { preroll = .prepared(itemTime: .zero, rate: 1) }
            target = .prepared(itemTime: .zero, rate: 1)
            actions.append(.send(.readiness(.ready(info))))
            closeSuspension(suspension, proposing: nil, into: &actions)
            checkMedia(now: now, into: &actions)
        case .prepared(let itemTime):
            // `preparing` only while that prepare is the latest command: an older one's outcome is ignored.
            noteReady(id, now: now)
            if case .preparing(id, _, let rate) = preroll { preroll = .prepared(itemTime: itemTime, rate: rate) }
            if recovery.command == id { finishRecovery(prepared: id == lastCommandID, into: &actions) }
        case .playing:
            noteReady(id, now: now)
            if start == .starting(command: id) {
                start = .started(at: now)
                missedStarts = 0
                // Playing the group's line: a start missed earlier is caught up with.
                if timeline?.isPlaying == true {
                    scheduledStart = nil
                    scheduledStartPlay = nil
                    endMissedStart(into: &actions)
                }
            }
        case .paused:
            break
        case .failed(let error):
            if case .loading(let item, id, let suspension, _) = load {
                // The item the engine held before stays loaded.
                load = .failed(item: item)
                actions.append(.send(.readiness(.failed(error.description))))
                closeSuspension(suspension, proposing: nil, into: &actions)
            } else if case .startMissed = error, case .starting(let current) = start, current != id {
                // A start already replaced by a newer one (queued behind it in the engine) missed: the newer one
                // stands. Planning yet another here would queue it behind that one, which then misses in turn —
                // a peer whose engine runs a command behind would never catch up.
                return actions
            } else if case .startMissed = error, start == .starting(command: id) {
                // The engine was ready only after the start it was given: plan one further along the same line,
                // allowing more time with each miss. Only a peer that keeps missing is worth telling the user about.
                start = .none
                target = .idle
                if case .prepared = preroll { preroll = .none }
                // A start the group scheduled for us: the group waits (and this peer joins alone meanwhile).
                missScheduledStart(missedPlay: id, into: &actions)
                missedStarts += 1
                if missedStarts < Self.missedStartsBeforeReporting {
                    reconcile(now: now, into: &actions)
                    return actions
                }
            } else {
                // A failed prepare or play: forget what the engine was told so the next reconcile retries.
                target = .idle
                if case .preparing = preroll { preroll = .none }
                if case .starting = start { start = .none }
                if recovery.command == id { finishRecovery(prepared: false, into: &actions) }
            }
            actions.append(.event(.engineFailed(error)))
            if case .startMissed = error { reconcile(now: now, into: &actions) }
            return actions
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    /// Feeds an asynchronous engine event (stalls, errors).
    ///
    /// Whether the engine stalled is the engine's call (`stalled` / `recovered`; GStreamerPlayer's bus pump
    /// derives them from buffering messages); `buffering` itself is progress for display.
    public mutating func engineEvent(_ event: PlaybackEngineEvent, now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .stalled:
            beginStall(into: &actions)
        case .recovered:
            endStall(into: &actions)
        case .error(let error):
            actions.append(.event(.engineFailed(error)))
        case .endOfStream:
            // Once everyone has reached the end, the authority goes on to the queue's next item.
            if let tl = timeline, tl.isPlaying, tl.itemID == loadedItemID, reportedEndGeneration != tl.generation {
                reportedEndGeneration = tl.generation
                actions.append(.send(.reachedEnd(generation: tl.generation)))
            }
        case .loading, .ready, .buffering, .warning:
            break
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    /// Missed starts in a row after which each further one is reported as `engineFailed` (the peer keeps trying).
    static var missedStartsBeforeReporting: Int { 4 }

    mutating func takeCommandID() -> UInt64 {
        let id = nextCommandID
        nextCommandID += 1
        return id
    }

    /// Gives the engine `command` and returns its id. Every command but a clock mapping becomes the latest one:
    /// the preroll it leaves is its own (a prepare's on its way, or none); a play is the start to wait for.
    /// Loads are tracked by the caller (`load`).
    @discardableResult
    mutating func issue(_ command: EngineCommand, into actions: inout [Action]) -> UInt64 {
        let id = takeCommandID()
        if case .setClockMapping = command {} else { commandsInFlight += 1 }
        switch command {
        case .load:
            lastCommandID = id
            preroll = .none
            start = .none
        case .prepare(let itemTime, let rate):
            lastCommandID = id
            preroll = .preparing(command: id, itemTime: itemTime, rate: rate)
        case .play:
            lastCommandID = id
            preroll = .none
            start = .starting(command: id)
        case .pause:
            lastCommandID = id
            preroll = .none
        case .setClockMapping:
            break
        }
        actions.append(.engine(id: id, command))
        return id
    }
}
