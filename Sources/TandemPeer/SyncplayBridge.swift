import Foundation
import Synchronization
import Tandem
import TandemSyncplay

/// Where a Syncplay room is: `syncplay://HOST[:PORT]/ROOM`, or `syncplays://…` to insist on TLS (Syncplay's
/// STARTTLS; a server that does not offer it is refused).
package struct SyncplayAddress: Sendable, Equatable {
    package var host: String
    package var port: Int
    package var room: String
    package var tls = false

    package static let defaultPort = 8999

    /// Whether `text` names a Syncplay room rather than a Tandem invite.
    package static func looksLikeSyncplay(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("syncplay://") || lower.hasPrefix("syncplays://")
    }

    package init(host: String, port: Int = Self.defaultPort, room: String, tls: Bool = false) {
        self.host = host
        self.port = port
        self.room = room
        self.tls = tls
    }

    package init(parsing text: String) throws(PeerFailure) {
        let lower = text.lowercased()
        let tls = lower.hasPrefix("syncplays://")
        guard lower.hasPrefix("syncplay://") || tls, let url = URLComponents(string: text), let host = url.host, !host.isEmpty else {
            throw PeerFailure(.badInvite, "'\(text)' is not a Syncplay room — write it as "
                + "syncplay://HOST[:PORT]/ROOM, e.g. syncplay://syncplay.pl:8999/movienight")
        }
        let room = url.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard !room.isEmpty, room.count <= 35 else {
            throw PeerFailure(.badInvite, "a Syncplay room needs a name of 1 to 35 characters "
                + "after the host: syncplay://HOST[:PORT]/ROOM")
        }
        self.init(host: host, port: url.port ?? Self.defaultPort, room: room, tls: tls)
    }
}

/// Joins a Syncplay room on behalf of a local Tandem session: a participant of that session (named `syncplay`)
/// that follows the room and tells the room what the session's own participants do.
///
/// Room → session, with Syncplay's own semantics: a pause, play or seek by someone in the room (a forced state, or a
/// heartbeat whose play state differs from the session's) becomes a timeline request; while both play, the
/// session is moved only when it is more than `SyncplayBridge.rewindThreshold` ahead of the room or
/// `fastForwardThreshold` behind it (Syncplay's defaults, 4 s and 5 s). Session → room: a timeline change made by
/// a participant of the session (not by the bridge) is sent as Syncplay's state change. Room users joining and
/// leaving are notices; chat crosses both ways; the room's shared playlist and the session's queue are kept the same
/// both ways (`SyncplayBridge+Playlist.swift`). Until the session's players have loaded the room's item, the room is
/// only repeated and then the session moved to it (`SyncplayBridge+Arrival.swift`). The bridge is always prepared:
/// it has no player of its own.
package final class SyncplayBridge: Sendable {
    package static let rewindThreshold = 4.0
    package static let fastForwardThreshold = 5.0

    package let room: SyncplayConnection
    let link: TandemClientConnection
    let session: GroupSession<MediaActivity>
    private let chat: GroupSessionMessenger
    let clock = SystemMonotonicClock()
    /// The session's latest timeline (also read by the room's heartbeat).
    let timeline: Locked<Timeline?>
    /// The latest timeline that was playing or paused (not waiting): what the room was last told about.
    private let settled: SettledTimeline
    private let nextRequest = Mutex<UInt64>(1)
    private let readyToldRoom = Mutex<Bool?>(nil)
    /// The session's messages, subscribed to from the start so that none is missed before `run`.
    private let messages: AsyncStream<ServerMessage>
    /// The room's playlist and the session's queue, kept the same (`SyncplayBridge+Playlist.swift`).
    let playlist = Mutex(PlaylistFollowing())
    /// Where the room's playlist entries are found here.
    let directories: MediaDirectories
    /// The file this peer told the room about (offering a Tandem session re-sends it with the invite).
    let file: SyncplayFile
    /// Whether the heartbeat reports the session or repeats the room: the room's last state, and whether the
    /// session's players have arrived at it (`SyncplayBridge+Arrival.swift`); a quiet member never reports its own.
    let arrival: Locked<SyncplayArrival>
    /// The request that moves the session to the room on arriving, while it is on its way.
    let arrivalRequest = Mutex<UInt64?>(nil)

    /// Connects to the local session at `invite` as `syncplay` and to the room as `name`, announcing `probe`'s file.
    /// With `address.tls`, the server's certificate is checked against `trustRoots` (PEM; default: the system's).
    /// The room's playlist entries are looked for in `directories`.
    package static func connect(room address: SyncplayAddress, passwordMD5: String?, name: String, invite: Invite,
                                probe: MediaProbe, fileName: String, directories: MediaDirectories,
                                trustRoots: String? = nil) async throws -> SyncplayBridge {
        var options = TandemClient.Options()
        options.prerollEstimate = .zero
        options.datagrams = false
        let link = try await TandemClient.connect(invite: invite, name: "syncplay", options: options)
        let size = (try? FileManager.default.attributesOfItem(atPath: probe.location)[.size] as? Int) ?? 0
        let file = SyncplayFile(name: fileName, duration: probe.duration?.seconds ?? 0, size: .number(Double(size)))
        let latest = Locked<Timeline?>(nil)
        let arrival = Locked(SyncplayArrival())
        let clock = SystemMonotonicClock()
        let room: SyncplayConnection
        do {
            room = try await SyncplayConnection.connect(
                host: address.host, port: address.port, tls: address.tls ? SyncplayTLS(trustRootsPath: trustRoots) : nil,
                configuration: .init(username: name, room: address.room, passwordMD5: passwordMD5, file: file)) {
                    // Nothing of its own to report before its players have arrived where the room is: the heartbeat
                    // repeats the room's state.
                    guard arrival.value.reportsOwnPosition else { return nil }
                    return Self.playstate(latest.value, mapping: link.clockMapping(), now: clock.now)
                }
        } catch {
            await link.close()
            throw error
        }
        let bridge = SyncplayBridge(room: room, link: link, latest: latest, arrival: arrival, file: file, directories: directories)
        bridge.playlist.withLock { $0.duration = probe.duration }
        let info = MediaInfo(duration: probe.duration, isSeekable: probe.isSeekable, hasVideo: probe.hasVideo,
                             hasAudio: probe.hasAudio, contentID: probe.contentID, title: probe.title)
        do { try await link.send(.readiness(.ready(info))) } catch {
            await room.close()
            await link.close()
            throw error
        }
        return bridge
    }

    private init(room: SyncplayConnection, link: TandemClientConnection, latest: Locked<Timeline?>,
                 arrival: Locked<SyncplayArrival>, file: SyncplayFile, directories: MediaDirectories) {
        self.room = room
        self.link = link
        self.directories = directories
        self.file = file
        self.arrival = arrival
        self.timeline = latest
        self.messages = link.serverMessages()
        // The timeline at connecting came in the welcome; later ones arrive as messages.
        latest.withLock { $0 = link.welcome.timeline }
        settled = SettledTimeline(link.welcome.timeline)
        self.session = GroupSession(link: link)
        self.chat = GroupSessionMessenger(session: session)
        session.join()
        if let queue = link.welcome.queue { _ = sessionQueueChanged(queue) }
    }

    /// Runs `session` and the bridge's `tasks` (following each side, passing chat on) until the first of them
    /// ends — either side going away ends the bridge — then cancels the rest.
    static func untilOneEnds(session: GroupSession<MediaActivity>, _ tasks: [@Sendable () async -> Void]) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await session.run() }
            for task in tasks { group.addTask(operation: task) }
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Runs until the room or the session ends; then closes both.
    package func run() async {
        await Self.untilOneEnds(session: session, [
            { await self.followSession() },
            { await self.followRoom() },
            {
                for await (line, _) in self.chat.messages(of: ChatLine.self) {
                    if let text = Chat.clean(line.text) { self.room.chat(text) }
                }
            },
        ])
        cancelEndReport()
        await room.close()
        await link.close()
    }

    // MARK: Session → room

    private func followSession() async {
        for await message in messages {
            switch message {
            case .timeline(let new):
                timeline.withLock { $0 = new }
                scheduleEndReport()
                // No player here: prepared at once, so the group never waits for the bridge. What the room asked
                // for (the bridge's own requests) is not sent back to it.
                let change = await settled.take(new, link: link)
                await advanceArrival()
                guard let change, let origin = change.origin, origin != link.localParticipantID, change.isNews else { continue }
                let told = SyncplayLocalPlaystate(position: new.anchorItemTime.seconds, paused: !new.isPlaying)
                room.localChange(arrival.value.reported(told, seeks: change.seeks, now: clock.now), seek: change.seeks)
            case .participants(let states):
                let others = states.filter { $0.participant.id != link.localParticipantID && $0.hasJoined }
                let ready = !others.isEmpty && others.allSatisfy { if case .ready = $0.readiness { true } else { false } }
                let changed = readyToldRoom.withLock { told in defer { told = ready }; return told != ready }
                if changed { room.setReady(ready) }
                arrival.withLock { $0.players(loaded: ready) }
                await advanceArrival()
            case .queue(let queue):
                await perform(sessionQueueChanged(queue))
                await followPlaylist()
                await advanceArrival()
            case .activity(let envelope):
                await loaded(envelope)
            case .rejected(let requestID, _):
                arrivalRefused(requestID)
            case .refused(let reason, _, _):
                await refused(reason)
            default:
                continue
            }
        }
    }

    // MARK: Room → session

    private func followRoom() async {
        for await event in room.events {
            switch event {
            case .roomState(let paused, let position, let doSeek, let setBy):
                // Before the session's players have arrived, the room's changes are only noted: arriving moves the
                // session to the room's latest state.
                let holds = arrival.withLock { state in
                    state.heard(paused: paused, position: position, now: clock.now)
                    return state.holdsRoomChanges
                }
                if holds {
                    await advanceArrival()
                    continue
                }
                // Our own changes come back from the server set by us: the session made them already.
                guard setBy != room.username else { continue }
                await follow(paused: paused, position: position, seek: doSeek)
            case .userJoined(let name, _):
                try? await session.showNotice("\(name) joined the Syncplay room")
            case .userLeft(let name):
                try? await session.showNotice("\(name) left the Syncplay room")
            case .chat(let from, let message):
                guard from != room.username else { continue }
                try? await chat.send(ChatLine(text: "\(from): \(message)"))
            case .ready(let name, let isReady):
                try? await session.showNotice("\(name) is \(isReady ? "ready" : "not ready") in the Syncplay room")
            case .serverError(let message):
                try? await session.showNotice("the Syncplay server: \(message)")
            case .playlist(let files, let user):
                await perform(playlist.withLock { $0.sync.roomPlaylist(files, by: user, username: room.username, now: clock.now) })
            case .playlistIndex(let index, let user):
                await perform(playlist.withLock { $0.sync.roomIndex(index, by: user, username: room.username, now: clock.now) })
            case .welcomed, .usersListed, .userFile:
                continue
            }
        }
    }

    private func follow(paused: Bool, position: Double, seek: Bool) async {
        // While the group is between states (waiting for someone), the next heartbeat says where the room is.
        guard let current = timeline.value, let mapping = link.clockMapping() else { return }
        if case .waiting = current.status { return }
        let now = mapping.sessionTime(atLocal: clock.now)
        let here = current.expectedItemTime(atSessionTime: now).seconds
        let sessionPaused = !current.isPlaying
        var command: TimelineRequest.Command?
        if seek {
            command = .seek(itemTime: .seconds(max(0, position)), play: !paused)
        } else if paused != sessionPaused {
            // Resuming where the session stands is a play; from elsewhere, a seek that plays.
            command = paused ? .pause(itemTime: .seconds(max(0, position)))
                : abs(here - position) < 1 ? .play : .seek(itemTime: .seconds(max(0, position)), play: true)
        } else if !paused, here - position > Self.rewindThreshold || position - here > Self.fastForwardThreshold {
            command = .seek(itemTime: .seconds(max(0, position)), play: true)
        }
        guard let command else { return }
        await request(command, basedOn: current, at: now)
    }

    /// Asks the session's authority for `command`; `noting` learns the request's id before it is sent.
    func request(_ command: TimelineRequest.Command, basedOn current: Timeline, at now: SessionInstant,
                 noting: (UInt64) -> Void = { _ in }) async {
        let id = nextRequest.withLock { n in defer { n += 1 }; return n }
        noting(id)
        try? await link.send(.timelineRequest(TimelineRequest(requestID: id, command: command,
                                                              basedOnGeneration: current.generation,
                                                              requestedAtSessionTime: now)))
    }

    /// Where the session's timeline is now, as a Syncplay heartbeat reports it.
    static func playstate(_ timeline: Timeline?, mapping: ClockMapping?, now: LocalInstant) -> SyncplayLocalPlaystate {
        guard let timeline else { return SyncplayLocalPlaystate(position: 0, paused: true) }
        let sessionNow = mapping?.sessionTime(atLocal: now) ?? timeline.anchorSessionTime
        return SyncplayLocalPlaystate(position: timeline.expectedItemTime(atSessionTime: sessionNow).seconds,
                                      paused: !timeline.isPlaying)
    }
}
