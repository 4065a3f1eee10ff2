import Foundation

/// An item and a position in it.
struct ItemPosition: Hashable, Sendable, Codable {
    var itemID: String
    var itemTime: ItemTime
}

/// Where a participant reported being prerolled.
struct PreparedPosition: Hashable, Sendable, Codable {
    var generation: UInt64
    var position: ItemPosition
}

/// One suspension a participant holds.
struct HeldSuspension: Hashable, Sendable, Codable {
    var id: UInt64
    var reason: SuspensionReason
}

/// What the authority knows about one participant.
struct Member: Sendable, Codable {
    var participant: Participant
    var isHost: Bool
    /// The secret a reconnect of this participant must present (see `SessionAuthority.join`).
    var reconnectToken: String
    var prerollEstimate: TimeSpan
    var joinedAt: SessionInstant
    var oneWayDelay: TimeSpan = .zero
    var errorBound: TimeSpan = .zero
    /// The spread of the way from the authority to it, as it last reported (`linkReport.returnDelaySpread`).
    var returnDelaySpread: TimeSpan?
    /// Where its display refreshes and its media's frames fall, as it last reported (`linkReport.display`).
    var display: DisplayGrid?
    /// How long before a start it needs its timeline even when prerolled there (`linkReport.startLatency`).
    var startLatency: TimeSpan?
    /// The display grid the others last heard for news of it (`DisplayGrid.hasMoved(from:)`).
    var sharedDisplay: DisplayGrid?
    /// The last render offset it reported, and what the others were last told, when.
    var renderOffset: TimeSpan?
    var sharedRenderOffset: TimeSpan?
    var renderOffsetSharedAt: SessionInstant?
    /// When the others last heard the list for other news of it, and whether news waits (`shareListNews`).
    /// Optional, so that a snapshot written before it (a relay's, kept across a restart) still reads.
    var listNews: ListNews?

    struct ListNews: Sendable, Codable {
        var at: SessionInstant
        var pending: Bool
    }
    var readiness: Readiness = .unknown
    var suspensions: [HeldSuspension] = []
    var prepared: PreparedPosition?
    var isConnected = true
    /// Took part (`takePart`, or entered without `waiting`): only then does it receive the timeline, messages,
    /// notices and the journal, and only then may it change them. The group never waits for one that has not.
    var hasJoined = true
    /// Gets complete attachments as `available` and fetches their bytes on demand.
    var lazyJournal = false
    var disconnectedAt: SessionInstant?
    /// Reported `.ready` for the current item at least once (so waiting for it is re-buffering, not first load).
    var hasLoadedItem = false
    /// The group neither waits nor pauses for it (timed out, or a late joiner) until it is ready again.
    var isExcused = false
    /// Per-sender token bucket for app messages.
    var messageTokens: Double
    var tokensUpdatedAt: SessionInstant = .zero

    /// Every reason this participant holds, explicit suspensions and the implicit `.loading` of its readiness.
    func heldReasons(treatingUnknownAsLoading: Bool) -> [SuspensionReason] {
        var reasons: [SuspensionReason] = []
        switch readiness {
        case .loading: reasons.append(.loading)
        case .unknown where treatingUnknownAsLoading: reasons.append(.loading)
        default: break
        }
        for suspension in suspensions where !reasons.contains(suspension.reason) {
            reasons.append(suspension.reason)
        }
        return reasons
    }

    var hasFailed: Bool {
        if case .failed = readiness { return true } else { return false }
    }

    func isPrepared(at position: ItemPosition) -> Bool { prepared?.position == position }

    /// True when the others should hear the participant list for news of this participant other than its render
    /// offset (`news`: a new preroll estimate, its first spread, a display, prepared where the group stands), or for
    /// news held back: at most once a second however often it comes, so that a participant cannot make the server
    /// send everyone lists at its own rate. News held back goes with its next chance (the next link report).
    mutating func shareListNews(_ news: Bool, now: SessionInstant) -> Bool {
        guard news || listNews?.pending == true else { return false }
        if let held = listNews, now - held.at < .seconds(1) {
            listNews?.pending = true
            return false
        }
        listNews = ListNews(at: now, pending: false)
        return true
    }

    /// Keeps a reported render offset (clamped to ±1 h). True when the others should hear of it: it moved by a
    /// millisecond or more since they last did, and they did not in the last second (however often it reports).
    mutating func noteRenderOffset(_ offset: TimeSpan?, now: SessionInstant) -> Bool {
        guard let offset else { return false }
        let bound = TimeSpan.seconds(3600).nanoseconds
        let clamped = TimeSpan(nanoseconds: min(max(offset.nanoseconds, -bound), bound))
        renderOffset = clamped
        if let at = renderOffsetSharedAt, now - at < .seconds(1) { return false }
        if let shared = sharedRenderOffset, (shared - clamped).magnitude < .milliseconds(1) { return false }
        sharedRenderOffset = clamped
        renderOffsetSharedAt = now
        return true
    }

    var state: ParticipantState {
        var reasons: [SuspensionReason] = []
        for suspension in suspensions where !reasons.contains(suspension.reason) { reasons.append(suspension.reason) }
        var state = ParticipantState(participant: participant, readiness: readiness, suspensions: reasons,
                                     isHost: isHost, oneWayDelay: oneWayDelay, prerollEstimate: prerollEstimate,
                                     preparedGeneration: prepared?.generation, hasJoined: hasJoined,
                                     renderOffset: renderOffset)
        state.reportsDisplay = display != nil
        state.display = display
        state.returnDelaySpread = returnDelaySpread
        state.startLatency = startLatency
        return state
    }
}

/// A journal attachment the authority keeps for the session's life.
struct StoredAttachment: Sendable {
    var info: AttachmentInfo
    /// Chunks as received, in order, with their offsets: their bytes, or only their length when the transport
    /// keeps the bytes (`AuthorityConfiguration.keepsAttachmentBytes`).
    var chunks: [(offset: Int64, length: Int, bytes: Data?)] = []
    var received: Int64 = 0
    var isCommitted = false
}

/// Human-readable renderings used in notices.
package enum AuthorityText {
    /// "m:ss" or "h:mm:ss".
    static func itemTime(_ time: ItemTime) -> String {
        let totalSeconds = max(0, time.nanoseconds) / 1_000_000_000
        let hours = totalSeconds / 3600, minutes = (totalSeconds / 60) % 60, seconds = totalSeconds % 60
        if hours > 0 { return String(format: "%lld:%02lld:%02lld", hours, minutes, seconds) }
        return String(format: "%lld:%02lld", minutes, seconds)
    }

    /// "1.5×".
    static func rate(_ rate: Double) -> String {
        let text = String(format: "%.2f", rate)
            .replacingOccurrences(of: #"\.?0+$"#, with: "", options: .regularExpression)
        return "\(text)×"
    }

    /// "10 s", "1.5 s".
    static func duration(_ span: TimeSpan) -> String {
        let text = String(format: "%.1f", span.seconds)
            .replacingOccurrences(of: #"\.0$"#, with: "", options: .regularExpression)
        return "\(text) s"
    }

    package static func bytes(_ count: Int64) -> String {
        if count >= 1_000_000 { return String(format: "%.1f MB", Double(count) / 1e6) }
        if count >= 1024 { return "\(count / 1024) KiB" }
        return "\(count) bytes"
    }
}
