/// Starts this peer proposes: a play, a seek that plays or a rate change made in place, asked for with the session
/// time to start at (`TimelineRequest.proposedStart`), which this peer starts at itself without waiting for the
/// timeline to come back from the authority. The authority keeps the proposal when every other participant can make
/// it, so a command from the peer whose link is the longest (a joiner with the host, whose player runs beside the
/// authority) starts a leg sooner: the request's way to the authority and the others' way from it, not the way back
/// to this peer.
///
/// The proposal is what the authority would schedule without this peer: this peer's one-way delay (the request's
/// way there), then the largest of the others' one-way delays plus their preroll (none for a play where they
/// reported being prepared), or this peer's own preroll if that is longer, plus a margin (`proposalMargin`); a rate
/// change made in place, the largest one-way delay and a small margin (`rateProposal`). It uses the participant
/// list the authority sends, and proposes nothing where that list cannot say what the authority will do: someone
/// not ready or holding a suspension (the group would wait), a browser page whose display grid the list does not
/// carry (the authority puts starts on its refreshes: where the list carries it, so does this peer), a link
/// shorter than `proposesStartsFromOneWayDelay` (a seek then has a prepare round), and where the proposal would not
/// be `proposesStartsSaving` sooner than the authority's own schedule: with others as far from the authority as this
/// peer, the command reaches them two legs after it was asked however it is scheduled, and a proposal would only
/// risk a start the authority moves.
///
/// Until the authority answers, the peer follows a provisional timeline: the base one with the proposed start, at
/// the base's generation. Any timeline from that generation on replaces it; one that names another start is followed
/// as any new timeline is (this peer joins it alone if it has already begun). A refusal, or no answer within
/// `proposalHold`, puts the base timeline back.
extension PlaybackCoordinatorStateMachine {
    /// A start this peer proposed and follows until the authority answers.
    struct ProvisionalStart: Hashable, Sendable {
        /// The timeline request that proposed it.
        var request: UInt64
        /// The authority's timeline when it was proposed.
        var base: Timeline
        /// Local time after which, without an answer, the base timeline is put back.
        var until: LocalInstant
    }

    /// The start this peer would propose for `command` now, and the item time it starts from; nil when it proposes
    /// none (see the extension's comment).
    func proposal(for command: TimelineRequest.Command, now: LocalInstant)
        -> (start: SessionInstant, itemTime: ItemTime, rate: Double)? {
        guard configuration.proposesStarts, provisional == nil, invalidation == nil, !isHeld(now: now),
              let base = timeline, base.itemID == loadedItemID, load.item == nil,
              (activity?.itemID ?? base.itemID) == base.itemID,
              let sessionNow = sessionTime(atLocal: now), let own = ownState,
              own.oneWayDelay >= configuration.proposesStartsFromOneWayDelay else { return nil }
        let itemTime: ItemTime
        let seeking: Bool
        switch command {
        case .play:
            guard base.status == .paused, preroll.isPrepared(at: base.anchorItemTime) else { return nil }
            itemTime = base.anchorItemTime
            seeking = false
        case .seek(let destination, true):
            guard base.isPlaying, case .playing = self.target else { return nil }
            itemTime = destination
            seeking = true
        case .rate(let rate):
            return rateProposal(rate, base: base, own: own, sessionNow: sessionNow)
        default:
            return nil
        }
        // The slowest of the others from the authority (what it would schedule), and from this peer's request: the
        // way through the authority, or a direct one where that is shorter.
        var slowest = TimeSpan.zero
        var slowestFromHere = TimeSpan.zero
        var grids: [DisplayGrid] = []
        for other in otherParticipants where other.hasJoined {
            guard case .ready = other.readiness, other.suspensions.isEmpty else { return nil }
            let prepared = !seeking && other.preparedGeneration == base.generation
            let needs = prepared ? other.startLatency ?? .zero : other.prerollEstimate
            slowest = max(slowest, other.oneWayDelay + needs)
            slowestFromHere = max(slowestFromHere, way(to: other, own: own) + needs)
            if other.reportsDisplay {
                // A grid the list does not carry (an older server), or one no display has: no proposal.
                guard let listed = other.display?.validated(now: sessionNow, window: .seconds(86_400)) else { return nil }
                // A seek's first frame on a page is the seek's own item time (`alignedToDisplays`).
                let grid = seeking ? listed.rebased(at: itemTime) : listed
                if grids.count < SessionAuthority.maxDisplaysAligned,
                   grid.frameInstant(anchor: sessionNow, itemTime: itemTime, rate: base.rate) != nil {
                    grids.append(grid)
                }
            }
        }
        let ownPreroll = seeking ? scheduledStartNeeds : .zero
        let lead = max(slowestFromHere, ownPreroll)
        // What the authority would schedule from the request's arrival, this peer's way back and preroll included.
        let scheduled = own.oneWayDelay + max(slowest, own.oneWayDelay + (seeking ? own.prerollEstimate : .zero))
        guard scheduled - lead >= configuration.proposesStartsSaving else { return nil }
        // On the pages' refreshes, as the authority puts its own starts (`SessionAuthority.alignedToDisplays`).
        let start = DisplayGrid.aligned(sessionNow + lead + proposalMargin(own: own), itemTime: itemTime,
                                        rate: base.rate, grids: grids)
        return (start, itemTime, base.rate)
    }

    /// A rate change every player makes in place (the new line continues the playing one, nobody prerolls): at
    /// this peer's one-way delay plus the others' largest, plus the authority's small margin for such a switch
    /// (`proposedRateSwitchMargin`) and this peer's spread; nil where someone's player cannot (a stop and a start).
    func rateProposal(_ rate: Double, base: Timeline, own: ParticipantState, sessionNow: SessionInstant)
        -> (start: SessionInstant, itemTime: ItemTime, rate: Double)? {
        guard base.isPlaying, case .playing = target, loaded.info?.changesRateInPlace == true,
              limits.refusingRate(rate) == nil else { return nil }
        var farthest = TimeSpan.zero
        var farthestFromHere = TimeSpan.zero
        for other in otherParticipants where other.hasJoined {
            guard case .ready(let info) = other.readiness, info.changesRateInPlace, other.suspensions.isEmpty
            else { return nil }
            farthest = max(farthest, other.oneWayDelay)
            farthestFromHere = max(farthestFromHere, way(to: other, own: own))
        }
        let ownSpread = own.returnDelaySpread ?? .zero
        // The authority's switch comes its way there and the farthest way from it after the request.
        let scheduled = own.oneWayDelay + max(farthest, own.oneWayDelay)
        guard scheduled - farthestFromHere - ownSpread >= configuration.proposesStartsSaving else { return nil }
        let start = sessionNow + farthestFromHere + configuration.proposedRateSwitchMargin + ownSpread
        return (start, base.expectedItemTime(atSessionTime: start), rate)
    }

    /// How long this peer's request takes to reach `other`: through the authority (this peer's one-way delay and
    /// the other's), or straight where a direct path is shorter (`directPaths`, with `Configuration.directProposals`).
    func way(to other: ParticipantState, own: ParticipantState) -> TimeSpan {
        let through = own.oneWayDelay + other.oneWayDelay
        guard configuration.directProposals,
              let direct = directPaths.first(where: { $0.participant == other.participant.id })?.oneWayDelay,
              direct >= .zero, direct <= DirectPath.maxOneWayDelay else { return through }
        return min(through, direct)
    }

    /// The participants a proposal goes to straight as well, with the delay of each way (`TimelineRequest.direct`):
    /// those with a direct path that has joined.
    func directReach() -> [DirectPath] {
        guard configuration.directProposals else { return [] }
        let joined = Set(otherParticipants.filter(\.hasJoined).map(\.participant.id))
        return Array(directPaths.filter { joined.contains($0.participant) && $0.oneWayDelay >= .zero
            && $0.oneWayDelay <= DirectPath.maxOneWayDelay }.prefix(DirectPath.maxPerRequest))
    }

    /// The margin of a proposal: this peer's spread (for the request's way there, and the way straight to those it
    /// reaches so), the widest spread of the way from the authority to the others it reaches through it, and
    /// `proposedStartSlack`, in quadrature; never more than `proposedStartMargin`, which is the margin while one of
    /// those spreads is unknown. The authority keeps the proposal when it leaves each participant its way, preroll
    /// and spread from the request's arrival (`SessionAuthority.proposalFloor`).
    func proposalMargin(own: ParticipantState) -> TimeSpan {
        guard let ownSpread = own.returnDelaySpread else { return configuration.proposedStartMargin }
        var widest = TimeSpan.zero
        for other in otherParticipants where other.hasJoined {
            // The way from the authority spreads; a shorter one straight to the participant has only the spread of
            // this peer's own sending, which `ownSpread` stands for.
            if way(to: other, own: own) < own.oneWayDelay + other.oneWayDelay { continue }
            guard let spread = other.returnDelaySpread else { return configuration.proposedStartMargin }
            widest = max(widest, spread)
        }
        // Independent, so combined in quadrature as the authority combines its own (`SessionAuthority.startMargin`):
        // this peer's request may come late by up to its spread, the news may reach another late by up to its own,
        // and the slack is the hand-over to the players.
        let x = Double(ownSpread.nanoseconds), y = Double(widest.nanoseconds)
        let z = Double(configuration.proposedStartSlack.nanoseconds)
        let margin = TimeSpan(nanoseconds: Int64((x * x + y * y + z * z).squareRoot().rounded(.up)))
        return min(configuration.proposedStartMargin, margin)
    }

    /// Asks for `command` with the start this peer proposes, and follows that start at once; nil (nothing done)
    /// when it proposes none.
    mutating func requestProposing(_ command: TimelineRequest.Command, now: LocalInstant) -> [Action]? {
        guard let (start, itemTime, rate) = proposal(for: command, now: now), let base = timeline,
              let me = localParticipantID, let sessionNow = sessionTime(atLocal: now) else { return nil }
        let id = nextRequestID
        nextRequestID += 1
        var request = TimelineRequest(requestID: id, command: command, basedOnGeneration: base.generation,
                                      requestedAtSessionTime: sessionNow)
        request.proposedStart = start
        let reach = directReach()
        if !reach.isEmpty { request.direct = reach }
        provisional = ProvisionalStart(request: id, base: base, until: now + configuration.proposalHold)
        let proposed = Timeline(generation: base.generation, itemID: base.itemID, rate: rate, anchorSessionTime: start,
                                anchorItemTime: itemTime, status: .playing, originator: me)
        timeline = proposed
        // A start this peer is to make: one it cannot make is a missed start, as one the authority scheduled.
        scheduledStart = base.generation
        drift = .steady
        var actions: [Action] = []
        if !reach.isEmpty {
            actions.append(.sendDirect(DirectProposal(from: me, requestID: id, timeline: proposed),
                                       to: reach.map(\.participant)))
        }
        actions.append(.send(.timelineRequest(request)))
        reconcile(now: now, into: &actions)
        return actions
    }

    /// A start another participant proposed and sent straight to this peer (`DirectProposal`), or a pause (where the
    /// proposer stopped, sent straight as it stopped): followed at once as its proposer follows it, until the
    /// authority's next timeline, when it was made from the timeline this peer follows, on the item loaded here, by
    /// someone in the session, for a time neither long past nor far ahead (`directProposalWindow`) at a rate this
    /// session allows; ignored otherwise (the authority's copy comes anyway).
    public mutating func receiveDirect(_ proposal: DirectProposal, now: LocalInstant) -> [Action] {
        let proposed = proposal.timeline
        guard configuration.directProposals, invalidation == nil, provisional == nil, !isHeld(now: now),
              let base = timeline, load.item == nil, base.itemID == loadedItemID,
              proposed.generation == base.generation, proposed.itemID == base.itemID,
              proposed.originator == proposal.from, proposal.from != localParticipantID,
              otherParticipants.contains(where: { $0.participant.id == proposal.from }),
              limits.refusingRate(proposed.rate) == nil, proposed.anchorItemTime >= .zero,
              mediaInfo?.duration.map({ proposed.anchorItemTime.nanoseconds <= $0.nanoseconds }) ?? true,
              let sessionNow = sessionTime(atLocal: now),
              proposed.anchorSessionTime >= sessionNow - configuration.directProposalWindow,
              proposed.anchorSessionTime <= sessionNow + configuration.directProposalWindow else { return [] }
        switch (base.status, proposed.status) {
        case (.paused, .playing):
            // A play from where the group stopped.
            guard proposed.anchorItemTime == base.anchorItemTime, proposed.rate == base.rate else { return [] }
        case (.playing, .playing):
            // A seek, or a rate change that continues the line.
            break
        case (.playing, .paused):
            // A pause where the proposer stopped.
            guard proposed.rate == base.rate else { return [] }
        default:
            return []
        }
        provisional = ProvisionalStart(request: 0, base: base, until: now + configuration.proposalHold)
        timeline = proposed
        scheduledStart = proposed.isPlaying ? base.generation : nil
        drift = .steady
        directProposalsFollowed += 1
        var actions: [Action] = []
        reconcile(now: now, into: &actions)
        return actions
    }

    /// The authority refused the proposing request, or did not answer in time: back to the timeline it had.
    mutating func dropProvisional() {
        guard let provisional else { return }
        self.provisional = nil
        timeline = provisional.base
        scheduledStart = nil
    }
}
