import TandemCore

/// A Syncplay room's shared playlist and a Tandem session's queue kept the same, both ways. Pure: it takes what the
/// room said (`playlistChange`, `playlistIndex`) and what the session's queue is now, and returns what to tell the
/// room and whether the session should follow the room.
///
/// Syncplay's server sends a user's playlist change to everyone in the room, the user included (set by that user),
/// so the room's echo of a change of ours must not come back into the session: each change sent is remembered until
/// its echo arrives (at most `maxPending`, each for at most `echoLimit`). While one is on its way, another user's
/// change that arrives is older than ours for the server (it handles lines in order), so ours wins and it is not
/// followed. The first playlist the server sends (on joining) decides who starts: a room with a playlist gives it
/// to the session; an empty one gets the session's queue, as Syncplay's own clients put their file in an empty
/// room's playlist.
public struct SyncplayPlaylistSync: Sendable {
    /// Syncplay's own bounds on a playlist (`PLAYLIST_MAX_ITEMS`, `PLAYLIST_MAX_CHARACTERS`): a server refuses a
    /// longer one, so none is sent, and a room's longer one is not followed.
    public static let maxEntries = SyncplayCodec.maxPlaylistEntries
    public static let maxCharacters = 10_000
    /// Changes of ours not yet echoed by the server that are remembered, and for how long.
    public static let maxPending = 8
    public static let echoLimit = TimeSpan.seconds(5)

    public enum Action: Sendable, Equatable {
        /// Tell the room.
        case send(SyncplaySetting)
        /// Bring the session's queue to the room's playlist and index (`SyncplayPlaylistSync.nextStep`).
        case follow
        /// Something the user should know.
        case notice(String)
    }

    /// The room's playlist and selected index, as the room last said or was told.
    public private(set) var roomFiles: [String] = []
    public private(set) var roomIndex: Int?
    /// Whether the room's first playlist (sent on joining) has arrived.
    public private(set) var heardRoom = false
    /// The session's queue (file names) and the entry that plays, as last seen.
    public private(set) var sessionFiles: [String] = []
    public private(set) var sessionIndex: Int?
    private var pendingFiles: [(files: [String], sent: LocalInstant)] = []
    private var pendingIndexes: [(index: Int, sent: LocalInstant)] = []

    public init() {}

    /// Whether `files` is a playlist Syncplay's server accepts (it counts characters as Python does: code points).
    public static func fits(_ files: [String]) -> Bool {
        files.count <= maxEntries && files.reduce(0) { $0 + $1.unicodeScalars.count } <= maxCharacters
    }

    // MARK: Room → session

    /// The room's `playlistChange`, set by `user` (nil: the server, on joining); `username` is ours in the room.
    public mutating func roomPlaylist(_ files: [String], by user: String?, username: String, now: LocalInstant) -> [Action] {
        expire(now: now)
        if user == username, let first = pendingFiles.first, first.files == files {
            pendingFiles.removeFirst()
            return []
        }
        guard pendingFiles.isEmpty else { return [] }  // ours reaches the server after it: ours wins
        guard Self.fits(files) else {
            return [.notice("the Syncplay room's playlist has \(files.count) entries, longer than Syncplay allows "
                + "(\(Self.maxEntries) entries, \(Self.maxCharacters) characters); the queue here is left as it is")]
        }
        let first = !heardRoom
        heardRoom = true
        if first, files.isEmpty, !sessionFiles.isEmpty {
            // An empty room gets what this player plays.
            return publish(now: now)
        }
        roomFiles = files
        if let index = roomIndex, !files.indices.contains(index) { roomIndex = nil }
        return [.follow]
    }

    /// The room's `playlistIndex`, set by `user`.
    public mutating func roomIndex(_ index: Int, by user: String?, username: String, now: LocalInstant) -> [Action] {
        expire(now: now)
        if user == username, let first = pendingIndexes.first, first.index == index {
            pendingIndexes.removeFirst()
            return []
        }
        guard pendingIndexes.isEmpty, pendingFiles.isEmpty else { return [] }
        guard index >= 0 else { return [] }
        roomIndex = index
        return heardRoom ? [.follow] : []
    }

    // MARK: Session → room

    /// The session's queue now: its entries' file names and the entry that plays. `following` says whether the
    /// bridge is still bringing the session to the room's playlist (its own steps are not the user's changes).
    public mutating func sessionQueue(_ files: [String], index: Int?, following: Bool, now: LocalInstant) -> [Action] {
        expire(now: now)
        let changed = files != sessionFiles || index != sessionIndex
        sessionFiles = files
        sessionIndex = index
        guard changed, !following, heardRoom else { return [] }
        // A room playlist that was emptied leaves the entry that plays here: that is the room's state, not a change.
        if roomFiles.isEmpty, files.count <= 1, pendingFiles.isEmpty { return [] }
        return publish(now: now)
    }

    /// Tells the room what differs from the session's queue.
    private mutating func publish(now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        if sessionFiles != roomFiles {
            guard Self.fits(sessionFiles) else {
                return [.notice("the queue (\(sessionFiles.count) items) is longer than a Syncplay playlist may be "
                    + "(\(Self.maxEntries) entries, \(Self.maxCharacters) characters); the room was not told")]
            }
            roomFiles = sessionFiles
            remember(files: sessionFiles, now: now)
            actions.append(.send(.playlistChange(user: nil, files: sessionFiles)))
        }
        if let index = sessionIndex, index != roomIndex || !actions.isEmpty {
            roomIndex = index
            pendingIndexes.append((index, now))
            if pendingIndexes.count > Self.maxPending { pendingIndexes.removeFirst() }
            actions.append(.send(.playlistIndex(user: nil, index: index)))
        }
        return actions
    }

    private mutating func remember(files: [String], now: LocalInstant) {
        pendingFiles.append((files, now))
        if pendingFiles.count > Self.maxPending { pendingFiles.removeFirst() }
    }

    /// Forgets echoes that did not come (a server that refused the change sends the room's own playlist instead).
    private mutating func expire(now: LocalInstant) {
        pendingFiles.removeAll { now - $0.sent > Self.echoLimit }
        pendingIndexes.removeAll { now - $0.sent > Self.echoLimit }
    }
}

extension SyncplayPlaylistSync {
    /// One change of the session's queue, by index into the queue as it is now.
    public enum QueueStep: Sendable, Equatable {
        /// Make entry `index` the one that plays (the group loads it and starts together).
        case select(Int)
        case add([String], at: Int)
        case remove(Int)
        case move(Int, to: Int)
    }

    /// The next step that brings a queue of `files` (entry `current` playing) to the room's `target` playlist with
    /// entry `targetIndex` selected; nil once they agree. The selected entry is chosen first (so the one that played
    /// can then be removed), then surplus entries go, missing ones are added and the order is fixed. Without a
    /// valid index the entry that plays stays when the room lists it, else the room's first entry plays; an emptied
    /// room playlist leaves only the entry that plays (it cannot be removed while it plays).
    public static func nextStep(files: [String], current: Int?, target: [String], targetIndex: Int?) -> QueueStep? {
        let playing = current.flatMap { files.indices.contains($0) ? $0 : nil }
        var selected: Int?
        if let targetIndex, target.indices.contains(targetIndex) {
            selected = targetIndex
        } else if !target.isEmpty, !(playing.map { target.contains(files[$0]) } ?? false) {
            selected = 0
        }
        if let selected, playing.map({ files[$0] != target[selected] }) ?? true {
            if let other = files.indices.first(where: { files[$0] == target[selected] && $0 != playing }) {
                return .select(other)
            }
            return .add([target[selected]], at: files.count)
        }
        var want: [String: Int] = [:]
        for name in target { want[name, default: 0] += 1 }
        var have: [String: Int] = [:]
        for name in files { have[name, default: 0] += 1 }
        if let surplus = files.indices.reversed().first(where: { $0 != playing && have[files[$0], default: 0] > want[files[$0], default: 0] }) {
            return .remove(surplus)
        }
        var missing: [String] = []
        for name in target where have[name, default: 0] < want[name, default: 0] {
            missing.append(name)
            have[name, default: 0] += 1
        }
        if !missing.isEmpty { return .add(missing, at: files.count) }
        for index in target.indices where index < files.count && files[index] != target[index] {
            if let from = files.indices.first(where: { $0 > index && files[$0] == target[index] }) {
                return .move(from, to: index)
            }
        }
        if let selected, let playing, playing != selected, files.indices.contains(selected) { return .select(selected) }
        return nil
    }
}
