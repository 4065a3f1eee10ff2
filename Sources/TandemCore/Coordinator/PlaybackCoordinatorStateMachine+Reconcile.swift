/// Applying the timeline: brings the engine in line with the group's current generation.
extension PlaybackCoordinatorStateMachine {
    // MARK: Applying the timeline

    /// Whether this peer's engine is held back. A missed start is not a hold: the peer joins the line meanwhile.
    func isHeld(now: LocalInstant) -> Bool {
        suspensions.contains { $0.value != .missedStart } || stall != .flowing || pauseHold.holds(at: now)
    }

    /// A waiting generation that stops the line this peer plays (a rate change, a stall elsewhere) names a stop
    /// a little ahead of where the group is. Normally it arrives before that point; when it arrives later (a slow
    /// or retransmitted message), this peer has already shown frames the others will show only after the restart,
    /// so it tells the authority how far it got and the group resumes from there.
    func reportRenderedPast(_ tl: Timeline, playing line: Line, sessionNow: SessionInstant, into actions: inout [Action]) {
        // Only a stop on this very line (a seek names an item time of its own), and only once the engine has
        // started on it (one still prerolling for a start it missed has shown nothing of it).
        guard (line(tl.anchorSessionTime) - tl.anchorItemTime).magnitude <= .milliseconds(1),
              case .started = start else { return }
        let stopped = sessionNow + configuration.stopAllowance
        guard stopped > tl.anchorSessionTime else { return }
        actions.append(.send(.renderedPast(generation: tl.generation, itemTime: line(stopped))))
    }

    /// Brings the engine in line with the current timeline.
    mutating func reconcile(now: LocalInstant, into actions: inout [Action]) {
        guard invalidation == nil else { return }
        let wantedItem = activity?.itemID ?? timeline?.itemID
        if let wantedItem, wantedItem == load.failedItem { return }
        if let wantedItem, wantedItem != loadedItemID, wantedItem != load.item {
            // The item loaded so far stays loaded meanwhile; a load this one replaces keeps its suspension.
            target = .idle
            let suspension: UInt64
            if case .loading(_, _, let open, _) = load { suspension = open } else {
                suspension = openSuspension(.loading, into: &actions)
            }
            actions.append(.send(.readiness(.loading(progress: nil))))
            let command = issue(.load(itemID: wantedItem), into: &actions)
            load = .loading(item: wantedItem, command: command, suspension: suspension, failed: load.failedItem)
            return
        }
        guard let tl = timeline, tl.itemID == loadedItemID, load.item == nil,
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
                let sNow = mapping.sessionTime(atLocal: now)
                reportRenderedPast(tl, playing: line, sessionNow: sNow, into: &actions)
            }
            if preroll.isPrepared(at: x) {
                if reportedPreparedGeneration.map({ $0 < tl.generation }) ?? true {
                    reportedPreparedGeneration = tl.generation
                    actions.append(.send(.prepared(generation: tl.generation)))
                }
                endMissedStart(into: &actions)
                return
            }
            if case .prepared(let px, _) = target, px == x { return }   // on its way
            issueTimed(.prepare(itemTime: x, rate: tl.rate), now: now, into: &actions)
            target = .prepared(itemTime: x, rate: tl.rate)
        case .playing:
            let line = tl.projection
            if case .playing(let current) = target, current == line { return }
            let sNow = mapping.sessionTime(atLocal: now)
            // After missed starts the engine is slower than its estimate: allow one more preroll per miss, and one
            // per command the engine has not finished (it runs them in order: a join behind them starts later).
            let queued = min(commandsInFlight, 4)
            let needed = configuration.prerollEstimate * Int64(min(missedStarts, 7) + 1 + queued) + configuration.joinMargin
            if case .playing(let current) = target, loaded.info?.changesRateInPlace == true,
               (current(line.fromAnchor) - line.toAnchor).magnitude <= .milliseconds(1),
               line.fromAnchor > sNow + configuration.inPlaceSwitchMargin {
                // The new line continues the one playing (a rate change): the engine switches rate at the anchor
                // without stopping, so it needs no preroll, only the time to hand the command over.
                attemptScheduledStart(issue(.play(from: line.toAnchor, atSessionTime: line.fromAnchor, rate: line.rate),
                                            into: &actions))
            } else if case .playing = target, line.fromAnchor > sNow + configuration.joinMargin {
                // Already rendering: switch lines at the scheduled time without stopping (the engine prerolls there).
                attemptScheduledStart(issueTimed(.play(from: line.toAnchor, atSessionTime: line.fromAnchor,
                                                       rate: line.rate), now: now, into: &actions))
            } else if line.fromAnchor >= sNow + (isScheduledStart ? scheduledStartNeeds : configuration.prerollEstimate)
                        || (preroll.isPrepared(at: line.toAnchor)
                            && line.fromAnchor > sNow - configuration.lateStartAllowance) {
                // Prerolled there, a start a little past is still made on its line (the engine leaves out what is
                // past); one further past is refused, and planned again below.
                if !preroll.isPrepared(at: line.toAnchor) {
                    issueTimed(.prepare(itemTime: line.toAnchor, rate: line.rate), now: now, into: &actions)
                }
                attemptScheduledStart(issue(.play(from: line.toAnchor, atSessionTime: line.fromAnchor, rate: line.rate),
                                            into: &actions))
            } else {
                // Too late to make the scheduled start: preroll at the projected position and join alone — and, when
                // the group scheduled this start for us, tell it, so that it stops and starts again together.
                missScheduledStart(into: &actions)
                let start = sNow + needed
                let item = tl.expectedItemTime(atSessionTime: start)
                issue(.prepare(itemTime: item, rate: line.rate), into: &actions)
                issue(.play(from: item, atSessionTime: start, rate: line.rate), into: &actions)
            }
            target = .playing(line)
        }
    }
}
