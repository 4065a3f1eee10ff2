/// Identifies a participant for the life of a session (kept across reconnects).
public struct ParticipantID: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { rawValue }
}

/// A member of a session.
public struct Participant: Hashable, Sendable, Codable, Identifiable {
    public let id: ParticipantID
    /// The name shown to others.
    public var name: String
    /// How this participant follows the session when it is not a Tandem player: `syncplay` for a Syncplay client
    /// (followed at Syncplay's precision, through its own connection). Absent for Tandem's own peers.
    public var via: String?
    public init(id: ParticipantID, name: String, via: String? = nil) {
        self.id = id
        self.name = name
        self.via = via
    }
}

/// Why a participant asks the group not to play yet. Extensible with `.custom`.
public struct SuspensionReason: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    /// The player is loading the item (first load).
    public static let loading = SuspensionReason(rawValue: "loading")
    /// The player stalled during playback and is re-buffering.
    public static let stallRecovery = SuspensionReason(rawValue: "stallRecovery")
    /// The player could not be ready for a start the group scheduled for it (the start came too late, or its
    /// preroll took longer than it had said): the group stops and starts again together once it is.
    public static let missedStart = SuspensionReason(rawValue: "missedStart")
    /// The user is scrubbing.
    public static let userChangingTime = SuspensionReason(rawValue: "userChangingTime")
    /// An ad or other interstitial is playing locally.
    public static let interstitial = SuspensionReason(rawValue: "interstitial")
    /// The player needs the user to act (e.g. accept a prompt).
    public static let userActionRequired = SuspensionReason(rawValue: "userActionRequired")
    /// An app-defined reason.
    public static func custom(_ name: String) -> SuspensionReason { SuspensionReason(rawValue: "custom:\(name)") }

    public var description: String {
        switch self {
        case .loading: return "loading"
        case .stallRecovery: return "buffering"
        case .missedStart: return "catching up with the start"
        case .userChangingTime: return "changing time"
        case .interstitial: return "interstitial"
        case .userActionRequired: return "needs user action"
        default: return rawValue.hasPrefix("custom:") ? String(rawValue.dropFirst(7)) : rawValue
        }
    }
}

/// Where a participant's player stands, as the group sees it.
public enum Readiness: Hashable, Sendable, Codable {
    /// Loading the item; progress 0...1 when known.
    case loading(progress: Double?)
    /// Loaded and able to play the current item.
    case ready(MediaInfo)
    /// Could not load the item (the message says why).
    case failed(String)
    /// Has not reported yet.
    case unknown
}
