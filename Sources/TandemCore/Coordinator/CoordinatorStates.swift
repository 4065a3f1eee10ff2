/// Whether the engine is rendering or stalled (network or decoder), and the suspension a stall holds open.
enum StallState: Hashable, Sendable {
    case flowing
    case stalled(suspension: UInt64)
}

/// A local pause holds playback back while its generation is on its way from the authority.
enum LocalPauseHold: Hashable, Sendable {
    case none
    /// Timeline request `request` asked the group to pause; held until its generation arrives, it is rejected,
    /// or local time `until`.
    case holding(request: UInt64, until: LocalInstant)

    var request: UInt64? {
        if case .holding(let request, _) = self { return request } else { return nil }
    }

    func holds(at now: LocalInstant) -> Bool {
        if case .holding(_, let until) = self { return now < until } else { return false }
    }
}

/// The drift watchdog: whether the engine has been off the timeline, and since when (local time).
enum DriftWatch: Hashable, Sendable {
    case steady
    case drifting(since: LocalInstant)
}
