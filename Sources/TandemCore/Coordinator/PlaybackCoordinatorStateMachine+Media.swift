/// Media comparison: flags participants whose file differs from ours.
extension PlaybackCoordinatorStateMachine {
    /// Flags every participant whose loaded item differs from ours: another content id, or a duration more than
    /// `mediaDurationTolerance` away.
    mutating func checkMedia(now: LocalInstant?, into actions: inout [Action]) {
        guard let mine = mediaInfo else { return }
        for state in otherParticipants {
            guard case .ready(let theirs) = state.readiness else { continue }
            var why: String?
            if let a = mine.contentID, let b = theirs.contentID, a != b {
                why = "a different file (content \(b.prefix(12)) here \(a.prefix(12)))"
            } else if let a = mine.duration, let b = theirs.duration,
                      (a - b).magnitude > configuration.mediaDurationTolerance {
                why = String(format: "a file of a different length (%.1f s, here %.1f s)", b.seconds, a.seconds)
            }
            let id = state.participant.id
            if let why {
                if flaggedMedia.insert(id).inserted {
                    let t = now.flatMap { sessionTime(atLocal: $0) } ?? .zero
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
