import Foundation
import Synchronization
import Tandem
import TandemSyncplay

/// What the bridge knows of the room's playlist and the session's queue, and how far it is in bringing the queue
/// to the room's playlist (one queue request at a time, each computed from the queue the authority last sent).
struct PlaylistFollowing: Sendable {
    /// The most queue requests one change of the room's playlist may take (each entry removed, added and moved once,
    /// and a few selections).
    static let maxSteps = 3 * SyncplayPlaylistSync.maxEntries + 8

    var sync = SyncplayPlaylistSync()
    var queue = SessionQueue()
    /// Whether the bridge is bringing the queue to the room's playlist, and whether a request of it is on its way.
    var following = false
    var inFlight = false
    /// Whether one of those requests selects another entry, until the session's new activity arrives: that item is
    /// the room's, arrived at again once loaded (`SyncplayArrival.itemChanged`).
    var selecting = false
    var steps = 0
    /// The room's entries last reported missing here (so that the notice is not repeated for the same ones).
    var missing: [String] = []
    /// The current item's duration, when the bridge knows it (its file's probe), and the report of its end to come.
    var duration: TimeSpan?
    var endReport: Task<Void, Never>?
}

extension MediaActivity {
    /// A Syncplay room's playlist entry: its file name (or URL), titled so that the queue says when it is missing.
    init(roomEntry name: String, resolution: MediaDirectories.Resolution) {
        let title = switch resolution {
        case .file, .url: name
        case .missing: "\(name) (missing here)"
        case .refused(let why): "\(name) (not played: \(why))"
        }
        self.init(metadata: GroupActivityMetadata(title: title, type: .watchTogether), fileName: name)
    }

    /// The item id of a room's entry: its name, cut to a bounded identifier.
    static func roomItemID(_ name: String) -> String {
        name.utf8.count <= MediaDirectories.maxNameBytes ? name : String(decoding: name.utf8.prefix(MediaDirectories.maxNameBytes), as: UTF8.self)
    }
}

extension SyncplayBridge {
    /// The name the room's playlist lists for a queue entry: its file's name (a URL stays a URL).
    static func fileName(_ entry: QueueEntry) -> String { MediaActivity(entry.activity)?.fileName ?? entry.title }

    /// Notes the session's queue; what the room should be told when the user changed it.
    func sessionQueueChanged(_ queue: SessionQueue) -> [SyncplayPlaylistSync.Action] {
        let now = clock.now
        return playlist.withLock { state in
            state.queue = queue
            state.inFlight = false
            return state.sync.sessionQueue(queue.entries.map(Self.fileName), index: queue.currentIndex,
                                           following: state.following, now: now)
        }
    }

    func perform(_ actions: [SyncplayPlaylistSync.Action]) async {
        for action in actions {
            switch action {
            case .send(let setting):
                room.set(setting)
            case .notice(let text):
                try? await session.showNotice(text)
            case .follow:
                let files = playlist.withLock { state in
                    state.following = true
                    state.steps = 0
                    return state.sync.roomFiles
                }
                await reportMissing(in: files)
                await followPlaylist()
            }
        }
    }

    /// Says which of the room's entries are not here, and where to put them (once for the same ones).
    private func reportMissing(in files: [String]) async {
        let missing = files.filter { directories.resolve($0) == .missing }
        let changed = playlist.withLock { state in defer { state.missing = missing }; return state.missing != missing }
        guard changed, !missing.isEmpty else { return }
        let names = missing.prefix(3).joined(separator: ", ") + (missing.count > 3 ? " and \(missing.count - 3) more" : "")
        try? await session.showNotice("the Syncplay room's playlist names \(missing.count == 1 ? "a file" : "\(missing.count) files") "
            + "not found here: \(names) — put \(missing.count == 1 ? "it" : "them") in \(directories.described) "
            + "(or add a directory with --media-dir)")
    }

    /// Sends the next request that brings the session's queue to the room's playlist, unless one is on its way.
    func followPlaylist() async {
        let next: (SyncplayPlaylistSync.QueueStep, SessionQueue)? = playlist.withLock { state in
            guard state.following, !state.inFlight else { return nil }
            guard state.steps < PlaylistFollowing.maxSteps, let step = SyncplayPlaylistSync.nextStep(
                files: state.queue.entries.map(Self.fileName), current: state.queue.currentIndex,
                target: state.sync.roomFiles, targetIndex: state.sync.roomIndex) else {
                state.following = false
                return nil
            }
            state.steps += 1
            state.inFlight = true
            return (step, state.queue)
        }
        guard let (step, queue) = next else { return }
        do {
            switch step {
            case .select(let index):
                playlist.withLock { $0.selecting = true }
                try await session.transition(to: .entry(id: queue.entries[index].id), startingAt: .zero, play: nil)
            case .add(let names, let index):
                let entries = try names.map { name in
                    let activity = MediaActivity(roomEntry: name, resolution: directories.resolve(name))
                    return QueueEntry(activity: try activity.envelope(itemID: MediaActivity.roomItemID(name)))
                }
                try await session.addToQueue(entries: entries, at: index)
            case .remove(let index):
                try await session.removeFromQueue(entryID: queue.entries[index].id)
            case .move(let from, let to):
                try await session.moveInQueue(entryID: queue.entries[from].id, to: to)
            }
        } catch {
            playlist.withLock { $0.following = false; $0.inFlight = false; $0.selecting = false }
            try? await session.showNotice("the queue could not follow the Syncplay room's playlist: \(error)")
        }
    }

    /// The authority refused a request: when it was one of the bridge's queue steps, following stops, saying why.
    func refused(_ reason: String) async {
        let wasFollowing = playlist.withLock { state in
            defer { state.following = false; state.inFlight = false; state.selecting = false }
            return state.following && state.inFlight
        }
        if wasFollowing { try? await session.showNotice("the queue could not follow the Syncplay room's playlist: \(reason)") }
    }

    /// The session moved to another item: the bridge is ready for it at once (it has no player), and the room is
    /// told the file this player now plays, as a Syncplay client announces a file it opens.
    func loaded(_ envelope: ActivityEnvelope) async {
        let byRoom = playlist.withLock { state in defer { state.selecting = false }; return state.selecting }
        arrival.withLock { $0.itemChanged(byRoom: byRoom) }
        let media = MediaActivity(envelope)
        var probe: MediaProbe?
        if let media, case .file(let path) = directories.resolve(media.fileName) { probe = try? await MediaProbe.probe(path) }
        let info = MediaInfo(duration: probe?.duration, isSeekable: probe?.isSeekable ?? true, hasVideo: probe?.hasVideo ?? false,
                             hasAudio: probe?.hasAudio ?? false, contentID: probe?.contentID, title: probe?.title)
        try? await link.send(.readiness(.ready(info)))
        playlist.withLock { $0.duration = probe?.duration }
        guard let media else { return }
        let size = probe.flatMap { try? FileManager.default.attributesOfItem(atPath: $0.location)[.size] as? Int } ?? 0
        let duration = (probe?.duration ?? media.duration)?.seconds ?? 0
        // A path from the room's playlist is announced by its file name, as the Syncplay client that plays it does.
        room.set(.file(SyncplayFile(name: MediaDirectories.fileName(of: media.fileName), duration: duration,
                                    size: .number(Double(size)))))
    }
}

extension SyncplayBridge {
    /// The bridge has no player to reach the end of an item, so it reports the end itself when the playing timeline
    /// gets to the item's duration (from its file's probe): the group then goes on once the players have reached it,
    /// without waiting its end-of-item grace for the bridge. Called for every timeline; a later one cancels it.
    func scheduleEndReport() {
        let current = timeline.value
        var report: Task<Void, Never>?
        if let current, current.isPlaying, current.rate > 0, let duration = playlist.withLock({ $0.duration }),
           let mapping = link.clockMapping() {
            let end = current.projection.inverse(ItemTime(nanoseconds: duration.nanoseconds))
            let wait = mapping.localTime(atSession: end) - clock.now
            if wait < .seconds(86_400) {
                let generation = current.generation
                report = Task { [link] in
                    if wait > .zero { try? await Task.sleep(for: .nanoseconds(wait.nanoseconds)) }
                    guard !Task.isCancelled else { return }
                    try? await link.send(.reachedEnd(generation: generation))
                }
            }
        }
        let previous = playlist.withLock { state in defer { state.endReport = report }; return state.endReport }
        previous?.cancel()
    }

    /// Cancels a report of the end still to come (the bridge is closing).
    func cancelEndReport() {
        playlist.withLock { state in defer { state.endReport = nil }; return state.endReport }?.cancel()
    }
}
