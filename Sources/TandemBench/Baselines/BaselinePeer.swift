import Foundation
import Tandem
import TandemPeer

/// Benchmarks only: a peer whose player follows a re-implementation of another system's published sync rules
/// (`BaselineRules`), so Tandem can be measured side by side with them — same server, same network, same
/// players, same schedule. What the server decides (ordering, waiting for loads and stalls, scheduling) is shared;
/// what differs is how each peer turns the group's timeline into rendering and how it corrects itself.
///
/// The engine's clock reads this peer's own local time (the baselines do not use Tandem's clock sync); speed
/// corrections change that clock's rate, which changes the playback speed without a seek, as a player's
/// `playbackRate` or mpv's `speed` would.
package actor BaselinePeer: PeerDriver {
    package enum Rules: Sendable {
        case syncplay
        case jellyfin
    }

    package nonisolated let connection: TandemClientConnection
    package nonisolated let engine: any PlaybackEngine
    package nonisolated let session: GroupSession<MediaActivity>
    package nonisolated let player: GStreamerPlayer
    package let rules: Rules
    /// This peer's local clock (wrong by the benchmark's injected offset and drift).
    package let clock: any MonotonicClock
    package let file: String

    private typealias Operation = @Sendable () async -> Void
    private let messages: AsyncStream<ServerMessage>
    private let samples: AsyncStream<ClockSample>
    private let operations: AsyncStream<Operation>
    private let operationSink: AsyncStream<Operation>.Continuation

    private var timeline: Timeline?
    private var loaded = false
    /// The generation the engine is rendering (nil when not playing).
    private var playingGeneration: UInt64?
    private var window: [ClockSample] = []
    private var smoothedRoundTrip: Double?
    /// The server's time in its latest clock answer, and when (local time) that answer arrived.
    private var lastServerTime: (t3: Int64, arrival: Int64)?
    /// Local → engine clock (identity but for speed corrections).
    private var engineMapping = ClockMapping.identity
    private var speedFactor = 1.0
    private var speedUntil: Int64?
    private var cooldownUntil: Int64 = 0
    private var lastCheck: Int64 = 0
    private var nextRequestID: UInt64 = 1
    private var stallSuspension: UInt64?
    private var nextSuspension: UInt64 = 1
    /// How many corrections the rules made, by kind.
    private(set) var corrections: [String: Int] = [:]

    package init(connection: TandemClientConnection, player: GStreamerPlayer, engine: any PlaybackEngine, file: String,
         clock: any MonotonicClock, rules: Rules) {
        self.connection = connection
        self.player = player
        self.engine = engine
        self.file = file
        self.clock = clock
        self.rules = rules
        // Subscribe before anything else so that no timeline is missed.
        messages = connection.serverMessages()
        samples = connection.clockSamples()
        (operations, operationSink) = AsyncStream.makeStream(of: Operation.self)
        session = GroupSession(link: connection)
        session.join()
    }

    package static func connect(invite: Invite, name: String, file: String, player: GStreamerPlayer, engine: any PlaybackEngine,
                        options: TandemClient.Options, rules: Rules) async throws(TandemClientError) -> BaselinePeer {
        var options = options
        options.prerollEstimate = player.prerollEstimate
        let connection = try await TandemClient.connect(invite: invite, name: name, options: options)
        return BaselinePeer(connection: connection, player: player, engine: engine, file: file, clock: options.clock,
                            rules: rules)
    }

    // MARK: Running

    package func run() async {
        engine.setClockMapping(.identity)
        try? await connection.send(.readiness(.loading(progress: nil)))
        do {
            let info = try await engine.load(file)
            loaded = true
            try? await connection.send(.readiness(.ready(info)))
        } catch {
            try? await connection.send(.readiness(.failed("\(error)")))
        }
        if let welcome = connection.welcome.timeline { accept(welcome) } else if let timeline { apply(timeline) }
        let operations = self.operations
        let samples = self.samples
        let events = engine.events
        let messages = self.messages
        let session = self.session
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await session.run() }
            group.addTask { for await operation in operations { await operation() } }
            group.addTask { for await sample in samples { await self.add(sample) } }
            group.addTask { for await event in events { await self.engineEvent(event) } }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    await self.tick()
                }
            }
            for await message in messages {
                switch message {
                case .welcome(let snapshot): if let timeline = snapshot.timeline { accept(timeline) }
                case .timeline(let timeline): accept(timeline)
                default: break
                }
            }
            operationSink.finish()
            group.cancelAll()
        }
        await engine.close()
    }

    // MARK: Requests (the same ones a Tandem peer sends)

    package func play() async { await request(.play) }

    package func pause() async {
        let position = engine.currentItemTime()?.nanoseconds ?? timeline?.anchorItemTime.nanoseconds ?? 0
        playingGeneration = nil
        let engine = self.engine
        operationSink.yield { _ = try? await engine.pause() }
        await request(.pause(itemTime: ItemTime(nanoseconds: position)))
    }

    package func seek(to itemTime: ItemTime) async {
        let playing = timeline.map { if case .paused = $0.status { false } else { true } } ?? false
        await request(.seek(itemTime: itemTime, play: playing))
    }

    package func setRate(_ rate: Double) async { await request(.rate(rate)) }
    package func leave() async { await session.leave() }
    package func end() async throws { try await session.end() }

    private func request(_ command: TimelineRequest.Command) async {
        let id = nextRequestID
        nextRequestID += 1
        try? await connection.send(.timelineRequest(TimelineRequest(
            requestID: id, command: command, basedOnGeneration: timeline?.generation ?? 0,
            requestedAtSessionTime: 0)))
    }

    // MARK: The timeline

    private func accept(_ new: Timeline) {
        if let current = timeline, new.generation <= current.generation { return }
        timeline = new
        guard loaded else { return }
        apply(new)
    }

    private func apply(_ timeline: Timeline) {
        let generation = timeline.generation
        switch timeline.status {
        case .paused, .waiting:
            playingGeneration = nil
            setSpeed(1)
            let engine = self.engine, connection = self.connection
            enqueue(generation) {
                _ = try? await engine.pause()
                try? await engine.prepare(at: timeline.anchorItemTime, rate: timeline.rate)
                try? await connection.send(.prepared(generation: generation))
            }
        case .playing:
            switch rules {
            case .syncplay: startSyncplay(timeline)
            case .jellyfin: startJellyfin(timeline)
            }
        }
    }

    /// Runs `operation` on the engine after everything queued before it, unless the timeline has moved on.
    private func enqueue(_ generation: UInt64, _ operation: @escaping @Sendable () async -> Void) {
        operationSink.yield { [weak self] in
            guard let self, await self.isCurrent(generation) else { return }
            await operation()
        }
    }

    private func isCurrent(_ generation: UInt64) -> Bool { timeline?.generation == generation }

    /// Prepares at `item` and starts rendering it at once (as a player told "seek there and play" does).
    private func startNow(_ timeline: Timeline, at item: Int64) {
        playingGeneration = timeline.generation
        setSpeed(1)
        let engine = self.engine, player = self.player
        let clamped = max(0, item)
        enqueue(timeline.generation) {
            do {
                try await engine.prepare(at: ItemTime(nanoseconds: clamped), rate: timeline.rate)
                try await engine.play(from: ItemTime(nanoseconds: clamped),
                                      atSessionTime: player.sessionTimeNow() + .milliseconds(10),
                                      rate: timeline.rate)
            } catch {}
        }
    }

    // MARK: Syncplay

    private func startSyncplay(_ timeline: Timeline) {
        // A command the server has just relayed starts at once from its position, forwarded by half the round
        // trip; joining a timeline that has been running uses the server's position from its latest state.
        let fresh = lastServerTime.map { timeline.anchorSessionTime.nanoseconds > $0.t3 } ?? true
        let item = fresh
            ? timeline.anchorItemTime.nanoseconds + Int64(timeline.rate * (smoothedRoundTrip ?? 0) / 2)
            : syncplayGlobalPosition(timeline) ?? timeline.anchorItemTime.nanoseconds
        startNow(timeline, at: item)
    }

    private func syncplayGlobalPosition(_ timeline: Timeline) -> Int64? {
        guard let last = lastServerTime else { return nil }
        return BaselineRules.Syncplay.globalPosition(
            serverPosition: timeline.expectedItemTime(atSessionTime: SessionInstant(nanoseconds: last.t3)).nanoseconds, rate: timeline.rate,
            smoothedRoundTrip: smoothedRoundTrip ?? 0, sinceArrival: clock.now.nanoseconds - last.arrival)
    }

    private func syncplayCheck(now: Int64) {
        guard let timeline, timeline.isPlaying, playingGeneration == timeline.generation, now >= cooldownUntil,
              let position = engine.currentItemTime()?.nanoseconds, let global = syncplayGlobalPosition(timeline) else { return }
        switch BaselineRules.Syncplay.correction(position: position, global: global, slowedDown: speedFactor != 1) {
        case .none: break
        case .slowDown:
            count("slowdown")
            setSpeed(BaselineRules.Syncplay.slowdownRate)
        case .resetSpeed:
            setSpeed(1)
        case .seek(let to):
            count("rewind")
            startNow(timeline, at: to)
            cooldownUntil = now + TimeSpan.seconds(2).nanoseconds
        }
    }

    // MARK: Jellyfin

    private var jellyfinOffset: Int64? { BaselineRules.Jellyfin.offset(window) }

    /// Jellyfin's rules estimate session time (an offset, no drift); Syncplay's keep no such estimate.
    package func estimatedSessionTime(atLocal local: LocalInstant) -> SessionInstant? {
        guard rules == .jellyfin, let offset = jellyfinOffset else { return nil }
        return SessionInstant(nanoseconds: local.nanoseconds + offset)
    }

    /// How many corrections the rules made, by kind.
    package func correctionCounts() -> [String: Int] { corrections }

    /// Schedules the start at the timeline's session time, as Jellyfin's clients do with a timer; when that is
    /// too close or past (or `skipping`), at where the group will be once the player has prerolled.
    private func startJellyfin(_ timeline: Timeline, skipping: Bool = false) {
        guard let offset = jellyfinOffset else {
            // Not synchronised yet: start like a player without a schedule, and let the corrections catch up.
            startNow(timeline, at: timeline.anchorItemTime.nanoseconds)
            return
        }
        playingGeneration = timeline.generation
        setSpeed(1)
        let now = clock.now.nanoseconds
        var startSession = timeline.anchorSessionTime.nanoseconds
        var item = timeline.anchorItemTime.nanoseconds
        let preroll = engine.prerollEstimate.nanoseconds
        if skipping || startSession < now + offset + preroll + TimeSpan.milliseconds(20).nanoseconds {
            // Joining late: go to where the group will be once this player has prerolled.
            startSession = now + offset + preroll + TimeSpan.milliseconds(100).nanoseconds
            item = timeline.expectedItemTime(atSessionTime: SessionInstant(nanoseconds: startSession)).nanoseconds
        }
        let localStart = startSession - offset
        let startItem = item
        let engine = self.engine, player = self.player, clock = self.clock
        let generation = timeline.generation
        let margin = TimeSpan.milliseconds(10).nanoseconds
        enqueue(generation) { [weak self] in
            do {
                try await engine.prepare(at: ItemTime(nanoseconds: startItem), rate: timeline.rate)
                // The scheduled unpause: a timer that fires at the local time of the start, then play().
                while true {
                    let wait = localStart - margin - clock.now.nanoseconds
                    if wait <= 0 { break }
                    guard let self, await self.isCurrent(generation) else { return }
                    try? await Task.sleep(for: .nanoseconds(min(wait, TimeSpan.milliseconds(20).nanoseconds)))
                }
                try await engine.play(from: ItemTime(nanoseconds: startItem),
                                      atSessionTime: player.sessionTimeNow() + TimeSpan(nanoseconds: margin),
                                      rate: timeline.rate)
            } catch {}
        }
    }

    private func jellyfinCheck(now: Int64) {
        guard let timeline, timeline.isPlaying, playingGeneration == timeline.generation else { return }
        if let until = speedUntil {
            guard now >= until else { return }
            setSpeed(1)
            speedUntil = nil
            cooldownUntil = now + BaselineRules.Jellyfin.cooldown
            return
        }
        guard now >= cooldownUntil, let offset = jellyfinOffset, let position = engine.currentItemTime()?.nanoseconds else { return }
        let expected = timeline.expectedItemTime(atSessionTime: SessionInstant(nanoseconds: now + offset)).nanoseconds
        switch BaselineRules.Jellyfin.correction(position: position, expected: expected) {
        case .none: break
        case .speed(let factor):
            count("speed")
            setSpeed(factor)
            speedUntil = now + BaselineRules.Jellyfin.speedDuration
        case .skip:
            count("skip")
            startJellyfin(timeline, skipping: true)
            cooldownUntil = now + TimeSpan.seconds(2).nanoseconds
        }
    }

    // MARK: Inputs

    private func add(_ sample: ClockSample) {
        window.append(sample)
        if window.count > BaselineRules.Jellyfin.samples { window.removeFirst(window.count - BaselineRules.Jellyfin.samples) }
        smoothedRoundTrip = BaselineRules.Syncplay.smoothedRoundTrip(smoothedRoundTrip, sample: sample.roundTrip.nanoseconds)
        lastServerTime = (sample.t3.nanoseconds, sample.t4.nanoseconds)
        if rules == .syncplay, sample.t4.nanoseconds - lastCheck >= TimeSpan.milliseconds(900).nanoseconds {
            lastCheck = sample.t4.nanoseconds
            syncplayCheck(now: clock.now.nanoseconds)
        }
    }

    private func tick() {
        if rules == .jellyfin { jellyfinCheck(now: clock.now.nanoseconds) }
    }

    private func engineEvent(_ event: PlaybackEngineEvent) async {
        switch event {
        case .stalled:
            guard stallSuspension == nil else { return }
            let id = nextSuspension
            nextSuspension += 1
            stallSuspension = id
            playingGeneration = nil
            try? await connection.send(.suspension(.begin(id: id, reason: .stallRecovery)))
        case .recovered:
            guard let id = stallSuspension else { return }
            stallSuspension = nil
            try? await connection.send(.suspension(.end(id: id, proposedItemTime: nil)))
            if let timeline, timeline.isPlaying { apply(timeline) }
        default:
            break
        }
    }

    /// Plays faster or slower by running the engine's clock at `factor` × local time, without a seek.
    private func setSpeed(_ factor: Double) {
        guard factor != speedFactor else { return }
        let now = clock.now
        engineMapping = ClockMapping(localAnchor: now, sessionAnchor: engineMapping.sessionTime(atLocal: now), rate: factor)
        speedFactor = factor
        engine.setClockMapping(engineMapping)
    }

    private func count(_ kind: String) { corrections[kind, default: 0] += 1 }
}
