/// Scheduled starts: how long this peer takes to be ready at a new position (reported to the authority, which
/// schedules seeks and starts with it), and what it does when it cannot make a start the group scheduled.
///
/// The authority publishes a seek or a start as playing at a time every peer should make (its one-way delay plus
/// the preroll time it reported, plus a margin) without waiting for anyone's "prepared". A peer that cannot be
/// ready by then — the start reached it late, or its preroll took longer than it said — holds a `missedStart`
/// suspension: the authority stops the group (at the start's item time, if it has not begun) and everyone starts
/// again together. The suspension does not hold this peer's engine back: meanwhile it joins the line on its own,
/// as a late joiner does, so that an authority that does not wait for it (it is excused) still finds it in step.
/// It ends once this peer plays the group's line, or has prerolled where the group waits.
extension PlaybackCoordinatorStateMachine {
    /// The recent times from asking the engine to preroll somewhere new to its being ready there.
    struct ReadyTimes: Hashable, Sendable {
        private(set) var samples: [TimeSpan] = []

        mutating func record(_ span: TimeSpan) {
            samples.append(max(.zero, span))
            if samples.count > 8 { samples.removeFirst() }
        }

        /// The slowest recent one, plus a tenth and the engine's hand-over: what the authority should allow (it adds
        /// its margin, the way's spread and 8 ms, on top; with a quarter here a seek on 50 ms links came at 121.6 ms
        /// p50, with a tenth at 110.2, no start missed in either: docs/BENCHMARKS.md).
        func estimate(handover: TimeSpan) -> TimeSpan? {
            samples.max().map { $0 + $0 / Int64(10) + handover }
        }
    }

    /// The preroll estimate to put into the next link report: the measured one, when it moved by a millisecond or
    /// more since the authority last heard it.
    var prerollEstimateToReport: TimeSpan? {
        guard let estimate = readyTimes.estimate(handover: configuration.startHandover) else { return nil }
        if let reported = reportedPrerollEstimate, (reported - estimate).magnitude < .milliseconds(1) { return nil }
        return estimate
    }

    /// How long this peer needs, from now, to be ready for a start the group scheduled for it: its measured
    /// figure (the one the authority scheduled with) when it has one, else the engine's own estimate.
    var scheduledStartNeeds: TimeSpan {
        min(configuration.prerollEstimate, readyTimes.estimate(handover: configuration.startHandover)
            ?? configuration.prerollEstimate)
    }

    /// Issues a command that makes the engine preroll somewhere new (a prepare, or a play that prerolls first) and
    /// times it until the engine is ready — when nothing else is ahead of it in the engine's queue (a pause, a
    /// load or an earlier prepare would count their own time).
    @discardableResult
    mutating func issueTimed(_ command: EngineCommand, now: LocalInstant, into actions: inout [Action]) -> UInt64 {
        let idle = commandsInFlight == 0
        let id = issue(command, into: &actions)
        readyTiming = idle ? (command: id, issuedAt: now) : nil
        return id
    }

    /// The engine finished command `id`: when it was a timed one, its time counts.
    mutating func noteReady(_ id: UInt64, now: LocalInstant) {
        commandsInFlight = max(0, commandsInFlight - 1)
        guard let timing = readyTiming, timing.command == id else { return }
        readyTiming = nil
        readyTimes.record(now - timing.issuedAt)
    }

    /// Whether the current timeline is a start the group scheduled for this peer (one it received while following
    /// the session, not one it joins late).
    var isScheduledStart: Bool {
        guard let tl = timeline, tl.isPlaying else { return false }
        return scheduledStart == tl.generation
    }

    /// The engine was given the start the group scheduled (play command `command`): from now on only its outcome
    /// says whether this peer made it.
    mutating func attemptScheduledStart(_ command: UInt64) {
        guard isScheduledStart else { return }
        scheduledStart = nil
        scheduledStartPlay = command
    }

    /// This peer cannot make the start the group scheduled — it is too late to try (before any attempt), or the
    /// engine refused play command `missedPlay`, the attempt — and says so, once per start, so the group waits for it.
    mutating func missScheduledStart(missedPlay: UInt64? = nil, into actions: inout [Action]) {
        if let missedPlay {
            guard missedPlay == scheduledStartPlay, timeline?.isPlaying == true else { return }
        } else {
            guard isScheduledStart else { return }
        }
        scheduledStart = nil
        scheduledStartPlay = nil
        guard missedStartSuspension == nil,
              configuration.suspensionReasonsThatTriggerWaiting.contains(.missedStart) else { return }
        missedStartSuspension = openSuspension(.missedStart, into: &actions)
    }

    /// Ends the `missedStart` suspension: this peer plays in step, or stands prerolled where the group waits.
    mutating func endMissedStart(into actions: inout [Action]) {
        guard let suspension = missedStartSuspension else { return }
        missedStartSuspension = nil
        closeSuspension(suspension, proposing: nil, into: &actions)
    }
}
