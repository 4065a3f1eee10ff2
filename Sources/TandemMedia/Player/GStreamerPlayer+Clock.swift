import CTandemGStreamer
import CTandemGStreamerShim
import Dispatch
import Logging
import TandemCore

// The engine clock: a GstClock on CLOCK_MONOTONIC calibrated to read session time (plus a lead), stepped or
// slewed as the session mapping changes, and replaced when it would have to step back while playing.
extension GStreamerPlayer {
    /// Backward calibration steps up to this size are applied to the running clock, which holds still for
    /// that long; larger ones get a fresh clock.
    static let largestHeldStep: TimeSpan = .milliseconds(2)

    public func setClockMapping(_ mapping: ClockMapping) {
        let composed = mapping.composed(after: localTimeModel)
        let now = SystemMonotonicClock().now
        let work: ClockWork = state.withLock { state in
            state.sessionMapping = mapping
            // A personal output offset: the engine clock reads that much behind the session.
            let target = ClockMapping(localAnchor: composed.localAnchor,
                                      sessionAnchor: composed.sessionAnchor - state.outputOffset,
                                      rate: composed.rate)
            state.calibrationGeneration += 1
            let plan = ClockCalibrationPlan.plan(current: state.calibration, target: target, now: now,
                                                 isPlaying: state.transport.isPlaying,
                                                 stepThreshold: configuration.stepThreshold,
                                                 slewDuration: configuration.slewDuration)
            switch plan {
            case .step(let next):
                let backwards = state.calibration.sessionTime(atLocal: now) - next.sessionTime(atLocal: now)
                state.calibration = next
                if !state.transport.isPlaying {
                    // Not playing: nothing waits on the clock, and the next start sets the base time from the
                    // lead. A backward step becomes lead (the GstClock keeps reading on, never backwards); a
                    // forward step uses up lead first. No clock swap, so nothing can race a start.
                    state.clockLead = max(.zero, state.clockLead + backwards)
                    Self.apply(next, lead: state.clockLead, to: state.clock.clock)
                    return .none
                }
                if backwards > Self.largestHeldStep {
                    // Playing, the lead cannot change (the sinks' base time holds it). GStreamer clocks never read
                    // backwards (they hold their last reading until real time catches up, and sinks would wake
                    // early meanwhile), so a large backward step gets a fresh clock and the pipeline is cycled.
                    // A small one is applied: the clock holds still for that long.
                    return .replaceClock(next)
                }
                Self.apply(next, lead: state.clockLead, to: state.clock.clock)
                return .none
            case .slew(let slewing, let duration, let final):
                state.calibration = slewing
                Self.apply(slewing, lead: state.clockLead, to: state.clock.clock)
                return .finishSlew(final, after: duration, generation: state.calibrationGeneration)
            }
        }
        switch work {
        case .none:
            break
        case .replaceClock(let next):
            queue.async { self.replaceClockOnQueue(next) }
        case .finishSlew(let final, let duration, let generation):
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(duration.nanoseconds))) {
                self.state.withLock { state in
                    guard state.calibrationGeneration == generation else { return }
                    state.calibration = final
                    Self.apply(final, lead: state.clockLead, to: state.clock.clock)
                }
            }
        }
    }

    /// The engine clock's reading now (session time).
    public func sessionTimeNow() -> SessionInstant {
        let calibration = state.withLock { $0.calibration }
        return calibration.sessionTime(atLocal: SystemMonotonicClock().now)
    }

    /// What the pipeline's GstClock itself reads now, less its lead: the session time the sinks wait on.
    public func pipelineClockNow() -> SessionInstant {
        let (clock, lead) = state.withLock { ($0.clock, $0.clockLead) }
        return SessionInstant(nanoseconds: Int64(bitPattern: UInt64(gst_clock_get_time(clock.clock)))) - lead
    }

    /// The CLOCK_MONOTONIC time at which the engine clock reads `sessionTime`, with the current calibration.
    public func monotonicTime(atSessionTime sessionTime: SessionInstant) -> LocalInstant {
        state.withLock { $0.calibration }.localTime(atSession: sessionTime)
    }

    /// The current local → session mapping (as last given to `setClockMapping`).
    public var clockMapping: ClockMapping { state.withLock { $0.sessionMapping } }

    func replaceClockOnQueue(_ calibration: ClockMapping) {
        guard !state.withLock({ $0.isClosed }) else { return }
        let pipeline = handles.pipeline
        let fresh = tdm_gst_clock_new_monotonic(UInt64(max(0, configuration.preciseWait.nanoseconds)))!
        let (current, lead) = state.withLock { ($0.calibration, $0.clockLead) }
        Self.apply(current, lead: lead, to: fresh)
        // Whether the pipeline plays is read here, on the queue, after any start queued before: a playing
        // pipeline only takes a new clock on its way to PLAYING, so it is cycled through PAUSED.
        let playing = state.withLock { $0.transport.isPlaying }
        if playing { pipeline.setState(GST_STATE_PAUSED) }
        gst_pipeline_use_clock(pipeline.asPipeline, fresh)
        state.withLock { $0.clock = ClockHandle(fresh) }
        gst_object_unref(fresh)
        if playing {
            // start time stays NONE, so the base time set by `play` keeps its meaning on the new clock.
            pipeline.setState(GST_STATE_PLAYING)
        }
        logger.debug("replaced the engine clock after a backward step", metadata: ["calibration": "\(calibration)"])
    }

    /// Calibrates `clock` to read `calibration`'s session time plus `lead`.
    static func apply(_ calibration: ClockMapping, lead: TimeSpan, to clock: UnsafeMutablePointer<GstClock>?) {
        guard let clock else { return }
        // GstClockTime is unsigned: keep both anchors non-negative by re-anchoring where needed.
        var mapping = ClockMapping(localAnchor: calibration.localAnchor,
                                   sessionAnchor: calibration.sessionAnchor + lead,
                                   rate: calibration.rate)
        if mapping.localAnchor < .zero || mapping.sessionAnchor < .zero {
            mapping = mapping.reanchored(atLocal: max(SystemMonotonicClock().now, .zero))
        }
        let rate = rateFraction(mapping.rate)
        gst_clock_set_calibration(clock, GstClockTime(max(0, mapping.localAnchor.nanoseconds)),
                                  GstClockTime(max(0, mapping.sessionAnchor.nanoseconds)), rate.numerator, rate.denominator)
    }

    /// A calibration rate as GStreamer takes it, a fraction over 10⁹, never below 1/10⁹.
    static func rateFraction(_ rate: Double) -> (numerator: GstClockTime, denominator: GstClockTime) {
        let denominator: GstClockTime = 1_000_000_000
        let scaled = rate * 1e9 + 0.5
        // Truncated like C's conversion; rates outside what a GstClockTime holds (none in practice) clamp.
        guard scaled >= 1 else { return (1, denominator) }
        guard scaled < 1.8e19 else { return (GstClockTime(1.8e19), denominator) }
        return (GstClockTime(scaled), denominator)
    }
}

/// What a calibration change leaves to do once the lock is released.
enum ClockWork {
    case none
    case replaceClock(ClockMapping)
    case finishSlew(ClockMapping, after: TimeSpan, generation: Int)
}

/// A reference to the engine's current clock (the pipeline keeps its own reference too).
///
/// `@unchecked Sendable`: GstClock is a thread-safe GstObject; calibration calls take its lock.
final class ClockHandle: @unchecked Sendable {
    let clock: UnsafeMutablePointer<GstClock>?
    init(_ clock: UnsafeMutablePointer<GstClock>?) {
        self.clock = clock
        if let clock { gst_object_ref(UnsafeMutableRawPointer(clock)) }
    }
    deinit { if let clock { gst_object_unref(clock) } }
}
