import Foundation
import Tandem

extension LocalPeer {
    /// Carries out a queue command (`next`, `prev`, `queue add PATH`); returns a message for the user when it
    /// cannot. The authority's own refusals (the last item, adding without the host role) arrive as notices.
    func performQueue(_ command: UserCommand) async -> String? {
        do {
            switch command {
            case .next:
                try await session.next()
            case .previous:
                try await session.previous()
            case .queueAdd(let path):
                let probe: MediaProbe
                do { probe = try await MediaProbe.probe(path) } catch {
                    return "cannot add \(path) to the queue: \(error)"
                }
                let activity = MediaActivity(probe: probe, path: path, title: nil, subtitle: nil, type: nil,
                                             fallbackURL: nil)
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
