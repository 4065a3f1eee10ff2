/// Periodic input: clock calibration, link reports, the local pause hold and the drift watchdog.
extension PlaybackCoordinatorStateMachine {
    // MARK: Ticks

    /// Periodic input: the latest clock estimate, its quality, and the engine's real position (for the watchdog).
    public mutating func tick(now: LocalInstant, mapping: ClockMapping?, clockQuality: (errorBound: TimeSpan, roundTrip: TimeSpan)?,
                              engineItemTime: ItemTime?) -> [Action] {
        var actions: [Action] = []
        guard invalidation == nil else { return actions }
        if let mapping, mapping != clockMapping {
            clockMapping = mapping
            actions.append(.engine(id: takeCommandID(), .setClockMapping(mapping)))
        }
        if let q = clockQuality,
           lastLinkReport.map({ now - $0 >= configuration.linkReportInterval }) ?? true {
            lastLinkReport = now
            actions.append(.send(.linkReport(oneWayDelay: q.roundTrip / Int64(2), errorBound: q.errorBound)))
        }
        if case .holding(_, let until) = pauseHold, now >= until { pauseHold = .none }
        watchdog(now: now, engineItemTime: engineItemTime, into: &actions)
        reconcile(now: now, into: &actions)
        return actions
    }

    mutating func watchdog(now: LocalInstant, engineItemTime: ItemTime?, into actions: inout [Action]) {
        guard let position = engineItemTime, let tl = timeline, tl.isPlaying, case .playing(let line) = target,
              case .started(let confirmed) = start, !isHeld(now: now), let sNow = sessionTime(atLocal: now),
              sNow > line.fromAnchor + configuration.driftSettleTime,
              now > confirmed + configuration.driftSettleTime
        else { drift = .steady; return }
        let offLine = position - tl.expectedItemTime(atSessionTime: sNow)
        guard offLine.magnitude > configuration.driftThreshold else { drift = .steady; return }
        guard case .drifting(let since) = drift else { drift = .drifting(since: now); return }
        guard now - since >= configuration.driftPersistence else { return }
        drift = .steady
        resyncCount += 1
        target = .idle
        if case .prepared = preroll { preroll = .none }
        actions.append(.event(.resynchronising(drift: offLine)))
    }
}
