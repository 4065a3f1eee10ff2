/// A command the coordinator gives its `PlaybackEngine`. The driver runs them one after another, in order, and
/// reports each one's outcome back with the same id (`PlaybackCoordinatorStateMachine.engineCompleted`).
public enum EngineCommand: Hashable, Sendable {
    /// Load the item the activity names; the driver resolves `itemID` to a file or URI.
    case load(itemID: String)
    /// Pause and preroll at `itemTime`, ready to start at `rate`.
    case prepare(itemTime: ItemTime, rate: Double)
    /// Render `itemTime` when the engine's clock reads `sessionTime`, then continue at `rate`.
    case play(from: ItemTime, atSessionTime: SessionInstant, rate: Double)
    /// Pause at once.
    case pause
    /// New clock calibration (local → session). Completes at once; needs no outcome report.
    case setClockMapping(ClockMapping)
}

/// What an engine command came to, as the driver reports it.
public enum EngineOutcome: Hashable, Sendable {
    case loaded(MediaInfo)
    case prepared(itemTime: ItemTime)
    case playing
    case paused(itemTime: ItemTime)
    case failed(PlaybackError)
}

/// Something an app may want to show or react to.
public enum CoordinatorEvent: Hashable, Sendable {
    /// The group's timeline changed (a new generation arrived).
    case timelineChanged(Timeline)
    /// A notice from the authority, or one the coordinator raised itself (e.g. `.differentMedia`).
    case notice(Notice)
    /// The other participants' states changed.
    case otherParticipantsChanged([ParticipantState])
    /// The group waits for these participants before it plays.
    case waiting(for: [ParticipantID: [SuspensionReason]])
    /// The activity (and so the item) changed.
    case activityChanged(ActivityEnvelope)
    /// The session's queue changed (entries, order, or the entry that plays).
    case queueChanged(SessionQueue)
    /// The local player failed; the error says what the user can do.
    case engineFailed(PlaybackError)
    /// A request of ours was turned down by an older authority (`ServerMessage.rejected`); it also arrives on
    /// `PlaybackCoordinator.refusals`, where current authorities' refusals arrive.
    case requestRejected(requestID: UInt64, reason: String)
    /// The reasons this participant currently holds the group (or itself) back for.
    case localSuspensionsChanged([SuspensionReason])
    /// Local playback strayed from the timeline and is being resynchronised.
    case resynchronising(drift: TimeSpan)
    /// The session ended for this participant.
    case invalidated(InvalidationReason)
}

/// Identifies one local suspension.
public struct SuspensionID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "suspension \(rawValue)" }
}
