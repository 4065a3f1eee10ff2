import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import Logging
import TandemCore

// Changing rate without stopping: GStreamer's instant rate change (GST_SEEK_FLAG_INSTANT_RATE_CHANGE), asked for
// at the moment the new line starts, so the switch lands on the group's anchor.
//
// After `play` the sinks render item time p at running time (p − X) / r (X the start, r the rate), and running time
// t when the clock reads base + t + latency. An instant rate change keeps the segment and only changes the rate from
// a running time on: the pipeline takes its clock minus its base time when the request reaches it, the sinks work out
// the position there and go on from it at the new rate. The buffer rendered at session time S has running time
// S − start (the base time holds the lead and the latency), and the pipeline's "now" runs `latency` ahead of what
// the sinks release, so the change is asked for when the engine clock reads anchor − latency: the pipeline then picks
// the anchor's running time, where the current line reaches the anchor's item time, and the new line goes on from
// that very frame. Asked e late, it switches e late: every later frame would render e × (1 − old rate / new rate)
// late (a fraction of e; the thread that asks wakes 0.1–1 ms late on a busy machine, differently on every peer).
// The sync-time event says where the pipeline switched, so the player moves the pipeline's base time by that much
// and the frames land on the group's line after all.
extension GStreamerPlayer {
    /// What the latest in-place rate change came to: the running time it was meant for and the one the pipeline
    /// switched at.
    public struct RateSwitch: Sendable, Hashable {
        public var rate: Double
        /// The rate it switched from.
        public var previousRate: Double
        public var intendedRunningTime: TimeSpan
        public var appliedRunningTime: TimeSpan
        /// How far the base time was moved to put the frames back on the line (0 when it was not).
        public var correction: TimeSpan = .zero

        public init(rate: Double, previousRate: Double, intendedRunningTime: TimeSpan, appliedRunningTime: TimeSpan) {
            self.rate = rate
            self.previousRate = previousRate
            self.intendedRunningTime = intendedRunningTime
            self.appliedRunningTime = appliedRunningTime
        }

        /// How much later than intended the switch happened (negative: earlier).
        public var lateness: TimeSpan { appliedRunningTime - intendedRunningTime }
        /// How much later than the new line every frame after the switch renders, uncorrected: the stretch between
        /// the intended and the real switch went at the old rate, so the position there is off by
        /// lateness × (old − new) in item time, which the new rate renders lateness × (1 − old / new) late.
        public var renderError: TimeSpan {
            guard rate > 0 else { return .zero }
            return TimeSpan(nanoseconds: Int64((Double(lateness.nanoseconds) * (1 - previousRate / rate)).rounded()))
        }
    }

    /// Render errors of a rate switch at or under this are left alone; over `largestSwitchCorrection` too (a switch
    /// that far off is not a wake-up's lateness: the coordinator's drift watchdog deals with it).
    static let smallestSwitchCorrection = TimeSpan.microseconds(5)
    static let largestSwitchCorrection = TimeSpan.milliseconds(50)
    /// How far past its moment a rate change in place is still made (at once, then corrected, while the correction
    /// stays within `largestSwitchCorrection`: 1× → 1.5× up to 130 ms late, 1.5× → 1× up to 100): the frames shown
    /// meanwhile stay on the old line, a fraction of the lateness off (a third for 1× → 1.5×), where a flush and a
    /// join would freeze the picture for a preroll and drop what played meanwhile.
    /// `PlaybackCoordinatorStateMachine.Configuration.inPlaceSwitchMargin` hands such changes over.
    static let lateSwitchAllowance = TimeSpan.milliseconds(130)

    /// The latest rate change made in place, if any.
    public var lastRateSwitch: RateSwitch? { state.withLock { $0.lastRateSwitch } }

    /// How long after the seek the pipeline's sync-time event may still come (it normally comes before the seek
    /// returns).
    static let instantRateWait = TimeSpan.milliseconds(100)

    /// A start given while playing, on a line that continues the one playing at `sessionTime`: changes rate there
    /// without flushing. Returns false (nothing changed) when it cannot: then the caller takes the flushing path.
    func switchRateInPlace(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant,
                           rate: Double) -> Bool {
        let (playing, line, origin, latency, info) = state.withLock {
            ($0.transport.isPlaying, $0.playingLine, $0.runningTimeOrigin, $0.pipelineLatency, $0.transport.info)
        }
        guard playing, info?.changesRateInPlace == true, let line else { return false }
        // Only a line that continues the playing one (the same frame at the anchor) and keeps its direction.
        guard (line(sessionTime) - itemTime).magnitude <= .milliseconds(2), (rate > 0) == (line.rate > 0) else { return false }
        let next = ItemProjection(from: sessionTime, to: itemTime, rate: rate)
        if rate == line.rate {
            state.withLock { $0.playingLine = next }
            return true
        }
        let askAt = sessionTime - latency
        // A change that arrived late is made at once and its frames put back on the line like any late switch's,
        // while that stays small; later than that, the flushing path refuses the start and the coordinator plans a
        // join.
        let lateBy = sessionTimeNow() - askAt
        let expectedError = Double(lateBy.nanoseconds) * abs(1 - line.rate / rate)
        guard lateBy <= Self.lateSwitchAllowance, expectedError <= Double(Self.largestSwitchCorrection.nanoseconds) else {
            return false
        }
        if lateBy < .zero { Self.sleep(until: monotonicTime(atSessionTime: askAt)) }
        var result = tdm_gst_instant_rate_result()
        let outcome = tdm_gst_instant_rate_change(handles.pipeline, rate, Self.instantRateWait.nanoseconds, &result)
        guard outcome == 1 else {
            logger.warning("the pipeline did not change rate in place; stopping to change it",
                           metadata: ["rate": "\(rate)", "outcome": "\(outcome)"])
            return false
        }
        var switched = RateSwitch(rate: rate, previousRate: line.rate, intendedRunningTime: sessionTime - origin,
                                  appliedRunningTime: TimeSpan(nanoseconds: Int64(clamping: result.running_time)))
        let error = switched.renderError
        if error.magnitude > Self.smallestSwitchCorrection, error.magnitude <= Self.largestSwitchCorrection,
           tdm_gst_shift_base_time(handles.pipeline, -error.nanoseconds) > 0 {
            switched.correction = TimeSpan(nanoseconds: -error.nanoseconds)
        }
        state.withLock {
            $0.playingLine = next
            $0.playingRate = rate
            // Running time 0 moved with the base time.
            $0.runningTimeOrigin = $0.runningTimeOrigin + switched.correction
            $0.lastRateSwitch = switched
        }
        logger.debug("changed rate in place", metadata: ["rate": "\(rate)",
                                                         "late_us": "\(switched.lateness.nanoseconds / 1000)",
                                                         "corrected_us": "\(switched.correction.nanoseconds / 1000)"])
        return true
    }

    /// Blocks the calling thread (the player's queue) until CLOCK_MONOTONIC reaches `deadline`.
    static func sleep(until deadline: LocalInstant) {
        var spec = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        guard deadline.nanoseconds > 0 else { return }
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }
}
