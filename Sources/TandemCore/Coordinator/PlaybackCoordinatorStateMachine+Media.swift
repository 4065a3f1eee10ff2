/// Media comparison: flags participants whose file differs from ours.
extension PlaybackCoordinatorStateMachine {
    /// Flags every participant whose loaded item differs from ours: another content id, or a duration more than
    /// `mediaDurationTolerance` away.
    mutating func checkMedia(now: Int64?, into actions: inout [Action]) {
        guard let mine = mediaInfo else { return }
        for state in otherParticipants {
            guard case .ready(let theirs) = state.readiness else { continue }
            var why: String?
            if let a = mine.contentID, let b = theirs.contentID, a != b {
                why = "a different file (content \(b.prefix(12)) here \(a.prefix(12)))"
            } else if let a = mine.duration?.nanoseconds, let b = theirs.duration?.nanoseconds,
                      abs(a - b) > configuration.mediaDurationTolerance {
                why = String(format: "a file of a different length (%.1f s, here %.1f s)", Double(b) / 1e9,
                             Double(a) / 1e9)
            }
            let id = state.participant.id
            if let why {
                if flaggedMedia.insert(id).inserted {
                    let t = SessionInstant(nanoseconds: now.flatMap { sessionTime(atLocal: $0) } ?? 0)
                    actions.append(.event(.notice(Notice(kind: .differentMedia, participant: id,
                                                         text: "\(state.participant.name) is playing \(why)",
                                                         sessionTime: t))))
                }
            } else {
                flaggedMedia.remove(id)
            }
        }
    }
}
