// What participants report of themselves (their link, where they stand prepared), and when everyone hears of it.

extension SessionAuthority {
    /// A participant's link report: its one-way delay, clock error, render offset, preroll estimate, delay spread,
    /// display and start latency. Everyone hears the participant list when the render offset moved
    /// (`noteRenderOffset`), or for news that proposed starts are made with: a new preroll estimate or start latency
    /// (reports carry one only when it moved by a millisecond or more), the first spread, a display come, gone or
    /// moved (`DisplayGrid.hasMoved(from:)`): at most once a second (`shareListNews`).
    mutating func noteLinkReport(of id: ParticipantID, oneWayDelay: TimeSpan, errorBound: TimeSpan,
                                 renderOffset: TimeSpan?, prerollEstimate: TimeSpan?, spread: TimeSpan?,
                                 display: DisplayGrid?, startLatency: TimeSpan? = nil,
                                 now: SessionInstant) -> [Action] {
        guard var member = members[id] else { return [] }
        let hadSpread = member.returnDelaySpread != nil
        member.oneWayDelay = max(.zero, oneWayDelay)
        member.errorBound = max(.zero, errorBound)
        if let prerollEstimate { member.prerollEstimate = Self.boundedPreroll(prerollEstimate) }
        if let spread { member.returnDelaySpread = Self.boundedPreroll(spread) }
        if let display { member.display = display.validated(now: now) }
        if let startLatency { member.startLatency = Self.boundedStartLatency(startLatency) }
        let displayNews = member.display.map { $0.hasMoved(from: member.sharedDisplay) } ?? (member.sharedDisplay != nil)
        let news = prerollEstimate != nil || startLatency != nil || displayNews
            || hadSpread != (member.returnDelaySpread != nil)
        let tell: Bool
        if member.noteRenderOffset(renderOffset, now: now) {
            member.listNews?.pending = false
            tell = true
        } else {
            tell = member.shareListNews(news, now: now)
        }
        if tell { member.sharedDisplay = member.display }
        members[id] = member
        return tell ? broadcastParticipants() : []
    }

    /// A participant stands prepared for `generation`. Everyone hears who stands prepared where a paused or waiting
    /// group stands (`ParticipantState.preparedGeneration`): a start proposed from there counts no preroll for them,
    /// as the authority does not.
    mutating func notePrepared(_ generation: UInt64, by id: ParticipantID, now: SessionInstant) -> [Action] {
        let before = members[id]?.prepared?.generation
        if let position = generationPositions[generation] {
            members[id]?.prepared = PreparedPosition(generation: generation, position: position)
        }
        var actions = reconcile(now: now)
        if members[id]?.prepared?.generation != before, !timeline.isPlaying,
           members[id]?.shareListNews(true, now: now) == true {
            actions += broadcastParticipants()
        }
        return actions
    }
}
