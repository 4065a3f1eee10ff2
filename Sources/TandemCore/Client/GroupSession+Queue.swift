import Foundation

// The session's shared queue, seen from one participant: observe it, edit it, and move the group along it.

extension GroupSession {
    /// The session's queue: its entries and the one that plays (its activity is the session's activity).
    public var queue: SessionQueue { queueBox.latest ?? SessionQueue() }
    /// The queue, then every change.
    public var queueUpdates: AsyncStream<SessionQueue> { queueBox.subscribe() }

    /// Appends `activity` to the queue (or inserts it before index `at`). `itemID` names the item the timeline
    /// refers to while it plays (defaults to the title); `contentID` is its content fingerprint, when known, so that
    /// others can check their copy. Editing the queue is the host's unless the session's rules give it to everyone
    /// (else `GroupSessionError.refused`, `.notHost`); what the authority refuses later (a bound) arrives on
    /// `refusals`.
    public func addToQueue(_ activity: Activity, itemID: String? = nil, contentID: String? = nil,
                           at index: Int? = nil) async throws {
        try check { rules, isHost in rules.refusingQueueEdit("add to the queue", isHost: isHost) }
        let envelope: ActivityEnvelope
        do { envelope = try activity.envelope(itemID: itemID) } catch {
            throw SessionError.encodingFailed(String(describing: error))
        }
        try await send(.queue(.add([QueueEntry(activity: envelope, contentID: contentID)], at: index)))
    }

    /// Removes a queue entry that is not playing.
    public func removeFromQueue(entryID: String) async throws {
        try check { rules, isHost in rules.refusingQueueEdit("remove from the queue", isHost: isHost) }
        try await send(.queue(.remove(id: entryID)))
    }

    /// Moves a queue entry to `index`.
    public func moveInQueue(entryID: String, to index: Int) async throws {
        try check { rules, isHost in rules.refusingQueueEdit("reorder the queue", isHost: isHost) }
        try await send(.queue(.move(id: entryID, to: index)))
    }

    /// Moves the group to another entry, proposing its initial timing, as AVPlaybackCoordinator's
    /// `transitionToItem(withIdentifier:proposingInitialTimingBasedOn:)`: everyone loads the item and the group
    /// starts from `itemTime` together once all have. `play` nil keeps what the group does (playing or paused).
    public func transition(to target: QueueTarget, startingAt itemTime: ItemTime = .zero, play: Bool? = nil) async throws {
        try await send(.queue(.transition(to: target, startingAt: itemTime, play: play)))
    }

    /// The queue's next entry, from its start.
    public func next() async throws { try await transition(to: .next) }

    /// The queue's previous entry, from its start.
    public func previous() async throws { try await transition(to: .previous) }
}

extension GroupSession {
    /// Appends `entries` to the queue in one request (or inserts them before index `at`): all are added, or none
    /// (the authority refuses the whole request when one is out of bounds). Their ids are the authority's.
    public func addToQueue(entries: [QueueEntry], at index: Int? = nil) async throws {
        try check { rules, isHost in rules.refusingQueueEdit("add to the queue", isHost: isHost) }
        try await send(.queue(.add(entries, at: index)))
    }
}
