import NIOCore
import NIOPosix
import TandemCore

/// Runs the heartbeat ticks of an event loop's connections from one timer, instead of a repeating timer per
/// connection (each of those cost a timer-heap insertion and removal, a closure, a promise and a future every
/// interval). Connections are spread over eight slots, one swept every eighth of the interval, so each is ticked
/// once an interval and connections that arrived together are not all ticked at once.
///
/// One sweep per event-loop thread and interval; it is only touched on that thread. Its timer runs while it has
/// connections.
final class HeartbeatSweep {
    private final class Sweeps { var byInterval: [Int64: HeartbeatSweep] = [:] }
    // nonisolated(unsafe): each thread reads and writes only its own value, and a sweep never leaves its thread.
    nonisolated(unsafe) private static let perThread = ThreadSpecificVariable<Sweeps>()
    static let slotCount = 8

    /// Where a connection is registered.
    struct Position { var slot: Int, index: Int }

    private let interval: TimeSpan
    private var slots = [[ServerConnectionHandler]](repeating: [], count: slotCount)
    /// The slot swept next.
    private var next = 0
    private var timer: RepeatedTask?
    private(set) var memberCount = 0

    private init(interval: TimeSpan) { self.interval = interval }

    /// The calling thread's (an event loop's) sweep for `interval`.
    static func current(interval: TimeSpan) -> HeartbeatSweep {
        let sweeps = perThread.currentValue ?? {
            let made = Sweeps()
            perThread.currentValue = made
            return made
        }()
        if let sweep = sweeps.byInterval[interval.nanoseconds] { return sweep }
        let sweep = HeartbeatSweep(interval: interval)
        sweeps.byInterval[interval.nanoseconds] = sweep
        return sweep
    }

    /// Connections registered on the calling thread, over every interval.
    static var membersOnThisThread: Int {
        perThread.currentValue?.byInterval.values.reduce(0) { $0 + $1.memberCount } ?? 0
    }

    /// Registers `handler`: its first tick comes between seven eighths of an interval and one interval from now.
    func add(_ handler: ServerConnectionHandler, on loop: any EventLoop) -> Position {
        // The slot swept just before `next` comes round again last.
        let slot = (next + Self.slotCount - 1) % Self.slotCount
        slots[slot].append(handler)
        memberCount += 1
        if timer == nil {
            let step = TimeAmount.nanoseconds(Swift.max(1_000_000, interval.nanoseconds / Int64(Self.slotCount)))
            let bound = NIOLoopBound(self, eventLoop: loop)
            timer = loop.scheduleRepeatedTask(initialDelay: step, delay: step) { _ in bound.value.sweep() }
        }
        return Position(slot: slot, index: slots[slot].count - 1)
    }

    /// Unregisters the handler at `position` (its own, from `add`).
    func remove(at position: Position) {
        var members = slots[position.slot]
        slots[position.slot] = []  // one owner while it changes: no copy
        let last = members.count - 1
        if position.index != last {
            members.swapAt(position.index, last)
            members[position.index].sweepPosition?.index = position.index
        }
        members.removeLast()
        slots[position.slot] = members
        memberCount -= 1
        if memberCount == 0 {
            timer?.cancel()
            timer = nil
        }
    }

    private func sweep() {
        let slot = next
        next = (next + 1) % Self.slotCount
        // A tick may close connections (and so unregister them) while the slot is being swept: go through the
        // slot as it was, and skip whoever has left it since.
        for handler in slots[slot] where handler.sweepPosition?.slot == slot {
            handler.heartbeatTick()
        }
    }
}

extension SessionServer {
    /// Connections registered with the loops' heartbeat sweeps: each open connection once, none once it closed.
    func heartbeatSweepMembers() async -> Int {
        var total = 0
        for loop in group.makeIterator() {
            total += (try? await loop.submit { HeartbeatSweep.membersOnThisThread }.get()) ?? 0
        }
        return total
    }
}
