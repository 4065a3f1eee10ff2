import TandemCore

/// How a new target mapping (CLOCK_MONOTONIC → session time) is applied to the engine's clock.
///
/// Pure arithmetic, kept apart from GStreamer so it can be tested without a pipeline.
enum ClockCalibrationPlan: Equatable, Sendable {
    /// Apply `mapping` at once (not playing, or a large error).
    case step(ClockMapping)
    /// Apply `mapping` now; it reaches `target` after `duration`, at which point `target` is applied.
    case slew(ClockMapping, duration: TimeSpan, target: ClockMapping)

    /// Plans the change from `current` to `target` at monotonic time `now`.
    ///
    /// While playing, an error of at most `stepThreshold` is slewed: the clock keeps reading continuously and
    /// its rate is changed so that it meets `target` after `slewDuration`. Larger errors, or any change while not
    /// playing, step.
    static func plan(current: ClockMapping, target: ClockMapping, now: LocalInstant, isPlaying: Bool,
                     stepThreshold: TimeSpan, slewDuration: TimeSpan) -> ClockCalibrationPlan {
        let anchoredTarget = target.reanchored(atLocal: now)
        guard isPlaying, slewDuration > .zero else { return .step(anchoredTarget) }
        let reading = current.sessionTime(atLocal: now)
        let error = anchoredTarget.sessionAnchor - reading
        guard error.magnitude <= stepThreshold else { return .step(anchoredTarget) }
        if error == .zero && current.rate == target.rate { return .step(anchoredTarget) }
        let rate = target.rate + error / slewDuration
        return .slew(ClockMapping(localAnchor: now, sessionAnchor: reading, rate: rate),
                     duration: slewDuration, target: anchoredTarget)
    }
}
