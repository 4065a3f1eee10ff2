import Synchronization
import Tandem

/// The session's timelines as a participant without a player follows them (the Syncplay bridge, a Syncplay
/// client's link): a waiting timeline is acknowledged at once, so the group never waits for it, and the change it
/// waited for (a seek, a start) settles later under no one's name — it stays its requester's.
final class SettledTimeline: Sendable {
    /// A settled change of the timeline.
    struct Change {
        var old: Timeline
        var new: Timeline
        /// Who asked for it (for a change that waited: who asked before the wait).
        var origin: ParticipantID?
        /// Whether it jumps (more than a second from where the old timeline would be) rather than going on.
        var seeks: Bool
        /// Whether it is a change at all to someone who follows play, pause and jumps.
        var isNews: Bool { new.isPlaying != old.isPlaying || seeks }
    }

    /// The latest timeline that was playing or paused (not waiting).
    let current: Locked<Timeline?>
    private let pendingOriginator = Mutex<ParticipantID?>(nil)

    init(_ initial: Timeline?) { current = Locked(initial) }

    /// Takes the session's `new` timeline: nil for a waiting one (acknowledged on `link` as prepared) and for the
    /// first settled one (nothing to compare it with).
    func take(_ new: Timeline, link: TandemClientConnection) async -> Change? {
        if case .waiting = new.status {
            try? await link.send(.prepared(generation: new.generation))
            if let originator = new.originator { pendingOriginator.withLock { $0 = originator } }
            return nil
        }
        let pending = pendingOriginator.withLock { p in defer { p = nil }; return p }
        guard let old = current.withLock({ t in defer { t = new }; return t }) else { return nil }
        let continued = old.expectedItemTime(atSessionTime: new.anchorSessionTime).seconds
        return Change(old: old, new: new, origin: new.originator ?? pending,
                      seeks: abs(continued - new.anchorItemTime.seconds) > 1)
    }
}
