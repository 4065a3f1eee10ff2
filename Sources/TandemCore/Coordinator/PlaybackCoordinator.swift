/// Coordinates one `PlaybackEngine` with the group, like AVFoundation's playback coordinator: local play, pause,
/// seek and rate requests go to the session's authority; the group's timeline is applied at its scheduled times;
/// suspensions hold the group (or just this peer) back.
///
/// The decisions live in `PlaybackCoordinatorStateMachine`; this actor feeds it (server messages, engine events,
/// periodic ticks timed on `clock`) and carries out what it returns. Call `run()` from a task you own; it returns
/// when the session ends for this peer or the task is cancelled.
///
/// Generic over the clock it reads and sleeps on, so tests drive it with a manual clock (TandemTesting's
/// `ManualClock`). `PlaybackCoordinator` is the spelling for a clock chosen at run time, the machine's monotonic
/// clock by default.
public actor ClockedPlaybackCoordinator<C: MonotonicClock> {
    public typealias Configuration = PlaybackCoordinatorStateMachine.Configuration

    /// A local "don't play yet"; end it when the reason is gone.
    public struct Suspension: Sendable, Hashable {
        public let id: SuspensionID
        public let reason: SuspensionReason
        let coordinator: ClockedPlaybackCoordinator

        /// Ends the suspension; the group resumes on its own schedule.
        public func end() async { await coordinator.end(id, proposing: nil) }
        /// Ends the suspension and asks the group to resume from `itemTime`.
        public func end(proposingNewTime itemTime: ItemTime) async {
            await coordinator.end(id, proposing: itemTime)
        }

        public static func == (a: Suspension, b: Suspension) -> Bool { a.id == b.id && a.coordinator === b.coordinator }
        public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    }

    private var machine: PlaybackCoordinatorStateMachine
    private let engine: any PlaybackEngine
    private let link: any SessionLink
    private let clock: C
    private let tickInterval: Duration
    private let locate: @Sendable (String) -> String
    private let locateActivity: (@Sendable (ActivityEnvelope) async -> String)?
    private let eventsBox = FanOut<CoordinatorEvent>()
    private let refusalsBox = FanOut<Refusal>(replay: .none, buffering: .newest(64))
    private let commands: AsyncStream<(UInt64, EngineCommand)>
    private let commandSink: AsyncStream<(UInt64, EngineCommand)>.Continuation
    private let outgoing: AsyncStream<ClientMessage>
    private let outgoingSink: AsyncStream<ClientMessage>.Continuation
    /// Subscribed at creation, so that nothing the authority sends between then and `run()` is missed.
    private let messages: AsyncStream<ServerMessage>

    /// The preroll estimate the coordinator plans with is the engine's own (`configuration.prerollEstimate` is
    /// replaced by `engine.prerollEstimate`).
    /// - Parameters:
    ///   - clock: this peer's local monotonic clock (the one the link's clock mapping starts from).
    ///   - locate: turns the activity's item id into a path or URI for `engine.load`.
    ///   - locateActivity: when given, turns the activity whose item is to be loaded into a path or URI instead
    ///     (e.g. by the file name its payload names, for the items of a queue).
    public init(engine: any PlaybackEngine, link: any SessionLink, clock: C,
                configuration: Configuration = .init(), tickInterval: Duration = .milliseconds(50),
                locate: @escaping @Sendable (String) -> String = { $0 },
                locateActivity: (@Sendable (ActivityEnvelope) async -> String)? = nil) {
        var configuration = configuration
        configuration.prerollEstimate = engine.prerollEstimate
        machine = PlaybackCoordinatorStateMachine(configuration: configuration)
        self.engine = engine
        self.link = link
        self.clock = clock
        self.tickInterval = tickInterval
        self.locate = locate
        self.locateActivity = locateActivity
        (commands, commandSink) = AsyncStream.makeStream(of: (UInt64, EngineCommand).self)
        (outgoing, outgoingSink) = AsyncStream.makeStream(of: ClientMessage.self)
        messages = link.serverMessages()
    }

    // MARK: Observation

    /// Events for the app (timeline changes, notices, waiting, participants); one stream per call.
    public nonisolated var events: AsyncStream<CoordinatorEvent> { eventsBox.subscribe() }
    /// The group's current timeline.
    public var timeline: Timeline? { machine.timeline }
    /// Everyone else, with their readiness and suspensions.
    public var otherParticipants: [ParticipantState] { machine.otherParticipants }
    /// How far this peer's output is from the group's line (positive: ahead), from the engine's latest render, as
    /// the link reports give it to the group; nil unless playing and settled, or when the engine does not see its
    /// renders.
    public var renderOffset: TimeSpan? { machine.renderOffset(of: engine.latestRender(), now: clock.now) }
    /// The item time the group should render at session time `t`.
    public func expectedItemTime(atSessionTime t: SessionInstant) -> ItemTime? {
        machine.expectedItemTime(atSessionTime: t)
    }
    /// Reasons for which local suspensions make the group wait (others only hold this peer back).
    public var suspensionReasonsThatTriggerWaiting: Set<SuspensionReason> {
        machine.configuration.suspensionReasonsThatTriggerWaiting
    }
    public func setSuspensionReasonsThatTriggerWaiting(_ reasons: Set<SuspensionReason>) {
        machine.configuration.suspensionReasonsThatTriggerWaiting = reasons
    }
    /// Participants whose media differs from ours.
    public var participantsWithDifferentMedia: Set<ParticipantID> { machine.participantsWithDifferentMedia }

    // MARK: Requests
    //
    // The user's intents, decided here with this coordinator's own state and the limits the authority announced
    // (`limits`). What the limits refuse throws before anything is sent, in the authority's words; what the authority
    // still refuses of a request that was sent arrives on `refusals`.

    /// The rate range, rate and seek steps, and where a seek past the item lands, as the authority announced them.
    public var limits: PlaybackLimits { machine.limits }

    /// What the authority refused of this coordinator's requests after they were sent (timeline requests and
    /// suspensions; a call cannot wait for the group's answer). One stream per call; refusals of the session's own
    /// requests (activity, queue, notices) are `GroupSession.refusals`'.
    public nonisolated var refusals: AsyncStream<Refusal> { refusalsBox.subscribe() }

    public func play() { apply(machine.play(now: clock.now)) }

    /// Pauses here at once and everyone at this engine's position (or, without one, where the group's line is).
    public func pause() { apply(machine.pause(engineItemTime: engine.currentItemTime(), now: clock.now)) }

    /// Plays when the group is paused (or this peer's pause is on its way), pauses when it plays or waits to play.
    public func togglePlayPause() {
        apply(machine.togglePlayPause(engineItemTime: engine.currentItemTime(), now: clock.now))
    }

    /// Seeks the group to `itemTime`; it keeps playing if it was. Throws `Refusal` (`.invalid`) for a time before 0
    /// or at or past the end of the loaded item.
    public func seek(to itemTime: ItemTime) throws(Refusal) {
        apply(try machine.seek(to: itemTime, now: clock.now))
    }

    /// Seeks the group `offset` from this engine's position, clamped to the item (`PlaybackLimits.clampedSeek`).
    public func seek(by offset: TimeSpan) {
        apply(machine.seek(by: offset, engineItemTime: engine.currentItemTime(), now: clock.now))
    }

    /// One seek step (the arrow keys), as large as `limits` says.
    public func seek(_ step: PlaybackLimits.SeekStep) {
        apply(machine.seek(step, engineItemTime: engine.currentItemTime(), now: clock.now))
    }

    /// Asks the group to play at `rate`. Throws `Refusal` (`.invalid`) for a rate outside `limits`.
    public func setRate(_ rate: Double) throws(Refusal) { apply(try machine.setRate(rate, now: clock.now)) }

    /// The next rate step up (or down) from the group's rate. Throws `Refusal` (`.invalid`) at the end of the steps.
    public func stepRate(up: Bool) throws(Refusal) { apply(try machine.stepRate(up: up, now: clock.now)) }

    /// The session's queue, as the authority last described it.
    public var queue: SessionQueue? { machine.queue }

    /// Moves the group to queue entry `entryID`, proposing to start it at `itemTime` (AVPlaybackCoordinator's
    /// `transitionToItem(withIdentifier:proposingInitialTimingBasedOn:)`): everyone loads the item and the group
    /// starts together once all have; a playing group plays on, a paused one stays paused.
    public func transitionToItem(withIdentifier entryID: String, startingAt itemTime: ItemTime = .zero) {
        outgoingSink.yield(.queue(.transition(to: .entry(id: entryID), startingAt: itemTime, play: nil)))
    }

    /// Holds playback back for `reason` until the returned suspension ends.
    public func beginSuspension(for reason: SuspensionReason) -> Suspension {
        let (id, actions) = machine.beginSuspension(for: reason, now: clock.now)
        apply(actions)
        return Suspension(id: id, reason: reason, coordinator: self)
    }

    func end(_ id: SuspensionID, proposing: ItemTime?) {
        apply(machine.endSuspension(id, proposingNewTime: proposing, now: clock.now))
    }

    // MARK: Running

    /// Drives the engine until the session ends for this peer or the calling task is cancelled. Call it once:
    /// it consumes the engine's single event stream.
    public func run() async {
        let messages = self.messages
        apply(machine.tick(now: clock.now, mapping: link.clockMapping(), clockQuality: link.clockQuality(),
                           engineItemTime: nil))
        apply(machine.receive(.welcome(link.welcome), now: clock.now))
        let engine = self.engine
        let link = self.link
        let commands = self.commands
        let outgoing = self.outgoing
        let tickInterval = self.tickInterval
        let clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in engine.events { await self.engineEvent(event) }
            }
            group.addTask {
                while !Task.isCancelled {
                    do { try await clock.sleep(until: clock.now.advanced(by: tickInterval), tolerance: nil) } catch {
                        return
                    }
                    await self.tick()
                }
            }
            group.addTask {
                for await (id, command) in commands {
                    var location: String?
                    if case .load(let itemID) = command { location = await self.location(of: itemID) }
                    let outcome = await Self.execute(command, on: engine, location: location)
                    if let outcome { await self.completed(id, outcome) }
                }
            }
            group.addTask {
                for await message in outgoing { try? await link.send(message) }
            }
            group.addTask {
                for await proposal in link.directProposals() { await self.receiveDirect(proposal) }
            }
            // The server's messages end when the session ends for us (or this task is cancelled): stop the rest.
            for await message in messages { receive(message) }
            group.cancelAll()
        }
    }

    private func receive(_ message: ServerMessage) { apply(machine.receive(message, now: clock.now)) }
    private func receiveDirect(_ proposal: DirectProposal) {
        apply(machine.receiveDirect(proposal, now: clock.now))
    }
    private func engineEvent(_ event: PlaybackEngineEvent) { apply(machine.engineEvent(event, now: clock.now)) }
    private func completed(_ id: UInt64, _ outcome: EngineOutcome) {
        // The engine measures its prerolls as it goes; plan late joins with its latest estimate.
        machine.configuration.prerollEstimate = engine.prerollEstimate
        apply(machine.engineCompleted(id, outcome, now: clock.now))
    }

    private func tick() {
        machine.returnDelaySpread = link.returnDelaySpread()
        machine.directPaths = link.directPaths()
        apply(machine.tick(now: clock.now, mapping: link.clockMapping(), clockQuality: link.clockQuality(),
                           engineItemTime: engine.currentItemTime(), latestRender: engine.latestRender()))
    }

    /// Where the item `itemID` is: from the activity that names it, or from its id.
    private func location(of itemID: String) async -> String {
        if let locateActivity, let activity = machine.activity, activity.itemID == itemID {
            return await locateActivity(activity)
        }
        return locate(itemID)
    }

    private static func execute(_ command: EngineCommand, on engine: any PlaybackEngine,
                                location: String?) async -> EngineOutcome? {
        do {
            switch command {
            case .load(let itemID): return .loaded(try await engine.load(location ?? itemID))
            case .prepare(let itemTime, let rate):
                try await engine.prepare(at: itemTime, rate: rate)
                return .prepared(itemTime: itemTime)
            case .play(let itemTime, let sessionTime, let rate):
                try await engine.play(from: itemTime, atSessionTime: sessionTime, rate: rate)
                return .playing
            case .pause: return .paused(itemTime: try await engine.pause())
            case .setClockMapping(let mapping):
                engine.setClockMapping(mapping)
                return nil
            }
        } catch let error as PlaybackError {
            return .failed(error)
        } catch {
            return .failed(.engineFailure(String(describing: error)))
        }
    }

    private func apply(_ actions: [PlaybackCoordinatorStateMachine.Action]) {
        for action in actions {
            switch action {
            case .send(let message):
                outgoingSink.yield(message)
            case .engine(_, .setClockMapping(let mapping)):
                // Calibration must not wait behind a slow load or seek.
                engine.setClockMapping(mapping)
            case .engine(let id, let command):
                commandSink.yield((id, command))
            case .event(let event):
                eventsBox.send(event)
                if case .invalidated = event {
                    eventsBox.finish()
                    refusalsBox.finish()
                }
            case .refused(let refusal):
                refusalsBox.send(refusal)
            case .sendDirect(let proposal, let participants):
                link.sendDirect(proposal, to: participants)
            }
        }
    }
}

/// The coordinator on a clock chosen at run time.
public typealias PlaybackCoordinator = ClockedPlaybackCoordinator<AnyMonotonicClock>

extension ClockedPlaybackCoordinator where C == AnyMonotonicClock {
    /// - Parameters:
    ///   - clock: this peer's local monotonic clock (the one the link's clock mapping starts from).
    ///   - locate: turns the activity's item id into a path or URI for `engine.load`.
    ///   - locateActivity: when given, turns the activity whose item is to be loaded into a path or URI instead.
    public init(engine: any PlaybackEngine, link: any SessionLink, clock: any MonotonicClock = SystemMonotonicClock(),
                configuration: Configuration = .init(), tickInterval: Duration = .milliseconds(50),
                locate: @escaping @Sendable (String) -> String = { $0 },
                locateActivity: (@Sendable (ActivityEnvelope) async -> String)? = nil) {
        self.init(engine: engine, link: link, clock: AnyMonotonicClock(clock), configuration: configuration,
                  tickInterval: tickInterval, locate: locate, locateActivity: locateActivity)
    }
}
