import Foundation
import NIOCore
import Synchronization
import TandemCore

/// Where a load generator's app messages go instead of the subscribers.
final class AppMessageTap: Sendable {
    let handler: @Sendable (IncomingAppMessage, LocalInstant) -> Void
    init(handler: @escaping @Sendable (IncomingAppMessage, LocalInstant) -> Void) { self.handler = handler }
}

/// What happens to a connection's network connection underneath (`TandemClientConnection.connectionEvents()`).
public enum ConnectionEvent: Sendable, Hashable {
    /// The network connection was lost (why, in words); the connection tries to reconnect as the same participant.
    case reconnecting(reason: String)
    /// The connection is back, `after` it last heard from the server; a fresh `.welcome` went to
    /// `serverMessages()` subscribers.
    case reconnected(after: TimeSpan)
}


/// State the connection object and its channel handler share across threads.
final class ClientShared: Sendable {
    /// How a joined channel's handler reaches the connection when it is lost or when a reconnect's channel joins.
    struct ReconnectHooks: Sendable {
        /// A non-final loss of the current channel: why, and when it was last heard from.
        var lost: @Sendable (InvalidationReason, LocalInstant) -> Void
        /// A reconnect's channel got its welcome as the same participant; false when it is not wanted.
        var resumed: @Sendable (Int, SessionSnapshot, any Channel, NIOLoopBound<ClientConnectionHandler>) -> Bool
    }
    /// Set when the connection reconnects after a lost link; without them a loss ends the subscribers.
    let hooks = Mutex<ReconnectHooks?>(nil)
    /// The epoch of the channel in use; what older channels report is ignored.
    private let epoch = Mutex<Int>(0)

    /// Sends that wait for a reconnect.
    private struct Gap {
        var open = false
        var closed: InvalidationReason?
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }
    private let gap = Mutex(Gap())
    /// What happens to the network connection (`connectionEvents()`); a subscriber that does not read keeps the
    /// newest 64.
    let connectionEvents = FanOut<ConnectionEvent>(buffering: .newest(64))
    struct ClockState {
        var mapping: ClockMapping?
        var errorBound: TimeSpan?
        var roundTrip: TimeSpan?
        var returnDelaySpread: TimeSpan?
    }
    let clock = Mutex(ClockState())
    /// Whether the current connection's server takes link reports as binary frames (its `accepted` said so).
    let linkReportFrames = Atomic<Bool>(false)
    /// What the server sends; what arrived after the welcome but before anyone subscribed goes to the first
    /// subscriber. Unbounded: a reliable message is never dropped.
    let messages = FanOut<ServerMessage>(replay: .backlogToFirstSubscriber)
    private let closed = Mutex<InvalidationReason?>(nil)
    /// Receives app messages instead of the subscribers, when set (load generators).
    let appTap = Mutex<AppMessageTap?>(nil)
    /// Where the shared-media frames a relay passes go (`RelayedMediaHost`, `RelayedMediaReader`); nil: dropped.
    let media = Mutex<(@Sendable (Frame) -> Void)?>(nil)
    /// Opens and orders the others' app messages, and seals this participant's; nil for a connection without the
    /// app-data key (it shows none).
    let appData: AppMessageSeal?
    /// The app messages `appData` admitted, payloads opened (`appMessages()`).
    let opened = FanOut<IncomingAppMessage>()
    /// Whether the person has been told that the relay altered app data (once per connection).
    private let toldAltered = Atomic<Bool>(false)
    private let localClock: any MonotonicClock

    /// The words a person reads, once, when the relay altered app data.
    static let alteredText = "a message from the relay was altered and dropped: the relay may be replaying, "
        + "reordering, re-attributing or withholding messages"

    init(appData: AppMessageSeal? = nil, clock: any MonotonicClock = SystemMonotonicClock()) {
        self.appData = appData
        localClock = clock
    }
    /// Every clock exchange (`clockSamples()`); a subscriber that does not read keeps the newest 64.
    let samples = FanOut<ClockSample>(buffering: .newest(64))
    /// The current channel's UDP side, or why there is none.
    let datagrams = Mutex<(link: ClientDatagramLink?, without: String)>((nil, "not connected yet"))
    /// Which copy of each timeline is passed on: the stream's or the datagram's, whichever comes first.
    let timelineCopies = Mutex(TimelineCopies())
    /// Whether the server takes copies of timeline requests as datagrams (its `accepted` said so), and the last
    /// `TimelineRequest.copy` number given.
    let serverTakesRequestCopies = Atomic<Bool>(false)
    let lastRequestCopy = Atomic<UInt64>(0)

    /// Proposals accepted from direct peers (`directProposals()`); a subscriber that does not read keeps the newest 16.
    let directProposals = FanOut<DirectProposal>(buffering: .newest(16))

    /// The datagram link in use, if any.
    var datagramLink: ClientDatagramLink? { datagrams.withLock { $0.link } }

    /// Where unreliable app messages go, and what became of datagrams.
    var datagramStatus: DatagramStatus {
        var status = datagrams.withLock { $0.link?.status ?? DatagramStatus(path: .tcp(reason: $0.without)) }
        status.timelinesTaken = timelineCopies.withLock { $0.datagramsTaken }
        return status
    }

    /// A timeline from the stream (`viaDatagram` false) or a datagram copy: passed on when it is the first copy
    /// (`TimelineCopies`).
    func deliver(_ timeline: Timeline, viaDatagram: Bool) {
        let pass = timelineCopies.withLock { viaDatagram ? $0.fromDatagram(timeline) : $0.fromStream(timeline) }
        if pass { deliver(.timeline(timeline)) }
    }

    func deliver(_ sample: ClockSample) { samples.send(sample) }

    var closedReason: InvalidationReason? { closed.withLock { $0 } }

    // MARK: Losing and resuming the link

    /// The channel of `epoch` has ended. A `final` end (or any, without reconnect hooks) closes the link for good;
    /// otherwise the connection may reconnect.
    func channelEnded(epoch: Int, _ reason: InvalidationReason, final: Bool, announce: Bool = true,
                      silentSince: LocalInstant = .zero) {
        guard self.epoch.withLock({ $0 }) == epoch else { return }
        if !final, closedReason == nil, let lost = hooks.withLock({ $0?.lost }) {
            lost(reason, silentSince)
            return
        }
        finish(reason, announce: announce)
    }

    /// A reconnect's channel (of `epoch`) joined as the same participant; true when the connection took it.
    func resume(epoch: Int, welcome: SessionSnapshot, channel: any Channel,
                handler: NIOLoopBound<ClientConnectionHandler>) -> Bool {
        guard closedReason == nil, let resumed = hooks.withLock({ $0?.resumed }) else { return false }
        return resumed(epoch, welcome, channel, handler)
    }

    func makeCurrent(epoch: Int) { self.epoch.withLock { $0 = epoch } }

    /// The epoch app messages are sealed at (`AppMessageHeader.epoch`): it rises with every reconnect.
    var sealingEpoch: UInt32 { UInt32(truncatingIfNeeded: epoch.withLock { $0 }) }

    /// From now on sends wait for `endGap()` (or the end).
    func beginGap() { gap.withLock { $0.open = true } }

    /// The link is back: waiting sends go on, in the order they started waiting.
    func endGap() {
        let waiters = gap.withLock { gap -> [CheckedContinuation<Void, any Error>] in
            gap.open = false
            defer { gap.waiters.removeAll() }
            return gap.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns at once while the link is up; waits while it is being re-established (at most `limit` waiters).
    func waitForChannel(limit: Int) async throws {
        guard gap.withLock({ $0.open }) else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let now: Result<Void, any Error>? = gap.withLock { gap in
                if let reason = gap.closed { return .failure(reason) }
                guard gap.open else { return .success(()) }
                guard gap.waiters.count < limit else { return .failure(TandemClientError.reconnecting) }
                gap.waiters.append(continuation)
                return nil
            }
            if let now { continuation.resume(with: now) }
        }
    }

    func deliver(_ event: ConnectionEvent) { connectionEvents.send(event) }

    func deliver(_ message: ServerMessage) {
        messages.send(message)
        if case .appMessage(let app) = message { open(app) }
    }

    /// Hands an app message to `appMessages()` subscribers when it opens in its place and comes in order; tells the
    /// person once when one did not.
    private func open(_ app: IncomingAppMessage) {
        guard let appData else { return }  // No key: nothing can be shown.
        switch appData.open(app) {
        case .admitted(let message, let missingBefore):
            if missingBefore > 0 { tellAltered() }
            opened.send(message)
        case .dropped(let drop):
            if drop.isTold { tellAltered() }
        }
    }

    private func tellAltered() {
        guard toldAltered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        let now = clock.withLock { $0.mapping }?.sessionTime(atLocal: localClock.now) ?? .zero
        messages.send(.notice(Notice(kind: .appDataAltered, participant: nil, text: Self.alteredText, sessionTime: now)))
    }

    /// Marks the link closed; tells every subscriber why (unless the server already did) and ends the streams.
    func finish(_ reason: InvalidationReason, announce: Bool) {
        let first = closed.withLock { c -> Bool in
            guard c == nil else { return false }
            c = reason
            return true
        }
        guard first else { return }
        samples.finish()
        connectionEvents.finish()
        opened.finish()
        let waiters = gap.withLock { gap -> [CheckedContinuation<Void, any Error>] in
            gap.closed = reason
            defer { gap.waiters.removeAll() }
            return gap.waiters
        }
        for waiter in waiters { waiter.resume(throwing: reason) }
        // Later subscribers learn why too.
        messages.finish(last: .invalidated(reason), sendLastNow: announce)
    }
}
