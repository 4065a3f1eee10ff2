/// The shared state of playback, owned and ordered by the session authority.
///
/// `expectedItemTime(at t) = anchorItemTime + rate × (t − anchorSessionTime)` (its `projection`) while playing;
/// constant otherwise.
public struct Timeline: Hashable, Sendable, Codable {
    public enum Status: Hashable, Sendable, Codable {
        /// Rendering `anchorItemTime` at `anchorSessionTime`, advancing at `rate`.
        case playing
        case paused
        /// The group wants to play but waits for these participants (and their reasons).
        case waiting(for: [ParticipantID: [SuspensionReason]])
    }

    /// Increases with every change; every peer ends on the highest one it has seen.
    public var generation: UInt64
    public var itemID: String
    /// Playback rate while playing (> 0). Kept while paused so play resumes at it.
    public var rate: Double
    /// The session instant the line is anchored at (encoded as bare nanoseconds).
    public var anchorSessionTime: SessionInstant
    /// The item time rendered at `anchorSessionTime` (encoded as bare nanoseconds).
    public var anchorItemTime: ItemTime
    public var status: Status
    /// Who caused this generation (nil for the authority's own decisions).
    public var originator: ParticipantID?

    public init(generation: UInt64, itemID: String, rate: Double, anchorSessionTime: SessionInstant,
                anchorItemTime: ItemTime,
                status: Status, originator: ParticipantID? = nil) {
        self.generation = generation
        self.itemID = itemID
        self.rate = rate
        self.anchorSessionTime = anchorSessionTime
        self.anchorItemTime = anchorItemTime
        self.status = status
        self.originator = originator
    }

    /// The item time every peer should be rendering at session time `t`.
    /// Before a scheduled start (`t < anchorSessionTime`) that is the anchor itself.
    public func expectedItemTime(atSessionTime t: SessionInstant) -> ItemTime {
        guard case .playing = status, t > anchorSessionTime else { return anchorItemTime }
        return projection(t)
    }

    /// The line this timeline plays along: `anchorItemTime` at `anchorSessionTime`, advancing at `rate`.
    public var projection: ItemProjection {
        ItemProjection(from: anchorSessionTime, to: anchorItemTime, rate: rate)
    }

    public var isPlaying: Bool { if case .playing = status { return true } else { return false } }
}
