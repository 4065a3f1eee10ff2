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
        var configuration = configuration
        // `TANDEM_PROPOSED_STARTS=off` makes this peer wait for the authority's timeline for its own plays and seeks,
        // as before proposals, to measure what they save (`tandem bench sync --processes --joiner-commands`).
        if ProcessInfo.processInfo.environment["TANDEM_PROPOSED_STARTS"] == "off" { configuration.proposesStarts = false }
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
        let expected = sessionNow.flatMap { timeline?.expectedItemTime(atSessionTime: $0) }
        let quality = connection.clockQuality()
        var status = PeerStatus(
            timeline: timeline, position: engine.currentItemTime(), expected: expected,
            duration: player.mediaInfo?.duration, others: await coordinator.otherParticipants,
            clockOffset: mapping?.offset(atLocal: now), errorBound: quality?.errorBound,
            roundTrip: quality?.roundTrip,
            reconnecting: connection.isReconnecting, queue: await coordinator.queue,
            unreliablePath: connection.unreliablePath, renderOffset: await coordinator.renderOffset)
        if let uri = player.loadedURI, let host = media.streamingHost(of: uri) {
            status.streaming = PeerStatus.Streaming(from: host, buffered: player.bufferedAhead())
        }
        let datagrams = connection.datagramStatus
        if datagrams.path == .udp, datagrams.clockPongsReceived > 0 {
            status.clockStamps = datagrams.clockStamps
            status.clockSendStamps = datagrams.sendStamps
        }
        status.sinkThreads = GStreamer.sinkThreadScheduling
        status.directPaths = PeerStatus.directPaths(connection.directPaths(), others: status.others)
        return status
    }

    // MARK: User requests

    /// Carries out a user's command; returns a message for the user when it cannot. The playback intents are the
    /// coordinator's (it decides with the limits the authority announced); what changed only here (volume, tracks,
    /// the offset) is said through `feedback`.
    package func perform(_ command: UserCommand, feedback: @Sendable (String) -> Void = { _ in }) async -> String? {
        do throws(Refusal) {
            switch command {
            case .togglePlayPause: await coordinator.togglePlayPause()
            case .play: await coordinator.play()
            case .pause: await coordinator.pause()
            case .seek(let seconds): try await coordinator.seek(to: .seconds(seconds))
            case .seekStep(let step): await coordinator.seek(step)
            case .rate(let rate): try await coordinator.setRate(rate)
            case .rateStep(let up): try await coordinator.stepRate(up: up)
            case .restart: try await coordinator.seek(to: .zero)
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
        } catch {
            return error.reason
        }
        return nil
    }
}

/// A peer's state at one moment, for the status line and `--json` position events.
package struct PeerStatus: Sendable {
    package var timeline: Timeline?
    /// The item time the engine renders now.
    package var position: ItemTime?
    /// The item time the group's timeline says should render now.
    package var expected: ItemTime?
    /// How long the loaded item lasts.
    package var duration: TimeSpan?
    package var others: [ParticipantState]
    /// Session time − local time now.
    package var clockOffset: TimeSpan?
    /// The clock estimate's error bound and the round trip it was measured with.
    package var errorBound: TimeSpan?
    package var roundTrip: TimeSpan?
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
    /// How far this peer's output is from the group's line (positive: ahead), from its render probe.
    package var renderOffset: TimeSpan?
    /// Where the clock answers' arrival times come from while probes go as datagrams (nil: they do not).
    package var clockStamps: ClockStampSource?
    /// Where their send times come from (`kernel`: both the probe's and the answer's departure are the kernels'
    /// transmit stamps), while probes go as datagrams (nil: they do not).
    package var clockSendStamps: ClockStampSource?
    /// How the sink threads were scheduled (`GStreamer.sinkThreadScheduling`).
    package var sinkThreads: String?
    /// Whom this peer reaches without the server and how far (`directPaths(_:others:)`), nil when nobody.
    package var directPaths: String?

    /// `name delay, …` of the direct paths, by the names the participant list gives; nil when there are none.
    package static func directPaths(_ paths: [DirectPath], others: [ParticipantState]) -> String? {
        guard !paths.isEmpty else { return nil }
        return paths.map { path in
            let name = others.first { $0.participant.id == path.participant }?.participant.name ?? path.participant.rawValue
            return "\(name) " + String(format: "%.1f ms", path.oneWayDelay.seconds * 1000)
        }.joined(separator: ", ")
    }

    package init(timeline: Timeline?, position: ItemTime?, expected: ItemTime?, duration: TimeSpan?,
                 others: [ParticipantState], clockOffset: TimeSpan?, errorBound: TimeSpan?, roundTrip: TimeSpan?,
                 reconnecting: Bool = false, queue: SessionQueue? = nil, unreliablePath: UnreliablePath? = nil,
                 renderOffset: TimeSpan? = nil) {
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

    /// How far the engine is from the timeline, while playing.
    package var positionError: TimeSpan? {
        guard let position, let expected, timeline?.isPlaying ?? false else { return nil }
        return position - expected
    }
}
