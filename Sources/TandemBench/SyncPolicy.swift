
/// Whose rules turn the group's timeline into rendering on each peer.
package enum SyncPolicy: String, CaseIterable, Codable, Sendable {
    /// Tandem's `PlaybackCoordinator`: clock sync with drift, scheduled starts on a calibrated pipeline clock.
    case tandem
    /// A re-implementation of Syncplay's published rules (benchmarks only).
    case syncplayRules = "syncplay-rules"
    /// A re-implementation of Jellyfin SyncPlay's published rules (benchmarks only).
    case jellyfinRules = "jellyfin-rules"

    package var label: String {
        switch self {
        case .tandem: return "tandem"
        case .syncplayRules: return "syncplay-rules (re-implementation)"
        case .jellyfinRules: return "jellyfin-rules (re-implementation)"
        }
    }
}
