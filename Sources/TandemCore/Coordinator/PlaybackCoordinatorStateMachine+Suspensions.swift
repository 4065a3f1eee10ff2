/// Local suspensions (sent to the authority when their reason makes the group wait) and engine stalls.
extension PlaybackCoordinatorStateMachine {
    // MARK: Suspensions

    /// Holds this peer back for `reason`; the group waits too when the reason triggers waiting.
    public mutating func beginSuspension(for reason: SuspensionReason, now: LocalInstant) -> (SuspensionID, [Action]) {
        var actions: [Action] = []
        let id = openSuspension(reason, into: &actions)
        reconcile(now: now, into: &actions)
        return (SuspensionID(id), actions)
    }

    /// Ends a suspension; `proposingNewTime` asks the group to resume from that item time.
    public mutating func endSuspension(_ id: SuspensionID, proposingNewTime: ItemTime? = nil, now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        closeSuspension(id.rawValue, proposing: proposingNewTime, into: &actions)
        reconcile(now: now, into: &actions)
        return actions
    }

    mutating func openSuspension(_ reason: SuspensionReason, into actions: inout [Action]) -> UInt64 {
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

    mutating func closeSuspension(_ id: UInt64, proposing: ItemTime?, into actions: inout [Action]) {
        guard let reason = suspensions.removeValue(forKey: id) else { return }
        if reason != .loading, configuration.suspensionReasonsThatTriggerWaiting.contains(reason) {
            actions.append(.send(.suspension(.end(id: id, proposedItemTime: proposing))))
        }
        actions.append(.event(.localSuspensionsChanged(localSuspensionReasons)))
    }

    // MARK: Stalls

    mutating func beginStall(into actions: inout [Action]) {
        guard stall == .flowing else { return }
        stall = .stalled(suspension: openSuspension(.stallRecovery, into: &actions))
        // A recovery still prerolling from an earlier stall is superseded: the new stall's suspension (opened
        // first, so the group never sees none) holds the group now, and the next recovery prerolls again.
        if case .prerolling(_, let previous, _) = recovery {
            recovery = .none
            closeSuspension(previous, proposing: nil, into: &actions)
        }
    }

    mutating func endStall(into actions: inout [Action]) {
        guard case .stalled(let suspension) = stall else { return }
        stall = .flowing
        // The engine froze while the timeline may have gone on: rejoin it from scratch.
        if case .playing = target { target = .idle }
        if case .prepared = preroll { preroll = .none }
        if let tl = timeline, case .waiting = tl.status, tl.itemID == loadedItemID, load.item == nil {
            // The group waits for us: preroll at its stop first and only then end the suspension (after saying
            // we are prepared), so the group restarts on that acknowledgement rather than on a worst-case
            // preroll estimate.
            let command = issue(.prepare(itemTime: tl.anchorItemTime, rate: tl.rate), into: &actions)
            target = .prepared(itemTime: tl.anchorItemTime, rate: tl.rate)
            recovery = .prerolling(command: command, suspension: suspension, generation: tl.generation)
        } else {
            closeSuspension(suspension, proposing: nil, into: &actions)
        }
    }

    /// Ends a stall suspension kept open while the engine prerolled at the group's stop.
    mutating func finishRecovery(prepared: Bool, into actions: inout [Action]) {
        guard case .prerolling(_, let suspension, let generation) = recovery else { return }
        recovery = .none
        if prepared, let tl = timeline, tl.generation == generation {
            reportedPreparedGeneration = tl.generation
            actions.append(.send(.prepared(generation: tl.generation)))
        }
        closeSuspension(suspension, proposing: nil, into: &actions)
    }
}
