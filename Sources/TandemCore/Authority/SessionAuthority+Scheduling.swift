// How far ahead starts and stops are scheduled: the largest one-way delay, each participant's preroll, the margins.

/// A start a participant proposed (`TimelineRequest.proposedStart`), with when it reached those the requester sent it
/// to straight (`TimelineRequest.direct`): the request's time plus the delay it names for each, bounded (at most
/// `DirectPath.maxPerRequest` of them, each `DirectPath.maxOneWayDelay` or less, from a request made no more than that
/// before its arrival and not later than it; otherwise none count).
struct StartProposal: Sendable, Hashable {
    var at: SessionInstant
    var reaches: [ParticipantID: SessionInstant] = [:]

    init(at: SessionInstant, reaches: [ParticipantID: SessionInstant] = [:]) {
        self.at = at
        self.reaches = reaches
    }

    init?(_ request: TimelineRequest, now: SessionInstant) {
        guard let at = request.proposedStart else { return nil }
        self.at = at
        let sent = request.requestedAtSessionTime
        // A request's time is the requester's estimate: a little after its arrival is its clock's error, more is
        // not taken (nor one too old to have saved anything).
        guard let direct = request.direct, sent <= now + DirectPath.maxOneWayDelay,
              now - sent <= DirectPath.maxOneWayDelay else { return }
        for path in direct.prefix(DirectPath.maxPerRequest)
        where path.oneWayDelay >= .zero && path.oneWayDelay <= DirectPath.maxOneWayDelay {
            reaches[path.participant] = sent + path.oneWayDelay
        }
    }
}

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

    var maxOneWayDelay: TimeSpan { maxOneWayDelay(excluding: nil) }

    /// The largest one-way delay to the connected participants other than `excluded`; with `reaches` (a proposal
    /// sent straight to some, `StartProposal`), the way to those counts from now to when it reached them, where
    /// that is sooner.
    func maxOneWayDelay(excluding excluded: ParticipantID?, reaches: [ParticipantID: SessionInstant] = [:],
                        now: SessionInstant? = nil) -> TimeSpan {
        connectedIDs.filter { $0 != excluded }.compactMap { id in
            members[id].map { way(to: id, $0, reaches: reaches, now: now) }
        }.max() ?? .zero
    }

    /// How long from `now` news takes to reach `member`: its one-way delay, or less where a proposal went to it
    /// straight (`reaches`, with `now` given).
    func way(to id: ParticipantID, _ member: Member, reaches: [ParticipantID: SessionInstant],
             now: SessionInstant?) -> TimeSpan {
        guard let now, let reach = reaches[id] else { return member.oneWayDelay }
        return min(member.oneWayDelay, max(.zero, reach - now))
    }

    /// How far ahead a start must be scheduled so every participant can make it: the largest one-way delay plus
    /// preroll (for a participant prepared at `position` only its start latency, a browser page's `play()`;
    /// everyone's preroll when `position` is nil) plus the margin. Excused participants catch up on their own and
    /// do not add their preroll.
    /// With `reaches` and `now`, the way to a participant a proposal went to straight is counted as `way(to:)` does.
    func lead(at position: ItemPosition?, excluding excluded: ParticipantID? = nil,
              reaches: [ParticipantID: SessionInstant] = [:], now: SessionInstant? = nil) -> TimeSpan {
        var slowest = TimeSpan.zero
        for id in connectedIDs where id != excluded {
            guard let member = members[id] else { continue }
            var needed = way(to: id, member, reaches: reaches, now: now)
            let prepared = position.map { member.isPrepared(at: $0) } ?? false
            if !member.isExcused && !member.hasFailed {
                needed += prepared ? member.startLatency ?? .zero : member.prerollEstimate
            }
            slowest = max(slowest, needed)
        }
        return slowest + startMargin
    }

    /// A start from `position` at `proposed`, which participant `requester` proposed (`TimelineRequest
    /// .proposedStart`) and starts at itself: no earlier than every other participant can make; nil (the authority's
    /// own schedule, `scheduled`) when proposals are not honoured or it is more than `maxProposedStartDelay` later.
    func proposedStart(_ proposal: StartProposal?, by requester: ParticipantID?, at position: ItemPosition,
                       scheduled: SessionInstant, now: SessionInstant) -> SessionInstant? {
        guard configuration.honoursProposedStarts, let proposal, let requester,
              proposal.at <= scheduled + configuration.maxProposedStartDelay else { return nil }
        if proposal.at >= now + proposalFloor(at: position, excluding: requester, reaches: proposal.reaches, now: now) {
            return proposal.at
        }
        return max(proposal.at, now + lead(at: position, excluding: requester, reaches: proposal.reaches, now: now))
    }

    /// How far ahead of now a proposed start must be for every other participant to make it: for each, its way
    /// (`way(to:)`) and preroll (or start latency) as in `lead`, plus the spread of that way where it comes from the
    /// authority (its `returnDelaySpread`, none while unknown) — not the widest spread of all, nor the
    /// short-link margin, which the proposer added in quadrature with the spread of its request's way
    /// (`PlaybackCoordinatorStateMachine.proposalMargin`): a request that came late has used up that much of it.
    func proposalFloor(at position: ItemPosition, excluding excluded: ParticipantID,
                       reaches: [ParticipantID: SessionInstant], now: SessionInstant) -> TimeSpan {
        var floor = TimeSpan.zero
        for id in connectedIDs where id != excluded {
            guard let member = members[id] else { continue }
            let way = way(to: id, member, reaches: reaches, now: now)
            var needed = way
            if !member.isExcused && !member.hasFailed {
                needed += member.isPrepared(at: position) ? member.startLatency ?? .zero : member.prerollEstimate
            }
            // A way from the authority spreads; one that went straight has already arrived, or the proposer allowed
            // for it with its own spread.
            if way == member.oneWayDelay && reaches[id].map({ $0 - now >= way }) ?? true {
                needed += member.returnDelaySpread ?? .zero
            }
            floor = max(floor, needed)
        }
        return floor
    }

    /// The margin of starts: `shortLinkStartMargin` when every link is short; over longer links the widest spread of
    /// the way to a participant that they all reported, combined in quadrature (the root of the sum of the squares)
    /// with `shortLinkStartMargin` (`marginFromDelaySpread`); never more than `startMargin`, which is the margin while
    /// someone's spread is unknown. Not added: the spread is about the 99th percentile of the way's delay beyond its
    /// least, the short-link margin the hand-over to the players, and the two are independent, so both are at their
    /// worst at once far less often than either is.
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
        return min(configuration.startMargin, Self.inQuadrature(widest, short))
    }

    /// The root of the sum of the squares of `a` and `b` (both taken as at least zero), rounded up to the nanosecond.
    static func inQuadrature(_ a: TimeSpan, _ b: TimeSpan) -> TimeSpan {
        let x = Double(max(0, a.nanoseconds)), y = Double(max(0, b.nanoseconds))
        return TimeSpan(nanoseconds: Int64((x * x + y * y).squareRoot().rounded(.up)))
    }

    /// A start at `start` from `itemTime` at `rate`, moved later by less than a refresh so that the line's frames
    /// fall on the refreshes of the displays peers reported (`linkReport.display`; browser pages): each such peer
    /// then shows every frame on a refresh at the line's time, where otherwise the line could fall anywhere between
    /// two and leave it up to half a refresh off however well it follows. Of several displays (at most
    /// `maxDisplaysAligned`, the first connected), the start nearest all of them: the least of the largest
    /// distances from a refresh, the earliest of equals. Unchanged when nobody reported a display, when the media's
    /// frames do not come a whole number of refreshes apart at `rate`, or with `alignsStartsToDisplays` off.
    /// With `earlier`, the start may also move up to that much earlier (a proposal its proposer put on a refresh).
    /// With `seeking` (a seek scheduled without a prepare round), the frames are counted from `itemTime`: a page
    /// shows the seek's own item time as its first frame and the next ones a frame apart from there (Chromium's
    /// `mediaTime`), so the frames it reported before the seek no longer say where they fall
    /// (`DisplayGrid.rebased(at:)`). After a prepare round the page has reported its frames there.
    func alignedToDisplays(_ start: SessionInstant, itemTime: ItemTime, rate: Double,
                           earlier: TimeSpan = .zero, seeking: Bool = false) -> SessionInstant {
        guard configuration.alignsStartsToDisplays else { return start }
        var grids: [DisplayGrid] = []
        for id in connectedIDs {
            guard let reported = members[id]?.display,
                  case let grid = seeking ? reported.rebased(at: itemTime) : reported,
                  grid.frameInstant(anchor: start, itemTime: itemTime, rate: rate) != nil
            else { continue }
            grids.append(grid)
            if grids.count == Self.maxDisplaysAligned { break }
        }
        guard !grids.isEmpty else { return start }
        return DisplayGrid.aligned(start - earlier, itemTime: itemTime, rate: rate, grids: grids)
    }

    /// The most displays a start is put on the refreshes of (the work is their square).
    static var maxDisplaysAligned: Int { 8 }

    /// The margin of stops: `startMargin`, or `shortLinkStopMargin` when every link is short.
    var stopMargin: TimeSpan {
        maxOneWayDelay < configuration.optimisticStartsFromOneWayDelay
            ? min(configuration.startMargin, configuration.shortLinkStopMargin) : configuration.startMargin
    }
}
