import Foundation

// Bounds on what a participant puts into state the authority shares with everyone (see `TextBounds`).

/// Why a request is refused, in words for the requester.
struct BoundsProblem: Error {
    var reason: String
}

extension SessionAuthority {
    /// The envelope with its display text cleaned and bounded, or why it is refused: identifiers longer than
    /// `TextBounds.maxIdentifierBytes`, or an encoding larger than `maxActivitySize`.
    func bounded(_ envelope: ActivityEnvelope) -> Result<ActivityEnvelope, BoundsProblem> {
        var envelope = envelope
        envelope.metadata.title = envelope.metadata.title.map {
            TextBounds.line($0, maxBytes: TextBounds.maxTitleBytes)
        }
        envelope.metadata.subtitle = envelope.metadata.subtitle.map {
            TextBounds.line($0, maxBytes: TextBounds.maxSubtitleBytes)
        }
        let identifiers: [(String, String)] = [
            ("activity identifier", envelope.activityIdentifier),
            ("item id", envelope.itemID),
            ("activity type", envelope.metadata.type.rawValue),
            ("fallback URL", envelope.metadata.fallbackURL?.absoluteString ?? ""),
        ]
        for (what, value) in identifiers where value.utf8.count > TextBounds.maxIdentifierBytes {
            return .failure(BoundsProblem(reason: "the activity's \(what) is \(AuthorityText.bytes(Int64(value.utf8.count))); "
                + "the limit is \(TextBounds.maxIdentifierBytes) bytes"))
        }
        let size = (try? JSONEncoder().encode(envelope).count) ?? Int.max
        guard size <= configuration.maxActivitySize else {
            return .failure(BoundsProblem(reason: "the activity is \(AuthorityText.bytes(Int64(size))) "
                + "encoded; the limit is \(AuthorityText.bytes(Int64(configuration.maxActivitySize))) — keep large data "
                + "(e.g. a preview image) small or send it as a journal attachment"))
        }
        return .success(envelope)
    }

    /// A reported preroll estimate, within 0…10 s: it sets how far ahead everyone's starts are scheduled, so one
    /// peer's absurd figure must not hold the group for minutes.
    static func boundedPreroll(_ estimate: TimeSpan) -> TimeSpan { min(max(.zero, estimate), .seconds(10)) }

    /// A reported start latency, within 0…1 s (a browser's `play()` takes about a tenth of that): it delays every
    /// start from a prepared position, so one peer's absurd figure must not.
    static func boundedStartLatency(_ latency: TimeSpan) -> TimeSpan { min(max(.zero, latency), .seconds(1)) }

    /// A reported readiness with its text bounded (it is part of every participant list).
    static func bounded(_ readiness: Readiness) -> Readiness {
        switch readiness {
        case .ready(var info):
            info.contentID = info.contentID.map { TextBounds.truncated($0, maxBytes: TextBounds.maxReasonBytes) }
            info.title = info.title.map { TextBounds.line($0, maxBytes: TextBounds.maxReasonBytes) }
            return .ready(info)
        case .failed(let why):
            return .failed(TextBounds.line(why, maxBytes: TextBounds.maxNoticeBytes))
        case .loading, .unknown:
            return readiness
        }
    }

    /// A suspension reason with its name bounded (it is part of every participant list and waiting timeline).
    static func bounded(_ reason: SuspensionReason) -> SuspensionReason {
        guard reason.rawValue.utf8.count > TextBounds.maxReasonBytes else { return reason }
        return SuspensionReason(rawValue: TextBounds.truncated(reason.rawValue, maxBytes: TextBounds.maxReasonBytes))
    }

    /// An attachment id as quoted back in a refusal.
    package static func quoted(_ attachmentID: String) -> String {
        TextBounds.line(attachmentID, maxBytes: TextBounds.maxAttachmentIDBytes)
    }

    /// Journal bytes and attachments announced so far (in progress and committed), by `owner` or in total.
    func journalUsage(of owner: ParticipantID? = nil) -> (bytes: Int64, count: Int) {
        var bytes: Int64 = 0
        var count = 0
        for stored in attachments.values where owner == nil || stored.info.owner == owner {
            bytes += stored.info.size
            count += 1
        }
        return (bytes, count)
    }

    /// Why announcing `info` would exceed a journal quota, if it would.
    func quotaProblem(announcing info: AttachmentInfo) -> String? {
        let own = journalUsage(of: info.owner)
        let all = journalUsage()
        let name = "'\(info.name)'"
        if own.count + 1 > configuration.maxAttachmentsPerParticipant {
            return "cannot add \(name): you already have \(own.count) attachments; the limit is "
                + "\(configuration.maxAttachmentsPerParticipant) per participant — remove one first"
        }
        if own.bytes + info.size > configuration.maxAttachmentBytesPerParticipant {
            return "cannot add \(name) (\(AuthorityText.bytes(info.size))): your attachments already hold "
                + "\(AuthorityText.bytes(own.bytes)); the limit is "
                + "\(AuthorityText.bytes(configuration.maxAttachmentBytesPerParticipant)) per participant — remove one first"
        }
        if all.count + 1 > configuration.maxAttachmentsPerSession {
            return "cannot add \(name): the session already has \(all.count) attachments; the limit is "
                + "\(configuration.maxAttachmentsPerSession) per session"
        }
        if all.bytes + info.size > configuration.maxAttachmentBytesPerSession {
            return "cannot add \(name) (\(AuthorityText.bytes(info.size))): the session's attachments already hold "
                + "\(AuthorityText.bytes(all.bytes)); the limit is "
                + "\(AuthorityText.bytes(configuration.maxAttachmentBytesPerSession)) per session"
        }
        return nil
    }
}
