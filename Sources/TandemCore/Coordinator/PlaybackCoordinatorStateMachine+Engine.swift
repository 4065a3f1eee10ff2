/// Engine bookkeeping: command ids, what each command came to, and engine events.
extension PlaybackCoordinatorStateMachine {
    // MARK: Engine

    /// Feeds the outcome of engine command `id`.
    public mutating func engineCompleted(_ id: UInt64, _ outcome: EngineOutcome, now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        switch outcome {
        case .loaded(let info):
            guard id == pendingLoadID, let item = loadingItemID else { break }
            pendingLoadID = nil
            loadingItemID = nil
            loadedItemID = item
            mediaInfo = info
            failedItemID = nil
            if id == lastCommandID { confirmedPrepared = (.zero, 1) }
            target = .prepared(itemTime: .zero, rate: 1)
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
            if id == pendingPlayID { pendingPlayID = nil; playConfirmedAt = now; missedStarts = 0 }
        case .paused:
            break
        case .failed(let error):
            if id == pendingLoadID {
                pendingLoadID = nil
                failedItemID = loadingItemID
                loadingItemID = nil
                actions.append(.send(.readiness(.failed(error.description))))
                if let s = loadingSuspension { closeSuspension(s, proposing: nil, into: &actions); loadingSuspension = nil }
            } else if case .startMissed = error, id == pendingPlayID {
                // The engine was ready only after the start it was given: plan one further along the same line,
                // allowing more time with each miss. Only a peer that keeps missing is worth telling the user about.
                pendingPlayID = nil
                target = .idle
                confirmedPrepared = nil
                missedStarts += 1
                if missedStarts < Self.missedStartsBeforeReporting {
                    reconcile(now: now, into: &actions)
                    return actions
                }
            } else {
                // A failed prepare or play: forget what the engine was told so the next reconcile retries.
                target = .idle
                pendingPrepare = nil
                pendingPlayID = nil
                if recovery?.command == id { finishRecovery(prepared: false, into: &actions) }
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

    mutating func issue(_ command: EngineCommand, into actions: inout [Action]) {
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
}
