import Dispatch
import Synchronization
import TandemCore

/// Ends a streamed item's stall the way its load ends (`GStreamerPlayer.waitUntilPlayableThrough`): once
/// `playThroughLead` is fetched ahead of the position and the fetch runs `playThroughRate` times faster than play
/// (or the item is fetched to its end), rather than when GStreamer's download buffer is full again (2 s or 2 MB
/// ahead, or the end of a small item). Checks five times a second, and only while the bus says stalled.
final class StallWatch: @unchecked Sendable {
    // `@unchecked`: the timer is set up once in `start` and otherwise only cancelled (thread-safe in Dispatch); the
    // samples live behind their mutex.
    private let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tandem.media.stall-watch"))
    private let first = Mutex<(at: LocalInstant, reach: Double)?>(nil)
    private let bus: BusPump

    init(bus: BusPump) { self.bus = bus }

    /// Starts watching; `measure` gives what is fetched ahead of the position, the position and the item's length
    /// while a network source is loaded (nil otherwise). Called once.
    func start(measure: @escaping @Sendable () -> (ahead: TimeSpan, position: ItemTime, duration: TimeSpan)?) {
        timer.schedule(deadline: .now() + 0.2, repeating: 0.2)
        timer.setEventHandler { [weak self] in self?.check(measure()) }
        timer.resume()
    }

    private func check(_ measured: (ahead: TimeSpan, position: ItemTime, duration: TimeSpan)?) {
        guard bus.isStalled, let (ahead, position, duration) = measured else {
            first.withLock { $0 = nil }
            return
        }
        let now = SystemMonotonicClock().now
        let reach = position.seconds + ahead.seconds
        let recovered: Bool = first.withLock { sample in
            guard let earlier = sample else {
                sample = (now, reach)
                return false
            }
            let elapsed = (now - earlier.at).seconds
            guard elapsed >= 0.5 else { return false }
            let rate = (reach - earlier.reach) / elapsed
            return reach >= duration.seconds - 0.05
                || (ahead >= GStreamerPlayer.playThroughLead && rate >= GStreamerPlayer.playThroughRate)
        }
        if recovered, bus.endStall() { first.withLock { $0 = nil } }
    }

    func stop() { timer.cancel() }
}
