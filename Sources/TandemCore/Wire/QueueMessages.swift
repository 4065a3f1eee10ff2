import Foundation

// The session's shared queue of items (a playlist), as it travels between peers and the authority.

/// One entry of the session's queue: an activity (what becomes the session's activity while this entry plays)
/// and what a participant needs to find its own copy of the item.
public struct QueueEntry: Hashable, Sendable, Codable, Identifiable {
    /// Unique within the session's queue; the authority assigns it ("q1", "q2", … in the order entries are added),
    /// so entries of the same item can be told apart. Whatever a proposal carries here is replaced.
    public var id: String
    /// The activity for this item: its metadata gives the title and the fallback URL, its `itemID` the item the
    /// timeline refers to while the entry plays.
    public var activity: ActivityEnvelope
    /// The item's content fingerprint (e.g. TandemMedia's `MediaFingerprint`), when known, so that a participant
    /// can check its copy.
    public var contentID: String?

    public init(id: String = "", activity: ActivityEnvelope, contentID: String? = nil) {
        self.id = id
        self.activity = activity
        self.contentID = contentID
    }

    /// The title people see (the activity's title, else its item id).
    public var title: String { activity.metadata.title ?? activity.itemID }
    /// The item the timeline refers to while this entry plays.
    public var itemID: String { activity.itemID }
    /// Where to get the item when a participant lacks it.
    public var fallbackURL: URL? { activity.metadata.fallbackURL }
}

/// The session's queue: its entries in order and which one plays.
public struct SessionQueue: Hashable, Sendable, Codable {
    public var entries: [QueueEntry]
    /// The index of the entry that is the session's activity, nil while nothing of the queue plays.
    public var currentIndex: Int?

    public init(entries: [QueueEntry] = [], currentIndex: Int? = nil) {
        self.entries = entries
        self.currentIndex = currentIndex
    }

    /// The entry that plays, if any.
    public var current: QueueEntry? { currentIndex.flatMap { entries.indices.contains($0) ? entries[$0] : nil } }

    /// The index of the entry with this id.
    public func index(of id: String) -> Int? { entries.firstIndex { $0.id == id } }
}

/// Which entry a transition goes to.
public enum QueueTarget: Hashable, Sendable, Codable {
    case next
    case previous
    /// The entry with this id.
    case entry(id: String)
}

/// A participant's request to change the queue or to move the group to another of its entries.
public enum QueueRequest: Hashable, Sendable, Codable {
    /// Appends `entries` (or inserts them before index `at`). Their ids are assigned by the authority.
    case add([QueueEntry], at: Int?)
    /// Removes an entry that is not playing.
    case remove(id: String)
    /// Moves an entry to index `to` (clamped to the queue).
    case move(id: String, to: Int)
    /// Moves the group to another entry, proposing its initial timing: the item time everyone starts from and
    /// whether the group plays (nil keeps what it does now: a playing or waiting group plays the new item as soon
    /// as everyone has loaded it, a paused one stays paused there). Like `transitionToItem(withIdentifier:
    /// proposingInitialTimingBasedOn:)` of AVPlaybackCoordinator.
    case transition(to: QueueTarget, startingAt: ItemTime, play: Bool?)
}
