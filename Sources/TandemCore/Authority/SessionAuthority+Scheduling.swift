// How far ahead starts and stops are scheduled: the largest one-way delay, each participant's preroll, the margins.

extension SessionAuthority {
    /// Where a playing group stops (a rate change, a stall): once the news has reached the farthest peer, plus the
    /// stop margin. Peers stop on arrival, short of it, and resume there, so nobody shows a frame twice.
    func stopPoint(now: SessionInstant) -> (sessionTime: SessionInstant, itemTime: ItemTime) {
        let stopAt = now + maxOneWayDelay + stopMargin
        return (stopAt, clampToItem(timeline.expectedItemTime(atSessionTime: stopAt)))
    }

    /// Whether seeks and rate changes start on a schedule instead of after a prepare round (`optimisticStarts`).
    var schedulesStarts: Bool {
        configuration.optimisticStarts && maxOneWayDelay >= configuration.optimisticStartsFromOneWayDelay
    }

    var maxOneWayDelay: TimeSpan {
        connectedIDs.compactMap { members[$0]?.oneWayDelay }.max() ?? .zero
    }

    /// How far ahead a start must be scheduled so every participant can make it: the largest one-way delay plus
    /// preroll (none for a participant prepared at `position`; everyone's when `position` is nil) plus the margin.
    /// Excused participants catch up on their own and do not add their preroll.
    func lead(at position: ItemPosition?) -> TimeSpan {
        var slowest = TimeSpan.zero
        for id in connectedIDs {
            guard let member = members[id] else { continue }
            var needed = member.oneWayDelay
            let prepared = position.map { member.isPrepared(at: $0) } ?? false
            if !prepared && !member.isExcused && !member.hasFailed { needed += member.prerollEstimate }
            slowest = max(slowest, needed)
        }
        return slowest + startMargin
    }

    /// The margin of starts: `shortLinkStartMargin` when every link is short; over longer links the widest spread of
    /// the way to a participant that they all reported, plus `shortLinkStartMargin` (`marginFromDelaySpread`);
    /// never more than `startMargin`, which is the margin while someone's spread is unknown.
    var startMargin: TimeSpan {
        let short = min(configuration.startMargin, configuration.shortLinkStartMargin)
        if maxOneWayDelay < configuration.optimisticStartsFromOneWayDelay { return short }
        guard configuration.marginFromDelaySpread else { return configuration.startMargin }
        var widest = TimeSpan.zero
        for id in connectedIDs {
            guard let member = members[id] else { continue }
            guard let spread = member.returnDelaySpread else { return configuration.startMargin }
            widest = max(widest, spread)
        }
        return min(configuration.startMargin, widest + short)
    }

    /// The margin of stops: `startMargin`, or `shortLinkStopMargin` when every link is short.
    var stopMargin: TimeSpan {
        maxOneWayDelay < configuration.optimisticStartsFromOneWayDelay
            ? min(configuration.startMargin, configuration.shortLinkStopMargin) : configuration.startMargin
    }
}
