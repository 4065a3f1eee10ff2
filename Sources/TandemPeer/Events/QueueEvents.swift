import Foundation
import Tandem

/// `queue`: the session's queue changed (entries, order, or the entry that plays), and on joining.
package struct QueueEvent: PeerEvent, Equatable {
    package static let name = "queue"
    package var items: [Item]
    /// The index (from 0) of the entry that plays, null when none does.
    @Nullable package var currentIndex: Int?

    package struct Item: Codable, Sendable, Equatable {
        package var id: String
        package var title: String
        package var itemID: String
        @Nullable package var fileName: String?
        @Nullable package var contentID: String?
        @Nullable package var fallbackURL: String?

        package init(id: String, title: String, itemID: String, fileName: String?, contentID: String?,
                     fallbackURL: String?) {
            self.id = id
            self.title = title
            self.itemID = itemID
            self.fileName = fileName
            self.contentID = contentID
            self.fallbackURL = fallbackURL
        }

        package init(_ entry: QueueEntry) {
            let media = MediaActivity(entry.activity)
            self.init(id: entry.id, title: entry.title, itemID: entry.itemID, fileName: media?.fileName,
                      contentID: entry.contentID ?? media?.contentID, fallbackURL: entry.fallbackURL?.absoluteString)
        }
    }

    package init(items: [Item], currentIndex: Int?) {
        self.items = items
        self.currentIndex = currentIndex
    }

    package init(_ queue: SessionQueue) {
        self.init(items: queue.entries.map(Item.init), currentIndex: queue.currentIndex)
    }
}

/// `item`: the group moved to another entry of the queue (its `index` counts from 1, as "item 2 of 3").
package struct ItemEvent: PeerEvent, Equatable {
    package static let name = "item"
    package var id: String
    package var index: Int
    package var count: Int
    package var title: String
    package var itemID: String

    package init(id: String, index: Int, count: Int, title: String, itemID: String) {
        self.id = id
        self.index = index
        self.count = count
        self.title = title
        self.itemID = itemID
    }

    /// The event for the queue's current entry, nil when none plays.
    package init?(_ queue: SessionQueue) {
        guard let index = queue.currentIndex, let entry = queue.current else { return nil }
        self.init(id: entry.id, index: index + 1, count: queue.entries.count, title: entry.title, itemID: entry.itemID)
    }
}

extension MediaActivity {
    /// The media activity an envelope carries, nil for another kind of activity.
    package init?(_ envelope: ActivityEnvelope) {
        guard envelope.activityIdentifier == Self.activityIdentifier,
              let decoded = try? JSONDecoder().decode(MediaActivity.self, from: envelope.payload) else { return nil }
        self = decoded
    }
}
