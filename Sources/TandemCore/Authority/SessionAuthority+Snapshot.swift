import Foundation

/// Everything a session's authority holds, as a value a relay can write down and read back after a restart
/// (`tandem serve --state-dir`): ids, roles, reconnect tokens, the activity and queue, the timeline, the journal's
/// metadata (and its bytes when the authority keeps them). The configuration is not in it: a restored authority
/// takes the server's current one.
///
/// Times are session times, i.e. the relay's `CLOCK_MONOTONIC`, which keeps counting across a process restart
/// but not across a reboot (the store that keeps snapshots must drop them after one).
public struct AuthoritySnapshot: Sendable, Codable {
    /// The layout of this value; a snapshot of another format is not read back.
    public static let currentFormat = 1
    public var format = Self.currentFormat
    public var sessionID: String
    var activity: ActivityEnvelope?
    var timeline: Timeline
    var endReason: InvalidationReason?
    var queue: SessionQueue
    /// In join order.
    var members: [Member]
    var nextParticipantNumber: Int
    var generationPositions: [UInt64: ItemPosition]
    var waitingRequiresPreparation: Bool
    var waitingSince: [ParticipantID: SessionInstant]
    var proposedResumeItemTime: ItemTime?
    var reasonsOverLimit: Set<SuspensionReason>
    var referenceMediaOwner: ParticipantID?
    var referenceMedia: MediaInfo?
    var flaggedAsDifferentMedia: Set<ParticipantID>
    /// In arrival order.
    var attachments: [Attachment]
    var hasHadHost: Bool
    var nextQueueEntryNumber: Int
    var itemStartGeneration: UInt64
    var endReports: Set<ParticipantID>
    var endOfItemDeadline: SessionInstant?

    struct Attachment: Sendable, Codable {
        var info: AttachmentInfo
        var chunks: [Chunk]
        var received: Int64
        var isCommitted: Bool
    }

    struct Chunk: Sendable, Codable {
        var offset: Int64
        var length: Int
        var bytes: Data?
    }

    /// Whether the session has ended (nothing to restore).
    public var hasEnded: Bool { endReason != nil }
}

extension SessionAuthority {
    /// The authority's state as a snapshot.
    public var snapshot: AuthoritySnapshot {
        AuthoritySnapshot(
            sessionID: sessionID, activity: activity, timeline: timeline, endReason: endReason, queue: queue,
            members: memberOrder.compactMap { members[$0] }, nextParticipantNumber: nextParticipantNumber,
            generationPositions: generationPositions, waitingRequiresPreparation: waitingRequiresPreparation,
            waitingSince: waitingSince, proposedResumeItemTime: proposedResumeItemTime,
            reasonsOverLimit: reasonsOverLimit, referenceMediaOwner: referenceMedia?.owner,
            referenceMedia: referenceMedia?.info, flaggedAsDifferentMedia: flaggedAsDifferentMedia,
            attachments: attachmentOrder.compactMap { id in
                attachments[id].map { stored in
                    AuthoritySnapshot.Attachment(info: stored.info, chunks: stored.chunks.map {
                        AuthoritySnapshot.Chunk(offset: $0.offset, length: $0.length, bytes: $0.bytes)
                    }, received: stored.received, isCommitted: stored.isCommitted)
                }
            },
            hasHadHost: hasHadHost, nextQueueEntryNumber: nextQueueEntryNumber,
            itemStartGeneration: itemStartGeneration, endReports: endReports, endOfItemDeadline: endOfItemDeadline)
    }

    /// An authority that continues from `snapshot` under `configuration`. Call `resumeAfterRestart(now:)` next.
    public init(restoring snapshot: AuthoritySnapshot, configuration: AuthorityConfiguration) {
        self.sessionID = snapshot.sessionID
        self.configuration = configuration
        self.activity = snapshot.activity
        self.timeline = snapshot.timeline
        self.endReason = snapshot.endReason
        self.queue = snapshot.queue
        for member in snapshot.members {
            members[member.participant.id] = member
            memberOrder.append(member.participant.id)
        }
        nextParticipantNumber = snapshot.nextParticipantNumber
        generationPositions = snapshot.generationPositions
        waitingRequiresPreparation = snapshot.waitingRequiresPreparation
        waitingSince = snapshot.waitingSince
        proposedResumeItemTime = snapshot.proposedResumeItemTime
        reasonsOverLimit = snapshot.reasonsOverLimit
        if let owner = snapshot.referenceMediaOwner, let info = snapshot.referenceMedia { referenceMedia = (owner, info) }
        flaggedAsDifferentMedia = snapshot.flaggedAsDifferentMedia
        for attachment in snapshot.attachments {
            attachments[attachment.info.id] = StoredAttachment(
                info: attachment.info, chunks: attachment.chunks.map { ($0.offset, $0.length, $0.bytes) },
                received: attachment.received, isCommitted: attachment.isCommitted)
            attachmentOrder.append(attachment.info.id)
        }
        hasHadHost = snapshot.hasHadHost
        nextQueueEntryNumber = snapshot.nextQueueEntryNumber
        itemStartGeneration = snapshot.itemStartGeneration
        endReports = snapshot.endReports
        endOfItemDeadline = snapshot.endOfItemDeadline
        membershipChanged()
    }

    /// Members connected or within their grace period.
    public var memberCount: Int { memberOrder.count }

    /// After a restore: no connection survived the restart, so every member still connected in the snapshot is
    /// treated as disconnected now (within its reconnect grace period, so it can come back as itself with its
    /// token); members already away keep the grace they had. Returns the wake-up for the grace periods.
    public mutating func resumeAfterRestart(now: SessionInstant) -> [Action] {
        guard endReason == nil else { return [] }
        scheduledWakeUp = nil
        var actions: [Action] = []
        for id in memberOrder where members[id]?.isConnected == true {
            actions += connectionLost(id, now: now, what: "lost connection (the server restarted)")
        }
        return actions + scheduleWakeUp()
    }
}
