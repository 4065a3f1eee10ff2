import TandemCore

/// A deterministic discrete-event simulation of one session: a `SessionAuthority`, and peers each made of a skewed
/// local clock, a `ClockSyncEstimator`, a `PlaybackCoordinatorStateMachine` and a `SimulatedPlayback`.
///
/// Virtual time only (no sleeping, no tasks): `run(until:)` processes events in time order. The simulation's own
/// clock is the **true** clock and also the authority's clock, so session time equals true time; every peer sees
/// time through its own offset and drift. Network paths are TCP-like: reliable and in order per direction, a lost
/// packet showing up as a retransmission delay (and holding back what follows it). Everything random comes from one
/// seed.
///
/// Not thread-safe: one test drives it from one task.
public final class SessionSimulation {
    /// How to set up one peer.
    public struct PeerSetup {
        public var name: String
        public var link: NetworkPath
        /// The peer's local clock reads `true + clockOffset`, running `clockDriftPPM` fast.
        public var clockOffset: Int64
        public var clockDriftPPM: Double
        public var engine: FakeEngineProfile
        public var coordinator: PlaybackCoordinatorStateMachine.Configuration
        public var isHost: Bool

        public init(name: String, link: NetworkPath = .lan, clockOffset: Int64 = 0, clockDriftPPM: Double = 0,
                    engine: FakeEngineProfile = .init(), coordinator: PlaybackCoordinatorStateMachine.Configuration = .init(),
                    isHost: Bool = false) {
            self.name = name
            self.link = link
            self.clockOffset = clockOffset
            self.clockDriftPPM = clockDriftPPM
            self.engine = engine
            self.coordinator = coordinator
            self.isHost = isHost
        }
    }

    /// One simulated participant.
    public final class Peer {
        public let index: Int
        public let setup: PeerSetup
        public internal(set) var id: ParticipantID?
        public internal(set) var machine: PlaybackCoordinatorStateMachine
        public internal(set) var engine: SimulatedPlayback
        public internal(set) var estimator = ClockSyncEstimator()
        /// The estimator's outputs, refreshed when a sample arrives (the only time they change), so ticks and
        /// samples do not recompute them.
        public internal(set) var mapping: ClockMapping?
        public internal(set) var errorBound: Int64?
        var quality: (errorBound: TimeSpan, roundTrip: TimeSpan)?
        /// True time → local time.
        public let localClock: ClockMapping
        /// Every event the coordinator raised, with the true time.
        public internal(set) var events: [(time: Int64, event: CoordinatorEvent)] = []
        /// What was refused of this peer's requests: by its own limits before sending, or by the authority.
        public internal(set) var refusals: [(time: Int64, refusal: Refusal)] = []
        /// Every message the peer received from the authority, with the true time.
        public internal(set) var received: [(time: Int64, message: ServerMessage)] = []
        /// Why the session ended here, if it did.
        public internal(set) var invalidation: InvalidationReason?
        public internal(set) var connected = false
        var lastPing: LocalInstant?
        var pingSequence: UInt32 = 0
        var upLast: Int64 = .min
        var downLast: Int64 = .min

        init(index: Int, setup: PeerSetup, localClock: ClockMapping) {
            self.index = index
            self.setup = setup
            self.localClock = localClock
            self.machine = PlaybackCoordinatorStateMachine(configuration: setup.coordinator)
            self.engine = SimulatedPlayback(profile: setup.engine, localClock: localClock)
        }

        /// The peer's local clock at true time `t`.
        public func localTime(atTrue t: Int64) -> LocalInstant {
            LocalInstant(nanoseconds: localClock.sessionTime(atLocal: LocalInstant(nanoseconds: t)).nanoseconds)
        }

        /// The estimator's current error: estimated session time − true session time (ns), nil before syncing.
        public func clockError(atTrue t: Int64) -> Int64? {
            mapping.map { $0.sessionTime(atLocal: localTime(atTrue: t)).nanoseconds - t }
        }
    }

    /// One ground-truth sample: what every peer rendered at one true time.
    public struct Sample {
        public var time: Int64
        /// Per peer index: rendered item time, moving rate (0 when still), clock error bound (nil when absent).
        public var item: [Int64?]
        public var rate: [Double]
        public var errorBound: [Int64?]
        public var generation: [UInt64?]
    }

    private enum Event {
        case join(Int)
        case toAuthority(Int, ClientMessage)
        case toPeer(Int, ServerMessage)
        case closePeer(Int, InvalidationReason)
        case authorityTimer(UInt64)
        case tick(Int)
        case engineDone(Int, SimulatedPlayback.Completion)
        case recover(Int)
        case sample
        case script((SessionSimulation) -> Void)
    }

    /// The true clock (= session time).
    public private(set) var now: Int64 = 0
    /// The authority's clock is the true clock: session time equals true time.
    private var sessionNow: SessionInstant { SessionInstant(nanoseconds: now) }
    public private(set) var authority: SessionAuthority
    public private(set) var peers: [Peer] = []
    public private(set) var samples: [Sample] = []
    /// Why the authority ended the session, if it did.
    public private(set) var sessionEnded: InvalidationReason?
    /// When set, every two peers also reach each other straight, this far apart (ns), for the proposals they send
    /// that way (+Direct.swift): homes that are each a link apart, the authority in one of them.
    public var directDelay: Int64?
    /// Retransmission timeout for a lost packet (ns).
    public var retransmissionTimeout: Int64 = 200_000_000
    public let tickInterval: Int64
    public let sampleInterval: Int64
    /// The seed everything random came from.
    public let seed: UInt64

    private var rng: SeededRandom
    private var queue: [(time: Int64, seq: UInt64, event: Event)] = []
    private var sequence: UInt64 = 0
    private var wakeToken: UInt64 = 0
    private var byID: [ParticipantID: Int] = [:]

    public init(seed: UInt64, activity: ActivityEnvelope?, configuration: AuthorityConfiguration = .init(),
                tickInterval: Int64 = 20_000_000, sampleInterval: Int64 = 10_000_000) {
        rng = SeededRandom(seed: seed)
        self.seed = seed
        authority = SessionAuthority(sessionID: "sim-\(seed)", activity: activity, configuration: configuration, now: .zero)
        self.tickInterval = tickInterval
        self.sampleInterval = sampleInterval
        schedule(.sample, at: 0)
    }

    // MARK: Script

    /// Adds a peer that connects at true time `at`; returns its index.
    @discardableResult
    public func addPeer(_ setup: PeerSetup, joiningAt at: Int64 = 0) -> Int {
        let clock = ClockMapping(localAnchor: .zero, sessionAnchor: SessionInstant(nanoseconds: setup.clockOffset),
                                 rate: 1 + setup.clockDriftPPM / 1_000_000)
        let peer = Peer(index: peers.count, setup: setup, localClock: clock)
        peers.append(peer)
        schedule(.script { sim in sim.schedule(.join(peer.index), at: sim.now + sim.upDelay(peer)) }, at: at)
        return peer.index
    }

    /// Runs `action` at true time `t`.
    public func at(_ t: Int64, _ action: @escaping (SessionSimulation) -> Void) {
        schedule(.script(action), at: t)
    }

    /// The user of peer `p` presses play now.
    public func play(_ p: Int) { apply(p) { $0.machine.play(now: $1) } }

    /// The user of peer `p` pauses now (at the item time its engine shows).
    public func pause(_ p: Int) {
        let item = ItemTime(nanoseconds: peers[p].engine.renderedItemTime(atTrue: now) ?? 0)
        apply(p) { $0.machine.pause(currentItemTime: item, now: $1) }
    }

    public func seek(_ p: Int, to itemTime: Int64) {
        apply(p) { peer, now in
            refusing(peer) { () throws(Refusal) in try peer.machine.seek(to: ItemTime(nanoseconds: itemTime), now: now) }
        }
    }
    public func setRate(_ p: Int, _ rate: Double) {
        apply(p) { peer, now in refusing(peer) { () throws(Refusal) in try peer.machine.setRate(rate, now: now) } }
    }

    /// The actions of `intent`, or none when it is refused (noted in the peer's `refusals`).
    private func refusing(_ peer: Peer, _ intent: () throws(Refusal) -> [PlaybackCoordinatorStateMachine.Action])
        -> [PlaybackCoordinatorStateMachine.Action] {
        do { return try intent() } catch {
            peer.refusals.append((now, error))
            return []
        }
    }

    /// Peer `p`'s engine stalls now for `duration`.
    public func stall(_ p: Int, for duration: Int64) {
        let peer = peers[p]
        let recovery = peer.engine.stall(atTrue: now, duration: duration)
        apply(p) { $0.machine.engineEvent(.stalled, now: $1) }
        schedule(.recover(p), at: recovery)
    }

    /// Peer `p`'s engine jumps `offset` ns of item time off the timeline now, without telling anyone.
    public func slip(_ p: Int, by offset: Int64) { peers[p].engine.slip(atTrue: now, by: offset) }

    /// Peer `p` leaves (others go on).
    public func leave(_ p: Int) { sendUp(p, .leave) }

    /// Peer `p` ends the session for everyone.
    public func end(_ p: Int) { sendUp(p, .end) }

    /// Peer `p` proposes a new activity.
    public func setActivity(_ p: Int, _ envelope: ActivityEnvelope) { sendUp(p, .setActivity(envelope)) }

    /// Peer `p` changes the queue or moves the group along it.
    public func requestQueue(_ p: Int, _ request: QueueRequest) { sendUp(p, .queue(request)) }

    /// Peer `p`'s player reaches the end of its item now.
    public func reachEnd(_ p: Int) { apply(p) { $0.machine.engineEvent(.endOfStream, now: $1) } }

    /// Peer `p`'s connection drops without a word.
    public func disconnect(_ p: Int) {
        let peer = peers[p]
        guard peer.connected, let id = peer.id else { return }
        peer.connected = false
        perform(authority: authority.connectionLost(id, now: sessionNow))
    }

    /// Begins a local suspension on peer `p`.
    @discardableResult
    public func beginSuspension(_ p: Int, _ reason: SuspensionReason) -> SuspensionID {
        let peer = peers[p]
        let (id, actions) = peer.machine.beginSuspension(for: reason, now: peer.localTime(atTrue: now))
        perform(peer: p, actions)
        return id
    }

    public func endSuspension(_ p: Int, _ id: SuspensionID, proposing: Int64? = nil) {
        apply(p) { $0.machine.endSuspension(id, proposingNewTime: proposing.map { ItemTime(nanoseconds: $0) }, now: $1) }
    }

    /// Processes every event up to and including true time `t`.
    public func run(until t: Int64) {
        while let first = queue.first, first.time <= t {
            queue.removeFirst()
            now = max(now, first.time)
            handle(first.event)
        }
        now = max(now, t)
    }

    // MARK: Measurements

    /// The largest render skew between peers (ns of item time ÷ rate) over samples in `range` where all of
    /// `peers` move at the same rate, together with the pairwise clock error bounds at that sample
    /// (`errorBound_i + errorBound_j`): returns the worst excess `skew − bound` and the worst skew.
    public func skew(over range: ClosedRange<Int64>, peers which: [Int]? = nil)
        -> (maxSkew: Int64, worstExcess: Int64, samples: Int) {
        let chosen = which ?? Array(peers.indices)
        var maxSkew: Int64 = 0
        var worstExcess = Int64.min
        var count = 0
        for s in samples where range.contains(s.time) {
            guard let r = chosen.first.map({ s.rate[$0] }), r > 0,
                  chosen.allSatisfy({ $0 < s.rate.count && s.rate[$0] == r && s.item[$0] != nil })
            else { continue }
            count += 1
            for (n, i) in chosen.enumerated() {
                for j in chosen[(n + 1)...] {
                    let skew = Int64((Double(abs(s.item[i]! - s.item[j]!)) / r).rounded())
                    let bound = (s.errorBound[i] ?? 0) + (s.errorBound[j] ?? 0)
                    maxSkew = max(maxSkew, skew)
                    worstExcess = max(worstExcess, skew - bound)
                }
            }
        }
        return (maxSkew, worstExcess, count)
    }

    // MARK: Machinery

    private func schedule(_ event: Event, at t: Int64) {
        sequence += 1
        let entry = (time: max(t, now), seq: sequence, event: event)
        var lo = 0, hi = queue.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if queue[mid].time <= entry.time { lo = mid + 1 } else { hi = mid }
        }
        queue.insert(entry, at: lo)
    }

    private func delay(_ model: DelayModel) -> Int64 {
        var extra: Int64 = 0
        while true {
            if let d = model.sample(using: &rng) { return d + extra }
            extra += retransmissionTimeout
        }
    }

    private func upDelay(_ peer: Peer) -> Int64 { delay(peer.setup.link.up) }

    private func sendUp(_ p: Int, _ message: ClientMessage) {
        let peer = peers[p]
        guard peer.connected else { return }
        let arrival = max(now + upDelay(peer), peer.upLast)
        peer.upLast = arrival
        schedule(.toAuthority(p, message), at: arrival)
    }

    private func sendDown(_ p: Int, _ event: Event) {
        let peer = peers[p]
        let arrival = max(now + delay(peer.setup.link.down), peer.downLast)
        peer.downLast = arrival
        schedule(event, at: arrival)
    }

    func apply(_ p: Int, _ body: (Peer, LocalInstant) -> [PlaybackCoordinatorStateMachine.Action]) {
        let peer = peers[p]
        guard peer.invalidation == nil else { return }
        perform(peer: p, body(peer, peer.localTime(atTrue: now)))
    }

    private func perform(peer p: Int, _ actions: [PlaybackCoordinatorStateMachine.Action]) {
        let peer = peers[p]
        for action in actions {
            switch action {
            case .send(let m):
                sendUp(p, m)
            case .engine(let id, let command):
                if let done = peer.engine.run(command, id: id, atTrue: now) { schedule(.engineDone(p, done), at: done.at) }
            case .event(let e):
                peer.events.append((now, e))
            case .refused(let refusal):
                peer.refusals.append((now, refusal))
            case .sendDirect(let proposal, let to):
                sendDirect(proposal, to: to)
            }
        }
    }

    private func perform(authority actions: [SessionAuthority.Action]) {
        for action in actions {
            switch action {
            case .send(let m, let to):
                if let p = byID[to], peers[p].connected { sendDown(p, .toPeer(p, m)) }
            case .close(let id, let reason):
                if let p = byID[id], peers[p].connected { sendDown(p, .closePeer(p, reason)) }
            case .wakeUp(let at):
                wakeToken += 1
                schedule(.authorityTimer(wakeToken), at: at.nanoseconds)
            case .sessionEnded(let reason):
                sessionEnded = reason
            case .sendStoredChunk:
                preconditionFailure("the simulation's authority keeps attachment bytes itself")
            }
        }
    }

    private func handle(_ event: Event) {
        switch event {
        case .script(let action):
            action(self)
        case .join(let p):
            let peer = peers[p]
            // A deterministic token: the simulation replays exactly (a real transport draws it at random).
            switch authority.join(name: peer.setup.name, prerollEstimate: TimeSpan(nanoseconds: peer.setup.engine.prerollEstimate),
                                  wantsHost: peer.setup.isHost, newReconnectToken: "simulated-token-\(p)", now: sessionNow) {
            case .joined(let id, let actions):
                peer.id = id
                peer.connected = true
                byID[id] = p
                perform(authority: actions)
            case .refused(let reason):
                peer.invalidation = reason
            }
        case .toAuthority(let p, let message):
            guard let id = peers[p].id, peers[p].connected || isFarewell(message) else { return }
            if case .clockPing(let ping) = message {
                // The transport answers pings at once, stamping session time (the authority may answer too).
                sendDown(p, .toPeer(p, .clockPong(ClockPong(sequence: ping.sequence, t1: ping.t1, t2: sessionNow, t3: sessionNow))))
                return
            }
            perform(authority: authority.receive(message, from: id, now: sessionNow))
        case .toPeer(let p, let message):
            let peer = peers[p]
            guard peer.invalidation == nil else { return }
            peer.received.append((now, message))
            let local = peer.localTime(atTrue: now)
            if case .clockPong(let pong) = message {
                peer.estimator.add(ClockSample(t1: pong.t1, t2: pong.t2, t3: pong.t3, t4: local))
                peer.mapping = peer.estimator.mapping
                peer.errorBound = peer.estimator.errorBound?.nanoseconds
                if let e = peer.estimator.errorBound, let r = peer.estimator.roundTrip { peer.quality = (e, r) } else { peer.quality = nil }
                peer.machine.returnDelaySpread = peer.estimator.returnDelaySpread
                return
            }
            let firstWelcome: Bool
            if case .welcome = message { firstWelcome = true } else { firstWelcome = false }
            if case .invalidated(let reason) = message { peer.invalidation = reason; peer.connected = false }
            perform(peer: p, peer.machine.receive(message, now: local))
            if firstWelcome { schedule(.tick(p), at: now) }
        case .closePeer(let p, let reason):
            let peer = peers[p]
            guard peer.invalidation == nil else { return }
            peer.received.append((now, .invalidated(reason)))
            perform(peer: p, peer.machine.receive(.invalidated(reason), now: peer.localTime(atTrue: now)))
            peer.invalidation = reason
            peer.connected = false
        case .authorityTimer(let token):
            guard token == wakeToken else { return }
            perform(authority: authority.timerFired(now: sessionNow))
        case .tick(let p):
            let peer = peers[p]
            guard peer.connected, peer.invalidation == nil else { return }
            let local = peer.localTime(atTrue: now)
            peer.machine.directPaths = directPaths(of: p)
            if peer.estimator.nextPingTime(lastPing: peer.lastPing) <= local {
                peer.pingSequence &+= 1
                peer.estimator.pingSent()
                peer.lastPing = local
                sendUp(p, .clockPing(ClockPing(sequence: peer.pingSequence, t1: local)))
            }
            perform(peer: p, peer.machine.tick(now: local, mapping: peer.mapping, clockQuality: peer.quality,
                                               engineItemTime: peer.engine.renderedItemTime(atTrue: now).map { ItemTime(nanoseconds: $0) }))
            schedule(.tick(p), at: now + tickInterval)
        case .engineDone(let p, let done):
            let peer = peers[p]
            guard peer.invalidation == nil else { return }
            perform(peer: p, peer.machine.engineCompleted(done.id, done.outcome, now: peer.localTime(atTrue: now)))
        case .recover(let p):
            peers[p].engine.recover(atTrue: now)
            apply(p) { $0.machine.engineEvent(.recovered, now: $1) }
        case .sample:
            samples.append(Sample(
                time: now,
                item: peers.map { $0.connected ? $0.engine.renderedItemTime(atTrue: now) : nil },
                rate: peers.map { $0.connected ? $0.engine.movingRate(atTrue: now) : 0 },
                errorBound: peers.map { $0.errorBound },
                generation: peers.map { $0.machine.timeline?.generation }))
            schedule(.sample, at: now + sampleInterval)
        }
    }

    private func isFarewell(_ message: ClientMessage) -> Bool {
        switch message {
        case .leave, .end: return true
        default: return false
        }
    }
}
