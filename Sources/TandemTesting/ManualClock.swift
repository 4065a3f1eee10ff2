import Synchronization
import TandemCore

/// A clock that moves only when told to: for deterministic tests of state machines, simulations and the drivers
/// that sleep on a clock.
///
/// `sleep(until:)` parks the caller until `advance(by:)` or `set(_:)` moves the clock to or past its deadline;
/// those calls resume every sleeper that is due, earliest deadline first, before they return.
public final class ManualClock: MonotonicClock {
    private struct Sleeper {
        var deadline: LocalInstant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: LocalInstant
        var sleepers: [UInt64: Sleeper] = [:]
        var nextKey: UInt64 = 0
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    /// Starts at `start` nanoseconds.
    public init(_ start: Int64 = 0) { state = Mutex(State(now: LocalInstant(nanoseconds: start))) }

    public var now: LocalInstant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Returns once at least `count` tasks sleep on this clock, so that a following `advance` reaches them.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.sleepers.count >= count { return true }
                s.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Moves the clock `ns` nanoseconds on and wakes every sleeper whose deadline has come.
    public func advance(by ns: Int64) { set(now + TimeSpan(nanoseconds: ns)) }
    public func advance(by duration: Duration) { set(now + TimeSpan(duration)) }

    /// Moves the clock to `ns` nanoseconds.
    public func set(_ ns: Int64) { set(LocalInstant(nanoseconds: ns)) }

    /// Moves the clock to `instant` (never backwards) and wakes every sleeper whose deadline has come.
    public func set(_ instant: LocalInstant) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLock { s in
            s.now = max(s.now, instant)
            let now = s.now
            let ready = s.sleepers.filter { $0.value.deadline <= now }
                .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (key, _) in ready { s.sleepers[key] = nil }
            return ready.map(\.value.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    public func sleep(until deadline: LocalInstant, tolerance: Duration? = nil) async throws {
        let key: UInt64 = state.withLock { s in
            defer { s.nextKey += 1 }
            return s.nextKey
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = Task.isCancelled
                var waiting: [CheckedContinuation<Void, Never>] = []
                let resumeNow: Bool = state.withLock { s in
                    if cancelled || deadline <= s.now { return true }
                    s.sleepers[key] = Sleeper(deadline: deadline, continuation: continuation)
                    let count = s.sleepers.count
                    waiting = s.sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
                    s.sleeperWaiters.removeAll { $0.count <= count }
                    return false
                }
                for waiter in waiting { waiter.resume() }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                } else if resumeNow {
                    continuation.resume()
                }
            }
        } onCancel: {
            let cancelled = state.withLock { $0.sleepers.removeValue(forKey: key) }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }
}
