import Foundation

// Taking part after entering (`waiting`), and the notices apps post.

extension SessionAuthority {
    /// `id` takes part: it gets the queue, the timeline and the journal now (what a welcome would have carried),
    /// and everyone hears that it joined.
    mutating func takePart(_ id: ParticipantID, now: SessionInstant) -> [Action] {
        guard var member = members[id], !member.hasJoined else { return [] }
        member.hasJoined = true
        member.isExcused = timeline.isPlaying && !configuration.lateJoinersPauseGroup
        members[id] = member
        membershipChanged()
        var actions: [Action] = [.send(.queue(queue), to: id), .send(.timeline(timeline), to: id)]
        actions += journalReplay(to: id)
        actions += broadcastParticipants()
        actions += broadcast(notice(.joined, id, "\(member.participant.name) joined", now))
        return actions + reconcile(now: now)
    }

    /// An app's notice: one bounded line from `id` to everyone, rate-limited with its app messages.
    mutating func appNotice(_ text: String, from id: ParticipantID, now: SessionInstant) -> [Action] {
        let line = TextBounds.line(text, maxBytes: TextBounds.maxNoticeBytes)
        guard !line.isEmpty else { return [.send(.refused(Refusal(.invalid, "an empty notice was not shown")), to: id)] }
        guard takeMessageToken(for: id, now: now) else {
            return [.send(.refused(Refusal(.rateLimited, "too many messages: the limit is \(configuration.appMessagesPerSecond) "
                                           + "per second (bursts of \(configuration.appMessageBurst)) — show notices less often")),
                          to: id)]
        }
        return broadcast(.notice(Notice(kind: .app, participant: id, text: line, sessionTime: now)))
    }
}
