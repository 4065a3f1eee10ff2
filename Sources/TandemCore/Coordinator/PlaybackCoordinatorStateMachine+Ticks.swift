/// Periodic input: clock calibration, link reports, the local pause hold and the drift watchdog.
extension PlaybackCoordinatorStateMachine {
    // MARK: Ticks

    /// Periodic input: the latest clock estimate, its quality, the engine's real position (for the watchdog) and
    /// the latest moment its output rendered (for the render offset the link reports carry).
    public mutating func tick(now: LocalInstant, mapping: ClockMapping?, clockQuality: (errorBound: TimeSpan, roundTrip: TimeSpan)?,
                              engineItemTime: ItemTime?, latestRender: RenderedMoment? = nil) -> [Action] {
        var actions: [Action] = []
        guard invalidation == nil else { return actions }
        if let mapping, mapping != clockMapping {
            clockMapping = mapping
            actions.append(.engine(id: takeCommandID(), .setClockMapping(mapping)))
        }
        if let q = clockQuality,
           lastLinkReport.map({ now - $0 >= configuration.linkReportInterval }) ?? true {
            lastLinkReport = now
            let preroll = prerollEstimateToReport
            if let preroll { reportedPrerollEstimate = preroll }
            var spread = returnDelaySpread
            if let reported = reportedReturnDelaySpread, let measured = spread,
               (reported - measured).magnitude < .milliseconds(1) {
                spread = nil
            }
            if let spread { reportedReturnDelaySpread = spread }
            actions.append(.send(.linkReport(oneWayDelay: q.roundTrip / Int64(2), errorBound: q.errorBound,
                                             renderOffset: renderOffset(of: latestRender, now: now),
                                             prerollEstimate: preroll, returnDelaySpread: spread)))
        }
        if case .holding(_, let until) = pauseHold, now >= until { pauseHold = .none }
        if let provisional, now >= provisional.until { dropProvisional() }
        watchdog(now: now, engineItemTime: engineItemTime, into: &actions)
        reconcile(now: now, into: &actions)
        return actions
    }

    /// How far `render` lies from the group's line, in time (positive: ahead), when it is a recent render of
    /// settled play on the current line; nil otherwise (paused, starting, held, or nothing rendered lately).
    public func renderOffset(of render: RenderedMoment?, now: LocalInstant) -> TimeSpan? {
        guard let render, let tl = timeline, tl.isPlaying, tl.rate > 0, case .playing(let line) = target,
              case .started(let confirmed) = start, !isHeld(now: now),
              render.at > confirmed + configuration.driftSettleTime, now - render.at < .seconds(1),
              let sessionTime = sessionTime(atLocal: render.at), sessionTime > line.fromAnchor + configuration.driftSettleTime
        else { return nil }
        let ahead = render.itemTime - tl.expectedItemTime(atSessionTime: sessionTime)
        return TimeSpan(nanoseconds: Int64((Double(ahead.nanoseconds) / tl.rate).rounded()))
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
