import Dispatch
import Synchronization
import TandemCore

/// Begins a streamed item's stall as soon as its sinks starve: the picture (or sound) lags the playing line by
/// more than `starvedLag` (the download buffer's level, which GStreamer reports on the bus, says so 2–3 s later and
/// now and then far later, while the others play on). And ends a streamed item's stall the way its load ends (`GStreamerPlayer.waitUntilPlayableThrough`): once
/// `playThroughLead` is fetched ahead of the position and the fetch runs `playThroughRate` times faster than play
/// (or the item is fetched to its end), rather than when GStreamer's download buffer is full again (2 s or 2 MB
/// ahead, or the end of a small item). Checks five times a second, the end only while the bus says stalled; the
/// two on timers of their own, since the pipeline's queries the end is judged by can block for seconds while the
/// source waits for bytes, and a starving sink must be heard all the same.
final class StallWatch: @unchecked Sendable {
    // `@unchecked`: the timers are set up once in `start` and otherwise only cancelled (thread-safe in Dispatch);
    // the samples live behind their mutex.
    private let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tandem.media.stall-watch"))
    private let starvation = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tandem.media.starvation"))
    private let first = Mutex<(at: LocalInstant, reach: Double)?>(nil)
    private let bus: BusPump

    init(bus: BusPump) { self.bus = bus }

    /// How far behind its line a playing streamed item's sinks may render before it counts as stalled: a dozen
    /// frames, beyond what a busy machine's late frames add up to, and well under the 2–3 s the buffer level lags.
    static let starvedLag = TimeSpan.milliseconds(600)

    /// Starts watching; `measure` gives what is fetched ahead of the position, the position and the item's length
    /// while a network source is loaded (nil otherwise); `renderLag` how far (in wall time) the sinks render behind
    /// the playing line of such a source (nil when it is not playing). Called once.
    func start(measure: @escaping @Sendable () -> (ahead: TimeSpan, position: ItemTime, duration: TimeSpan)?,
               renderLag: @escaping @Sendable () -> TimeSpan?) {
        starvation.schedule(deadline: .now() + 0.2, repeating: 0.2)
        starvation.setEventHandler { [weak self] in
            guard let self, !bus.isStalled, let lag = renderLag(), lag > Self.starvedLag else { return }
            _ = bus.beginStall()
        }
        starvation.resume()
        timer.schedule(deadline: .now() + 0.2, repeating: 0.2)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            check(bus.isStalled ? measure() : nil)
        }
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

    func stop() {
        starvation.cancel()
        timer.cancel()
    }
}
