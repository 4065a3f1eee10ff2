import Synchronization
import TandemCore

/// A clock that moves only when told to: for deterministic tests of state machines and simulations.
public final class ManualClock: MonotonicClock {
    private let time: Mutex<Int64>
    public init(_ start: Int64 = 0) { time = Mutex(start) }
    public func now() -> Int64 { time.withLock { $0 } }
    public func advance(by ns: Int64) { time.withLock { $0 += ns } }
    public func set(_ ns: Int64) { time.withLock { $0 = ns } }
}
