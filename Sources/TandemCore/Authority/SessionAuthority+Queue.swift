import Foundation

// The shared queue: editing it, moving the group between its entries, and going on at the end of an item.
//
// A transition is an activity change (`changeActivity`): everyone loads the entry's item, the group waits for all
// of them (a failed load is excused, as for any item) and starts together from the proposed item time. At the end
// of an item the group goes on once every connected participant that has not failed to load the item has reported
// its end (`reachedEnd`), or `queue.endOfItemGrace` after the first did; after the last entry it pauses at the end.
// A queue of one entry (a session of one item) is left alone at its end, as a session without a queue.

extension SessionAuthority {
    mutating func handleQueue(_ request: QueueRequest, from id: ParticipantID, now: SessionInstant) -> [Action] {
        switch request {
        case .add(let proposed, let index):
            if let refusal = refusingQueueEdit("add to the queue", by: id) { return [.send(.refused(refusal), to: id)] }
            return addToQueue(proposed, at: index, by: id, now: now)
        case .remove(let entryID):
            if let refusal = refusingQueueEdit("remove from the queue", by: id) { return [.send(.refused(refusal), to: id)] }
            guard let index = queue.index(of: entryID) else { return refuse(noSuchEntry(entryID), to: id) }
            guard index != queue.currentIndex else {
                return refuse("cannot remove \"\(queue.entries[index].title)\" while it plays — go to another item first", to: id)
            }
            let removed = queue.entries.remove(at: index)
            if let current = queue.currentIndex, current > index { queue.currentIndex = current - 1 }
            return broadcast(.queue(queue))
                + broadcast(notice(.info, id, "\(name(of: id)) removed \(removed.title) from the queue", now))
        case .move(let entryID, let to):
            if let refusal = refusingQueueEdit("reorder the queue", by: id) { return [.send(.refused(refusal), to: id)] }
            guard let index = queue.index(of: entryID) else { return refuse(noSuchEntry(entryID), to: id) }
            let currentID = queue.current?.id
            let entry = queue.entries.remove(at: index)
            queue.entries.insert(entry, at: min(max(0, to), queue.entries.count))
            queue.currentIndex = currentID.flatMap { queue.index(of: $0) }
            return broadcast(.queue(queue))
        case .transition(let target, let itemTime, let play):
            guard itemTime.nanoseconds >= 0 else {
                return refuse("cannot start an item before its start — use a time of 0 or more seconds", to: id)
            }
            let index: Int
            switch target {
            case .next:
                let next = (queue.currentIndex ?? -1) + 1
                guard next < queue.entries.count else {
                    return refuse(queue.entries.isEmpty ? "the queue is empty — add an item first"
                                  : "already at the last item of the queue", to: id)
                }
                index = next
            case .previous:
                guard let current = queue.currentIndex, current > 0 else {
                    return refuse("already at the first item of the queue", to: id)
                }
                index = current - 1
            case .entry(let entryID):
                guard let found = queue.index(of: entryID) else { return refuse(noSuchEntry(entryID), to: id) }
                index = found
            }
            return transition(to: index, startingAt: itemTime, play: play, by: id, now: now)
        }
    }

    /// Moves the group to entry `index` (an activity change to its activity).
    mutating func transition(to index: Int, startingAt itemTime: ItemTime, play: Bool?, by id: ParticipantID?,
                             now: SessionInstant, text: String? = nil) -> [Action] {
        queue.currentIndex = index
        let entry = queue.entries[index]
        let position = "item \(index + 1) of \(queue.entries.count)"
        let words = text.map { "\($0); \(position): \(entry.title)" }
            ?? "\(id.map { name(of: $0) } ?? "the session") went to \(position): \(entry.title)"
        return broadcast(.queue(queue)) + changeActivity(to: entry.activity, by: id, now: now, startingAt: itemTime,
                                                         play: play, text: words)
    }

    /// The host set an activity outside the queue: it takes the place of the current entry (or is added and
    /// becomes current). Nil when the queue has no room for it (nothing changes).
    mutating func replaceCurrentEntry(with envelope: ActivityEnvelope) -> [Action]? {
        var next = queue
        if let current = next.currentIndex, next.entries.indices.contains(current) {
            next.entries[current].activity = envelope
            next.entries[current].contentID = nil
        } else {
            guard next.entries.count < configuration.queue.maxEntries else { return nil }
            next.entries.append(QueueEntry(activity: envelope))
            next.currentIndex = next.entries.count - 1
        }
        guard ((try? JSONEncoder().encode(next.entries).count) ?? Int.max) <= configuration.queue.maxBytes else { return nil }
        if next.entries.count > queue.entries.count { next.entries[next.entries.count - 1] = takeQueueEntry(next.entries.last!) }
        queue = next
        return broadcast(.queue(queue))
    }

    /// `entry` with the next entry id.
    mutating func takeQueueEntry(_ entry: QueueEntry) -> QueueEntry {
        var entry = entry
        entry.id = "q\(nextQueueEntryNumber)"
        nextQueueEntryNumber += 1
        return entry
    }

    mutating func addToQueue(_ proposed: [QueueEntry], at index: Int?, by id: ParticipantID, now: SessionInstant) -> [Action] {
        let limit = configuration.queue.maxEntries
        guard !proposed.isEmpty else { return refuse("nothing to add to the queue", to: id) }
        guard queue.entries.count + proposed.count <= limit else {
            return refuse(.limit, "the queue would hold \(queue.entries.count + proposed.count) items; the limit is \(limit) — "
                + "remove some first", to: id)
        }
        var added: [QueueEntry] = []
        for var entry in proposed {
            switch bounded(entry.activity) {
            case .success(let envelope): entry.activity = envelope
            case .failure(let problem): return refuse(.tooLarge, problem.reason, to: id)
            }
            if let contentID = entry.contentID, contentID.utf8.count > TextBounds.maxIdentifierBytes {
                return refuse(.tooLarge, "a queue item's content fingerprint is \(contentID.utf8.count) bytes; the limit is "
                    + "\(TextBounds.maxIdentifierBytes)", to: id)
            }
            added.append(entry)
        }
        var next = queue
        let at = min(max(0, index ?? next.entries.count), next.entries.count)
        next.entries.insert(contentsOf: added, at: at)
        if let current = next.currentIndex, current >= at { next.currentIndex = current + added.count }
        let size = (try? JSONEncoder().encode(next.entries).count) ?? Int.max
        guard size <= configuration.queue.maxBytes else {
            return refuse(.tooLarge, "the queue would take \(AuthorityText.bytes(Int64(size))) encoded; the limit is "
                + "\(AuthorityText.bytes(Int64(configuration.queue.maxBytes))) — add fewer or smaller items", to: id)
        }
        // Ids are taken only once the whole request is accepted.
        for offset in added.indices { next.entries[at + offset] = takeQueueEntry(next.entries[at + offset]) }
        queue = next
        let what = added.count == 1 ? added[0].title : "\(added.count) items"
        var actions = broadcast(.queue(queue))
            + broadcast(notice(.info, id, "\(name(of: id)) added \(what) to the queue", now))
        // A session without an activity starts with the first entry, paused.
        if activity == nil, queue.currentIndex == nil {
            actions += transition(to: at, startingAt: .zero, play: false, by: id, now: now)
        }
        return actions
    }

    func mayEditQueue(_ id: ParticipantID) -> Bool {
        refusingQueueEdit("edit the queue", by: id) == nil
    }

    func refusingQueueEdit(_ what: String, by id: ParticipantID) -> Refusal? {
        configuration.rules.refusingQueueEdit(what, isHost: members[id]?.isHost == true)
    }

    /// A refusal of a request that makes no sense now (`Refusal.Code.invalid`).
    func refuse(_ reason: String, to id: ParticipantID) -> [Action] { refuse(.invalid, reason, to: id) }

    func refuse(_ code: Refusal.Code, _ reason: String, to id: ParticipantID) -> [Action] {
        [.send(.refused(Refusal(code, reason)), to: id)]
    }

    func noSuchEntry(_ entryID: String) -> String {
        "there is no queue item \(TextBounds.line(entryID, maxBytes: 64)) — list the queue to see its items"
    }

    // MARK: End of item

    mutating func resetEndOfItem() {
        endReports = []
        endOfItemDeadline = nil
    }

    /// A participant's player reached the end of the item of `generation`.
    mutating func reachedEnd(generation: UInt64, by id: ParticipantID, now: SessionInstant) -> [Action] {
        // A session of one item plays it to its end and stays there, as without a queue.
        guard queue.entries.count > 1, timeline.isPlaying, generation >= itemStartGeneration, generation <= timeline.generation,
              generationPositions[generation]?.itemID == timeline.itemID else { return [] }
        endReports.insert(id)
        if endOfItemDeadline == nil { endOfItemDeadline = now + configuration.queue.endOfItemGrace }
        return []  // `receive` goes on with `advanceIfEveryoneReachedEnd`
    }

    /// Who the group still waits for at the end of the item.
    var notYetAtEnd: [ParticipantID] {
        connectedIDs.filter { !endReports.contains($0) && members[$0]?.hasFailed == false }
    }

    /// Goes on to the next entry (or pauses after the last) once everyone has reached the end of the item, or
    /// the grace after the first report has passed.
    mutating func advanceIfEveryoneReachedEnd(now: SessionInstant) -> [Action] {
        guard endReason == nil, !endReports.isEmpty, let deadline = endOfItemDeadline else { return [] }
        guard timeline.isPlaying else { return [] }
        let missing = notYetAtEnd
        guard missing.isEmpty || deadline <= now else { return [] }
        resetEndOfItem()
        let title = activity?.metadata.title ?? timeline.itemID
        var reason = "everyone reached the end of \(title)"
        if !missing.isEmpty {
            reason = "going on without " + missing.map { name(of: $0) }.joined(separator: ", ")
                + " (not at the end of \(title) \(AuthorityText.duration(configuration.queue.endOfItemGrace)) after the first)"
        }
        if let current = queue.currentIndex, current + 1 < queue.entries.count {
            return transition(to: current + 1, startingAt: .zero, play: true, by: nil, now: now, text: reason)
        }
        // The end of the queue: the group pauses at the end.
        let end = clampToItem(timeline.expectedItemTime(atSessionTime: now))
        return publish(status: .paused, anchorSessionTime: now, anchorItemTime: end, originator: nil)
            + broadcast(notice(.paused, nil, "\(reason); the queue is over, paused at \(AuthorityText.itemTime(end))", now))
    }
}
