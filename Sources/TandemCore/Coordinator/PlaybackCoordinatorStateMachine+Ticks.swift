/// Periodic input: clock calibration, link reports, the local pause hold and the drift watchdog.
extension PlaybackCoordinatorStateMachine {
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
            actions.append(.send(.linkReport(oneWayDelay: TimeSpan(nanoseconds: q.roundTrip / 2),
                                                      errorBound: TimeSpan(nanoseconds: q.errorBound))))
        }
        if case .holding(_, let until) = pauseHold, now >= until { pauseHold = .none }
        watchdog(now: now, engineItemTime: engineItemTime, into: &actions)
        reconcile(now: now, into: &actions)
        return actions
    }

    mutating func watchdog(now: Int64, engineItemTime: Int64?, into actions: inout [Action]) {
        guard let position = engineItemTime, let tl = timeline, tl.isPlaying, case .playing(let line) = target,
              let confirmed = playConfirmedAt, !isHeld(now: now), let sNow = sessionTime(atLocal: now),
              sNow > line.session + configuration.driftSettleTime,
              now > confirmed + configuration.driftSettleTime
        else { drift = .steady; return }
        let offLine = position - tl.expectedItemTime(atSessionTime: SessionInstant(nanoseconds: sNow)).nanoseconds
        guard abs(offLine) > configuration.driftThreshold else { drift = .steady; return }
        guard case .drifting(let since) = drift else { drift = .drifting(since: now); return }
        guard now - since >= configuration.driftPersistence else { return }
        drift = .steady
        resyncCount += 1
        target = .idle
        confirmedPrepared = nil
        actions.append(.event(.resynchronising(drift: TimeSpan(nanoseconds: offLine))))
    }
}
