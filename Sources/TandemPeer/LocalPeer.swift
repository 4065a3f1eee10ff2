import Foundation
import Tandem

/// One participant in this process: its player, its connection to the session, and the `PlaybackCoordinator`
/// between them. `host` and `join` run one; `demo` and `bench` run several side by side.
package final class LocalPeer: Sendable {
    package let name: String
    package let player: GStreamerPlayer
    /// What the coordinator drives: the player itself, or the player inside a `DrillEngine`.
    package let engine: any PlaybackEngine
    package let connection: TandemClientConnection
    package let coordinator: PlaybackCoordinator
    package let session: GroupSession<MediaActivity>
    /// The session's journal (the host's preview image travels in it).
    package let journal: GroupSessionJournal
    /// Carries chat lines (`Chat.swift`).
    package let chat: GroupSessionMessenger
    /// This peer's local monotonic clock (skewed in benchmarks).
    package let clock: any MonotonicClock
    /// Where the items of the session's queue are found here.
    package let media: QueueMedia

    /// Wires a connected peer together; nothing runs until `run()`.
    /// - Parameters:
    ///   - file: the local media file of the session's activity.
    ///   - media: where the queue's items are found; without it, every item of the session is played from `file`.
    package init(name: String, player: GStreamerPlayer, engine: (any PlaybackEngine)? = nil, connection: TandemClientConnection,
         file: String, media: QueueMedia? = nil, clock: any MonotonicClock = SystemMonotonicClock(),
         configuration: PlaybackCoordinator.Configuration = .init()) {
        self.name = name
        self.player = player
        self.engine = engine ?? player
        self.connection = connection
        self.clock = clock
        let resolver = media ?? QueueMedia(directory: nil)
        if let itemID = connection.welcome.activity?.itemID { resolver.register(itemID: itemID, location: file) }
        self.media = resolver
        // The coordinator subscribes to the link first: it must see every timeline the authority sends.
        var locateActivity: (@Sendable (ActivityEnvelope) async -> String)?
        if media != nil { locateActivity = { await resolver.location(for: $0) } }
        coordinator = PlaybackCoordinator(engine: self.engine, link: connection, clock: clock,
                                          configuration: configuration, locate: { _ in file },
                                          locateActivity: locateActivity)
        session = GroupSession(link: connection)
        // Made right after the session, so that it sees the attachments the authority announces on joining.
        journal = GroupSessionJournal(session: session)
        chat = GroupSessionMessenger(session: session)
        session.join()
    }

    /// Connects to the session named by `invite` and wires a peer for `file`.
    package static func connect(invite: Invite, name: String, file: String, media: QueueMedia? = nil,
                        player: GStreamerPlayer,
                        engine: (any PlaybackEngine)? = nil, options: TandemClient.Options = .init(),
                        configuration: PlaybackCoordinator.Configuration = .init()) async throws(TandemClientError) -> LocalPeer {
        var options = options
        options.prerollEstimate = player.prerollEstimate
        // Enter, then join: the server sends nothing shared before the join, which goes out before anything the
        // coordinator sends. Attachments (a preview image) are fetched only when wanted.
        options.waitsToJoin = true
        options.lazyAttachments = true
        let connection = try await TandemClient.connect(invite: invite, name: name, options: options)
        let peer = LocalPeer(name: name, player: player, engine: engine, connection: connection, file: file,
                             media: media, clock: options.clock, configuration: configuration)
        do { try await connection.send(.takePart) } catch {
            await connection.close()
            throw .unreachable("the connection closed while joining: \(error)")
        }
        return peer
    }

    /// Plays with the group until the session ends for this peer (it left, or the session ended); then releases
    /// the player.
    package func run() async {
        let session = self.session
        let journal = self.journal
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await session.run() }
            group.addTask { await journal.run() }
            await coordinator.run()
            group.cancelAll()
        }
        await engine.close()
    }

    /// Leaves the session; the others go on.
    package func leave() async { await session.leave() }

    /// Ends the session for everyone.
    package func end() async throws { try await session.end() }

    /// The participant id the session gave this peer.
    package var id: ParticipantID { connection.localParticipantID }

    /// Whether this peer joined as the session's host (only the host may end it for everyone).
    package var isHost: Bool {
        connection.welcome.participants.contains { $0.participant.id == id && $0.isHost }
    }

    /// Where this peer stands right now.
    package func status() async -> PeerStatus {
        let now = clock.now
        let mapping = connection.clockMapping()
        let sessionNow = mapping?.sessionTime(atLocal: now)
        let timeline = await coordinator.timeline
        let expected = sessionNow.flatMap { timeline?.expectedItemTime(atSessionTime: $0).nanoseconds }
        let quality = connection.clockQuality()
        var status = PeerStatus(
            timeline: timeline, position: engine.currentItemTime()?.nanoseconds, expected: expected,
            duration: player.mediaInfo?.duration?.nanoseconds, others: await coordinator.otherParticipants,
            clockOffset: mapping?.offset(atLocal: now).nanoseconds, errorBound: quality?.errorBound.nanoseconds,
            roundTrip: quality?.roundTrip.nanoseconds,
            reconnecting: connection.isReconnecting, queue: await coordinator.queue,
            unreliablePath: connection.unreliablePath, renderOffset: await coordinator.renderOffset?.nanoseconds)
        if let uri = player.loadedURI, let host = media.streamingHost(of: uri) {
            status.streaming = PeerStatus.Streaming(from: host, buffered: player.bufferedAhead())
        }
        return status
    }

    // MARK: User requests

    /// Carries out a user's command; returns a message for the user when it cannot. What changed only here
    /// (volume, tracks, the offset) is said through `feedback`.
    package func perform(_ command: UserCommand, feedback: @Sendable (String) -> Void = { _ in }) async -> String? {
        let status = await status()
        let position = status.position ?? status.expected ?? 0
        switch command {
        case .togglePlayPause:
            if let timeline = status.timeline, timeline.status != .paused {
                await coordinator.pause()
            } else {
                await coordinator.play()
            }
        case .play:
            await coordinator.play()
        case .pause:
            await coordinator.pause()
        case .seek(let seconds):
            return await seek(to: TimeSpan.seconds(seconds).nanoseconds, duration: status.duration)
        case .seekBy(let seconds):
            let target = max(0, position + TimeSpan.seconds(seconds).nanoseconds)
            return await seek(to: min(target, max(0, (status.duration ?? .max) - TimeSpan.seconds(1).nanoseconds)),
                              duration: status.duration)
        case .rate(let rate):
            guard rate.isFinite, (0.25...4).contains(rate) else {
                return "rate \(rate) is out of range — use a rate from 0.25 to 4 (1 is normal speed)"
            }
            await coordinator.setRate(rate)
        case .rateStep(let up):
            let current = status.timeline?.rate ?? 1
            let steps = UserCommand.rateSteps
            let next = up ? steps.first { $0 > current + 1e-9 } : steps.last { $0 < current - 1e-9 }
            guard let next else { return up ? "already at the fastest rate (2×)" : "already at the slowest rate (0.5×)" }
            await coordinator.setRate(next)
        case .restart:
            await coordinator.seek(to: 0)
        case .notice(let text):
            do { try await session.showNotice(text) } catch { return "could not show the notice: \(error)" }
        case .next, .previous, .queueAdd, .jump, .queueRemove, .queueMove:
            return await performQueue(command)
        case .volume, .volumeStep, .toggleMute, .subtitles, .cycleSubtitles, .audio, .cycleAudio, .offset,
             .offsetStep, .toggleFullscreen:
            return adjustOutput(command, feedback: feedback)
        case .chat(let text):
            return await sendChat(text)
        case .leave, .end, .help, .showStatus, .openChatPrompt, .queueList:
            break  // handled by the console
        }
        return nil
    }

    private func seek(to itemTime: Int64, duration: Int64?) async -> String? {
        guard itemTime >= 0 else { return "cannot seek before the start — use a time of 0 or more seconds" }
        if let duration, itemTime >= duration {
            return String(format: "cannot seek to %.1f s: the item lasts %.1f s", Double(itemTime) / 1e9, Double(duration) / 1e9)
        }
        await coordinator.seek(to: ItemTime(nanoseconds: itemTime))
        return nil
    }
}

/// A peer's state at one moment, for the status line and `--json` position events.
package struct PeerStatus: Sendable {
    package var timeline: Timeline?
    /// The item time the engine renders now.
    package var position: Int64?
    /// The item time the group's timeline says should render now.
    package var expected: Int64?
    package var duration: Int64?
    package var others: [ParticipantState]
    /// Session time − local time now (ns).
    package var clockOffset: Int64?
    package var errorBound: Int64?
    package var roundTrip: Int64?
    /// The link was lost and the peer is reconnecting.
    package var reconnecting = false
    /// The session's queue.
    package var queue: SessionQueue?
    /// The item plays from the host's copy over the network (`--share-media`).
    package var streaming: Streaming?

    /// Whom the item streams from and how much of it is fetched ahead of the position.
    package struct Streaming: Sendable, Equatable {
        package var from: String
        package var buffered: TimeSpan?
    }
    /// Which path unreliable app messages take: UDP datagrams, or the TCP connection (and why).
    package var unreliablePath: UnreliablePath?
    /// How far this peer's output is from the group's line (ns, positive ahead), from its render probe.
    package var renderOffset: Int64?

    package init(timeline: Timeline?, position: Int64?, expected: Int64?, duration: Int64?, others: [ParticipantState],
                 clockOffset: Int64?, errorBound: Int64?, roundTrip: Int64?, reconnecting: Bool = false,
                 queue: SessionQueue? = nil, unreliablePath: UnreliablePath? = nil, renderOffset: Int64? = nil) {
        self.renderOffset = renderOffset
        self.queue = queue
        self.unreliablePath = unreliablePath
        self.timeline = timeline
        self.position = position
        self.expected = expected
        self.duration = duration
        self.others = others
        self.clockOffset = clockOffset
        self.errorBound = errorBound
        self.roundTrip = roundTrip
        self.reconnecting = reconnecting
    }

    /// How far the engine is from the timeline (ns), while playing.
    package var positionError: Int64? {
        guard let position, let expected, timeline?.isPlaying ?? false else { return nil }
        return position - expected
    }
}
