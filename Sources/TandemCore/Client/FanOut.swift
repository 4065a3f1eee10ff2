import Synchronization

/// Hands every value it is sent to any number of `AsyncStream` subscribers: the package's one fan-out (a session's
/// state, participants and notices; a connection's server messages, clock samples and link events; the in-memory
/// hub's links).
///
/// - Every subscriber has a buffer of its own (`Buffering`), so a slow one holds back nobody else; a bounded buffer
///   caps what a subscriber that stopped reading can hold (the oldest values go first).
/// - A subscriber whose stream terminates (it stopped iterating, its task was cancelled, it was dropped) is
///   unsubscribed.
/// - What a new subscriber receives first is chosen once (`Replay`): nothing, the latest value, or — for the first
///   subscriber only — everything sent before it subscribed.
/// - `finish` ends every stream, now and later; it may carry a last value that late subscribers receive too.
///
/// Thread-safe. Values reach every subscriber in the order of the `send` calls.
public final class FanOut<Value: Sendable>: Sendable {
    /// How much a subscriber's stream holds that it has not read yet.
    public enum Buffering: Sendable, Hashable {
        case unbounded
        /// At most this many values; older ones are dropped to make room.
        case newest(Int)
    }

    /// What a new subscriber receives before the values sent after it subscribed.
    public enum Replay: Sendable, Hashable {
        /// Nothing.
        case none
        /// The latest value sent (or the initial one), when there is one.
        case latest
        /// The first subscriber receives everything sent before it (within its buffer's bound); later subscribers
        /// receive nothing. For values that must not be lost between creating a source and listening to it.
        case backlogToFirstSubscriber
    }

    private struct State {
        var latest: Value?
        var subscribers: [Int: AsyncStream<Value>.Continuation] = [:]
        var nextKey = 0
        /// Non-nil until the first subscriber took it (`.backlogToFirstSubscriber` only).
        var backlog: [Value]?
        var finished = false
        /// The value `finish` ended with, for subscribers that arrive later.
        var last: Value?
    }

    private let state: Mutex<State>
    private let replay: Replay
    private let buffering: Buffering

    /// A fan-out whose latest value is `initial` (what `.latest` replays until something is sent).
    public init(initial: Value? = nil, replay: Replay = .none, buffering: Buffering = .unbounded) {
        self.replay = replay
        self.buffering = buffering
        state = Mutex(State(latest: initial, backlog: replay == .backlogToFirstSubscriber ? [] : nil))
    }

    /// The latest value sent (or the initial one).
    public var latest: Value? { state.withLock { $0.latest } }

    /// Whether `finish` has been called.
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// How many subscribers are listening now.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// A new stream of every later value, preceded by what `replay` says; after `finish` it holds the replay and
    /// the last value, then ends.
    public func subscribe() -> AsyncStream<Value> {
        let policy: AsyncStream<Value>.Continuation.BufferingPolicy
        switch buffering {
        case .unbounded: policy = .unbounded
        case .newest(let count): policy = .bufferingNewest(max(1, count))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: policy)
        // Registering and replaying under the lock keeps the replay ahead of anything sent concurrently.
        let key: Int? = state.withLock { s in
            switch replay {
            case .none:
                break
            case .latest:
                if let value = s.latest { continuation.yield(value) }
            case .backlogToFirstSubscriber:
                for value in s.backlog ?? [] { continuation.yield(value) }
                s.backlog = nil
            }
            if s.finished {
                if let last = s.last { continuation.yield(last) }
                return nil
            }
            let key = s.nextKey
            s.nextKey += 1
            s.subscribers[key] = continuation
            return key
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            // Never waits for the lock: when a subscriber's task is cancelled, this runs while the runtime holds that
            // task's status lock, and `send` may at that moment be yielding to the same stream under this lock (and
            // need that status lock to resume the task) — waiting would deadlock both threads. When the lock is busy,
            // `send` drops the ended stream instead (its yield answers `.terminated`).
            _ = self?.state.withLockIfAvailable { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends `value` to every subscriber (or keeps it for the first one) and remembers it as the latest value.
    /// Does nothing once finished.
    public func send(_ value: Value) {
        // Yielding under the lock keeps every subscriber's order equal to the order of `send` calls.
        state.withLock { s in
            guard !s.finished else { return }
            s.latest = value
            if s.backlog != nil {
                s.backlog!.append(value)
                if case .newest(let count) = buffering, s.backlog!.count > max(1, count) { s.backlog!.removeFirst() }
                return
            }
            var ended: [Int] = []
            for (key, continuation) in s.subscribers {
                if case .terminated = continuation.yield(value) { ended.append(key) }
            }
            for key in ended { s.subscribers.removeValue(forKey: key) }
        }
    }

    /// Ends every stream, now and later; returns false when it had already ended (and does nothing then).
    ///
    /// `last`, when given, is the final value: current subscribers receive it unless `sendLastNow` is false (they
    /// already have it), and every later subscriber receives it before its stream ends.
    @discardableResult
    public func finish(last: Value? = nil, sendLastNow: Bool = true) -> Bool {
        let ending: [AsyncStream<Value>.Continuation]? = state.withLock { s in
            guard !s.finished else { return nil }
            s.finished = true
            s.last = last
            defer { s.subscribers = [:] }
            if let last, sendLastNow {
                for continuation in s.subscribers.values { continuation.yield(last) }
            }
            return Array(s.subscribers.values)
        }
        guard let ending else { return false }
        for continuation in ending { continuation.finish() }
        return true
    }
}
