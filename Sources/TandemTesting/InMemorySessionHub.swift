import Synchronization
import TandemCore

/// Hosts a `SessionAuthority` in memory for tests of the async client objects (GroupSession, messenger, journal,
/// PlaybackCoordinator): links deliver instantly and in order, and the authority reads `clock`.
///
/// Timers are not run on their own: call `fireTimers()` to run what is due at the clock's current time.
public actor InMemorySessionHub {
    private var authority: SessionAuthority
    private let clock: any MonotonicClock
    /// The hub's clock is the session clock.
    private var sessionNow: SessionInstant { SessionInstant(nanoseconds: clock.now.nanoseconds) }
    private var links: [ParticipantID: InMemorySessionLink] = [:]
    /// Counts joins, for deterministic reconnect tokens (this hub is for tests; a real transport draws them at random).
    private var joins = 0
    /// Why the session ended, once it has.
    public private(set) var endReason: InvalidationReason?

    public init(activity: ActivityEnvelope?, configuration: AuthorityConfiguration = .init(),
                clock: any MonotonicClock = ManualClock()) {
        self.clock = clock
        authority = SessionAuthority(sessionID: "in-memory", activity: activity, configuration: configuration,
                                     now: SessionInstant(nanoseconds: clock.now.nanoseconds))
    }

    /// The authority's current timeline.
    public var timeline: Timeline { authority.timeline }
    /// The authority's view of the participants.
    public var participants: [ParticipantState] { authority.participants }

    /// Joins a new participant and returns its link. Throws the authority's refusal.
    /// `waiting` enters without taking part (until the link sends `takePart`); `lazyJournal` announces attachments
    /// and sends their bytes on `fetch` (see `SessionAuthority.join`).
    public func connect(name: String, isHost: Bool = false, prerollEstimate: TimeSpan = .zero, waiting: Bool = false,
                        lazyJournal: Bool = false) throws -> InMemorySessionLink {
        joins += 1
        switch authority.join(name: name, prerollEstimate: prerollEstimate, wantsHost: isHost,
                              newReconnectToken: "in-memory-token-\(joins)", waiting: waiting,
                              lazyJournal: lazyJournal, now: sessionNow) {
        case .refused(let reason):
            throw reason
        case .joined(let id, let actions):
            var welcome: SessionSnapshot?
            for case .send(.welcome(let snapshot), let to) in actions where to == id { welcome = snapshot }
            guard let welcome else { throw InvalidationReason(code: .protocolError, message: "no welcome") }
            let link = InMemorySessionLink(id: id, welcome: welcome, hub: self, clock: clock)
            links[id] = link
            perform(actions.filter { if case .send(.welcome, _) = $0 { false } else { true } })
            return link
        }
    }

    /// Runs the authority's timers at the clock's current time.
    public func fireTimers() { perform(authority.timerFired(now: sessionNow)) }

    func receive(_ message: ClientMessage, from id: ParticipantID) {
        perform(authority.receive(message, from: id, now: sessionNow))
    }

    func lost(_ id: ParticipantID) {
        perform(authority.connectionLost(id, now: sessionNow))
    }

    private func perform(_ actions: [SessionAuthority.Action]) {
        for action in actions {
            switch action {
            case .send(let message, let to):
                links[to]?.deliver(message)
            case .close(let id, let reason):
                links[id]?.deliver(.invalidated(reason))
                links[id] = nil
            case .wakeUp:
                break
            case .sessionEnded(let reason):
                endReason = reason
            case .sendStoredChunk:
                preconditionFailure("the hub's authority keeps attachment bytes itself")
            }
        }
    }
}

/// A `SessionLink` to an `InMemorySessionHub`. The local clock is the hub's clock, so the clock mapping is the
/// identity with no error.
///
/// What arrives before anyone subscribes (e.g. journal replay right after joining) is kept and handed to the first
/// subscriber, so nothing sent on joining is lost.
public final class InMemorySessionLink: SessionLink {
    public let localParticipantID: ParticipantID
    public let welcome: SessionSnapshot
    private let hub: InMemorySessionHub
    private let clock: any MonotonicClock
    private let messages = FanOut<ServerMessage>(replay: .backlogToFirstSubscriber)
    private let invalidation = Mutex<InvalidationReason?>(nil)

    init(id: ParticipantID, welcome: SessionSnapshot, hub: InMemorySessionHub, clock: any MonotonicClock) {
        localParticipantID = id
        self.welcome = welcome
        self.hub = hub
        self.clock = clock
    }

    public func send(_ message: ClientMessage) async throws {
        if let reason = invalidation.withLock({ $0 }) { throw reason }
        await hub.receive(message, from: localParticipantID)
    }

    public func serverMessages() -> AsyncStream<ServerMessage> { messages.subscribe() }

    public func clockMapping() -> ClockMapping? { .identity }
    public func clockQuality() -> (errorBound: TimeSpan, roundTrip: TimeSpan)? { (.zero, .zero) }

    public func close() async {
        guard invalidation.withLock({ $0 == nil }) else { return }
        await hub.receive(.leave, from: localParticipantID)
    }

    /// Drops the connection without leaving (the authority keeps the identity for its grace period).
    public func drop() async {
        deliver(.invalidated(InvalidationReason(code: .connectionLost, message: "connection lost")))
        await hub.lost(localParticipantID)
    }

    func deliver(_ message: ServerMessage) {
        guard case .invalidated(let reason) = message else {
            messages.send(message)
            return
        }
        let first = invalidation.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        // As over the network, subscribers that arrive later learn why too.
        if first { messages.finish(last: message) }
    }
}
