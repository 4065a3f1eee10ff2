import Synchronization

/// Fans values out to any number of `AsyncStream` subscribers, optionally starting each with the current value.
///
/// Thread-safe; a subscriber that stops iterating is dropped. `finish()` ends every stream, now and later.
final class Broadcaster<Value: Sendable>: Sendable {
    private struct State {
        var current: Value?
        var subscribers: [Int: AsyncStream<Value>.Continuation] = [:]
        var nextKey = 0
        var finished = false
    }

    private let state: Mutex<State>
    private let replaysCurrent: Bool

    /// `initial` is the current value new subscribers receive first when `replaysCurrent` is true.
    init(initial: Value? = nil, replaysCurrent: Bool) {
        state = Mutex(State(current: initial))
        self.replaysCurrent = replaysCurrent
    }

    var current: Value? { state.withLock { $0.current } }

    /// A new stream of every later value (preceded by the current one when replaying).
    func subscribe() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .unbounded)
        let key: Int? = state.withLock { s in
            if replaysCurrent, let value = s.current { continuation.yield(value) }
            if s.finished { return nil }
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
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends `value` to every subscriber and remembers it as the current value.
    func send(_ value: Value) {
        // Yielding under the lock keeps every subscriber's order equal to the order of `send` calls.
        state.withLock { s in
            guard !s.finished else { return }
            s.current = value
            for c in s.subscribers.values { c.yield(value) }
        }
    }

    /// Ends every stream.
    func finish() {
        let subscribers = state.withLock { s -> [AsyncStream<Value>.Continuation] in
            s.finished = true
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        for c in subscribers { c.finish() }
    }
}
