import Foundation
import Tandem

extension LocalPeer {
    /// Carries out a queue command (`next`, `prev`, `jump K`, `queue add PATH`, `queue remove K`, `queue move K TO`);
    /// returns a message for the user when it cannot. Item numbers count from 1, as `queue` lists them and the
    /// status line says "item k of n". The authority's own refusals (the last item, editing without the host role,
    /// removing the item that plays) arrive as `refused` messages.
    func performQueue(_ command: UserCommand) async -> String? {
        let queue = await coordinator.queue ?? SessionQueue()
        do {
            switch command {
            case .jump(let item):
                guard let entry = Self.entry(item, in: queue) else { return Self.noSuchItem(item, in: queue) }
                try await session.transition(to: .entry(id: entry.id), startingAt: .zero, play: true)
            case .queueRemove(let item):
                guard let entry = Self.entry(item, in: queue) else { return Self.noSuchItem(item, in: queue) }
                try await session.removeFromQueue(entryID: entry.id)
            case .queueMove(let item, let position):
                guard let entry = Self.entry(item, in: queue) else { return Self.noSuchItem(item, in: queue) }
                guard position <= queue.entries.count else {
                    return "there is no position \(position): the queue has \(Self.items(queue.entries.count)); "
                        + "`queue` lists them"
                }
                try await session.moveInQueue(entryID: entry.id, to: position - 1)
            case .next:
                try await session.next()
            case .previous:
                try await session.previous()
            case .queueAdd(let path):
                let probe: MediaProbe
                do { probe = try await MediaProbe.probe(path) } catch {
                    return "cannot add \(path) to the queue: \(error)"
                }
                var activity = MediaActivity(probe: probe, path: path, title: nil, subtitle: nil, type: nil,
                                             fallbackURL: nil)
                if media.sharesItems, !path.contains("://") {
                    activity.sharedByHost = true
                    if media.relaysItems.load(ordering: .relaxed) { activity.sharedThroughRelay = true }
                }
                media.register(itemID: activity.itemID, location: path)
                try await session.addToQueue(activity, itemID: activity.itemID, contentID: probe.contentID)
            default:
                break
            }
        } catch {
            return "the queue could not be changed: \(error)"
        }
        return nil
    }

    /// Item `number` (from 1) of `queue`.
    static func entry(_ number: Int, in queue: SessionQueue) -> QueueEntry? {
        queue.entries.indices.contains(number - 1) ? queue.entries[number - 1] : nil
    }

    /// "there is no item 7: the queue has 3 items; `queue` lists them"
    static func noSuchItem(_ number: Int, in queue: SessionQueue) -> String {
        guard !queue.entries.isEmpty else { return "there is no item \(number): the queue is empty — add one with: queue add PATH" }
        return "there is no item \(number): the queue has \(items(queue.entries.count)); `queue` lists them"
    }

    static func items(_ count: Int) -> String { count == 1 ? "1 item" : "\(count) items" }

    /// The queue as lines a person reads: "▶ 2. Title (file.webm)".
    package static func queueLines(_ queue: SessionQueue?) -> [String] {
        guard let queue, !queue.entries.isEmpty else { return ["the queue is empty — add an item with: queue add PATH"] }
        return queue.entries.enumerated().map { index, entry in
            let marker = index == queue.currentIndex ? "▶" : " "
            let file = MediaActivity(entry.activity).map { " (\($0.fileName))" } ?? ""
            return "\(marker) \(index + 1). \(entry.title)\(file)"
        }
    }
}
