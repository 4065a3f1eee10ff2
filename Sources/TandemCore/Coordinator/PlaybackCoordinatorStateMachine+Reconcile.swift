/// Applying the timeline: brings the engine in line with the group's current generation.
extension PlaybackCoordinatorStateMachine {
    // MARK: Applying the timeline

    func isHeld(now: LocalInstant) -> Bool {
        !suspensions.isEmpty || stall != .flowing || pauseHold.holds(at: now)
    }

    /// A waiting generation that stops the line this peer plays (a rate change, a stall elsewhere) names a stop
    /// a little ahead of where the group is. Normally it arrives before that point; when it arrives later (a slow
    /// or retransmitted message), this peer has already shown frames the others will show only after the restart,
    /// so it tells the authority how far it got and the group resumes from there.
    func reportRenderedPast(_ tl: Timeline, playing line: Line, sessionNow: SessionInstant, into actions: inout [Action]) {
        // Only a stop on this very line: a seek names an item time of its own.
        guard (line(tl.anchorSessionTime) - tl.anchorItemTime).magnitude <= .milliseconds(1) else { return }
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
                return
            }
            if case .prepared(let px, _) = target, px == x { return }   // on its way
            issue(.prepare(itemTime: x, rate: tl.rate), into: &actions)
            target = .prepared(itemTime: x, rate: tl.rate)
        case .playing:
            let line = tl.projection
            if case .playing(let current) = target, current == line { return }
            let sNow = mapping.sessionTime(atLocal: now)
            // After missed starts the engine is slower than its estimate: allow one more preroll per miss.
            let needed = configuration.prerollEstimate * Int64(min(missedStarts, 7) + 1) + configuration.joinMargin
            if case .playing(let current) = target, loaded.info?.changesRateInPlace == true,
               (current(line.fromAnchor) - line.toAnchor).magnitude <= .milliseconds(1),
               line.fromAnchor > sNow + configuration.inPlaceSwitchMargin {
                // The new line continues the one playing (a rate change): the engine switches rate at the anchor
                // without stopping, so it needs no preroll, only the time to hand the command over.
                issue(.play(from: line.toAnchor, atSessionTime: line.fromAnchor, rate: line.rate), into: &actions)
            } else if case .playing = target, line.fromAnchor > sNow + configuration.joinMargin {
                // Already rendering: switch lines at the scheduled time without stopping.
                issue(.play(from: line.toAnchor, atSessionTime: line.fromAnchor, rate: line.rate), into: &actions)
            } else if line.fromAnchor >= sNow + configuration.prerollEstimate
                        || (preroll.isPrepared(at: line.toAnchor) && line.fromAnchor > sNow) {
                if !preroll.isPrepared(at: line.toAnchor) {
                    issue(.prepare(itemTime: line.toAnchor, rate: line.rate), into: &actions)
                }
                issue(.play(from: line.toAnchor, atSessionTime: line.fromAnchor, rate: line.rate), into: &actions)
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
