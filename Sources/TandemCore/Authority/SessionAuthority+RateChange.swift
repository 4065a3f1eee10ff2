// A rate request: a new line that continues the current one where every player changes rate in place, a stop and
// a prepare round otherwise (ARCHITECTURE.md, "Changing rate without stopping").

extension SessionAuthority {
    mutating func changeRate(to rate: Double, from id: ParticipantID,
                             now: SessionInstant, proposed: StartProposal? = nil) -> [Action] {
        let who = name(of: id)
        // Outside the announced range: refused, not clamped (a speed nobody asked for would surprise the group).
        if let refusal = configuration.playback.refusingRate(rate) { return [.send(.refused(refusal), to: id)] }
        var actions: [Action]
        if timeline.isPlaying, everyoneChangesRateInPlace {
            // Every player switches rate without stopping: the new line continues the current one from where
            // the group will be once the request has reached everyone, and nobody prerolls. A player it reaches a
            // little late switches at once and corrects, so the margin is the small one. A switch the requester
            // proposed (and makes itself) is kept when the others can make it.
            let margin = min(startMargin, configuration.rateSwitchMargin)
            let scheduled = now + maxOneWayDelay + margin
            var switchAt = scheduled
            if configuration.honoursProposedStarts, let proposed,
               proposed.at <= scheduled + configuration.maxProposedStartDelay {
                switchAt = max(proposed.at,
                               now + maxOneWayDelay(excluding: id, reaches: proposed.reaches, now: now) + margin)
            }
            let itemTime = clampToItem(timeline.expectedItemTime(atSessionTime: switchAt))
            stopWaiting()
            actions = publish(status: .playing, anchorSessionTime: switchAt, anchorItemTime: itemTime, rate: rate,
                              originator: id)
        } else if timeline.isPlaying, schedulesStarts,
                  blockers(at: ItemPosition(itemID: timeline.itemID, itemTime: timeline.anchorItemTime),
                           requiringPreparation: false).isEmpty {
            // Someone's player changes rate with a flushing seek: the new line starts where the group will be once
            // every peer can have prerolled there (`lead`), and the others switch to it in place. Each peer stops on
            // arrival, short of that point, so nobody sees a frame twice; one that cannot be ready in time says
            // so and the group waits for it (`reconcile`).
            let start = now + lead(at: nil)
            stopWaiting()
            actions = publish(status: .playing, anchorSessionTime: start,
                              anchorItemTime: clampToItem(timeline.expectedItemTime(atSessionTime: start)), rate: rate,
                              originator: id)
        } else if timeline.isPlaying {
            // Someone's player changes rate with a flushing seek, so this goes like a seek to where the group will be
            // just after the request has reached everyone (the stop of a stall): each peer stops on arrival,
            // short of that point, and prerolls there at the new rate; all start together as soon as the last
            // is prepared (instead of after a worst-case preroll estimate). Resuming past every peer's stop
            // means nobody sees a frame twice; a peer the request reaches later still says so
            // (`renderedPast`) and the group resumes from there.
            let (stopAt, itemTime) = stopPoint(now: now)
            stopWaiting()
            let stopped = timeline
            waitingRequiresPreparation = true
            let blocking = blockers(at: ItemPosition(itemID: timeline.itemID, itemTime: itemTime),
                                    requiringPreparation: true)
            actions = publish(status: .waiting(for: blocking), anchorSessionTime: stopAt, anchorItemTime: itemTime,
                              rate: rate, originator: id)
            lineStop = LineStop(line: stopped, stopAt: stopAt)
            beginWaiting(blocking, now: now)
            actions += broadcast(notice(.rateChanged, id, "\(who) set the speed to \(AuthorityText.rate(rate))", now))
            return actions + reconcile(now: now)
        } else {
            actions = publish(status: timeline.status, anchorSessionTime: timeline.anchorSessionTime,
                              anchorItemTime: timeline.anchorItemTime, rate: rate, originator: id)
        }
        actions += broadcast(notice(.rateChanged, id, "\(who) set the speed to \(AuthorityText.rate(rate))", now))
        return actions
    }

    /// Whether every connected participant has the item loaded in a player that changes rate in place
    /// (`MediaInfo.changesRateInPlace`); one that does not (or has not said) makes a rate change a stop and a start.
    var everyoneChangesRateInPlace: Bool {
        let ids = connectedIDs
        return !ids.isEmpty && ids.allSatisfy { id in
            guard case .ready(let info) = members[id]?.readiness else { return false }
            return info.changesRateInPlace
        }
    }
}
