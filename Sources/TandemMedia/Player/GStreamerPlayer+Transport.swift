import CTandemGStreamer
import CTandemGStreamerShim
import TandemCore

// Prepare, play and pause on the player's queue: each moves `PlayerState.Transport` along with the pipeline.
extension GStreamerPlayer {
    func prepareOnQueue(at itemTime: ItemTime, rate: Double) throws(PlaybackError) {
        try ensureOpen()
        let info = try validate(itemTime: itemTime, rate: rate)
        let pipeline = handles.pipeline
        let wasPlaying = state.withLock { $0.transport.isPlaying }
        if wasPlaying {
            pipeline.setState(GST_STATE_PAUSED)
            state.withLock { $0.transport = .paused(info, .unknown) }
        }
        if !info.isSeekable && itemTime != .zero { throw .notSeekable }
        tdm_gst_error_trap_reset(handles.trap)
        // A streamed item's preroll where its download does not reach waits on the network: that wait is a stall's,
        // not a preroll's, and counted as one it made every later start (and a late join, which allows a preroll
        // per start it missed) wait as long: a streamer once planned its join 30 s ahead and sat out the rest.
        let local = hasFetched(itemTime, duration: info.duration)
        let started = SystemMonotonicClock().now
        guard pipeline.seek(to: itemTime.nanoseconds, rate: rate) else {
            throw .engineFailure("the pipeline refused a seek to \(itemTime.seconds) s at rate \(rate)")
        }
        let done = tdm_gst_wait_async_done(pipeline, handles.trap, configuration.prerollTimeout.nanoseconds)
        guard done == 1 else {
            let location = bus.location
            throw trappedError(source: nil, location: location)
                ?? .engineFailure(done == -1 ? "preroll after seeking timed out" : "preroll after seeking failed")
        }
        if local { recordPreroll(SystemMonotonicClock().now - started) }
        let position = pipeline.queryPosition().map { ItemTime(nanoseconds: $0) }
        state.withLock {
            $0.transport = .paused(info, .prerolled(Prepared(itemTime: itemTime, rate: rate), at: position ?? itemTime))
        }
    }

    func playOnQueue(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant, rate: Double) throws(PlaybackError) {
        try ensureOpen()
        let info = try validate(itemTime: itemTime, rate: rate)
        // Already playing a line this one continues (a rate change): switch without stopping, when the pipeline can.
        if switchRateInPlace(from: itemTime, atSessionTime: sessionTime, rate: rate) { return }
        let pipeline = handles.pipeline
        let start = try prerolledForStart(from: itemTime, atSessionTime: sessionTime, rate: rate)
        let latency = pipeline.queryLatency()
        gst_pipeline_set_latency(pipeline.asPipeline, latency)
        // After the flushing seek the running time of `start.itemTime` is 0; at rate r it advances as
        // (item − X) / r. Sinks render running time t when the clock reads base + t + latency.
        // The GstClock reads session time plus the lead (see `clockLead`). The lead is read, and the player
        // marked playing, under one lock: from then on calibration changes slew instead of adding lead.
        let base: Int64 = state.withLock {
            let base = (start.sessionTime + $0.clockLead).nanoseconds - Int64(latency)
            guard base >= 0 else { return base }
            $0.transport = .playing(info)
            $0.playingRate = rate
            $0.playingLine = ItemProjection(from: start.sessionTime, to: start.itemTime, rate: rate)
            $0.runningTimeOrigin = start.sessionTime
            $0.pipelineLatency = TimeSpan(nanoseconds: Int64(latency))
            return base
        }
        guard base >= 0 else {
            throw .engineFailure("session time \(start.sessionTime.nanoseconds) ns is before the clock's origin")
        }
        gst_element_set_start_time(pipeline, GstClockTime.max)  // GST_CLOCK_TIME_NONE
        gst_element_set_base_time(pipeline, GstClockTime(base))
        guard pipeline.setState(GST_STATE_PLAYING) else {
            state.withLock { $0.transport = .paused(info, .unknown) }
            throw trappedError(source: nil, location: bus.location) ?? .engineFailure("the pipeline refused to play")
        }
    }

    func pauseOnQueue() throws(PlaybackError) -> ItemTime {
        try ensureOpen()
        guard let info = state.withLock({ $0.transport.info }) else { throw .notLoaded }
        let pipeline = handles.pipeline
        if let pausedAt = state.withLock({ $0.transport.heldItemTime }) { return pausedAt }
        pipeline.setState(GST_STATE_PAUSED)
        let position = pipeline.queryPosition()
        _ = tdm_gst_wait_async_done(pipeline, nil, TimeSpan.seconds(2).nanoseconds)
        let held = ItemTime(nanoseconds: max(0, position ?? pipeline.queryPosition() ?? 0))
        state.withLock { $0.transport = .paused(info, .held(at: held)) }
        return held
    }

    /// Prerolls at `itemTime` unless already there, then checks that the start is still ahead. The player never
    /// moves a start: one it cannot make is refused with `startMissed`, and the coordinator (the one place that
    /// decides where a late peer joins) plans a later one on the same line. A start up to `lateStartAllowance`
    /// late is made on its line all the same: the base time is in the past, and the sinks leave out what is
    /// already late (the video sink drops or shows at once frames due before it started; the audio ring buffer
    /// skips samples whose time has gone), so the peer renders on the line from the next frame.
    func prerolledForStart(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant,
                           rate: Double) throws(PlaybackError) -> (itemTime: ItemTime, sessionTime: SessionInstant) {
        if state.withLock({ $0.transport.prepared }) != Prepared(itemTime: itemTime, rate: rate) {
            try prepareOnQueue(at: itemTime, rate: rate)
        }
        let late = sessionTimeNow() + startMargin - sessionTime
        guard late <= Self.lateStartAllowance else { throw .startMissed(lateBy: late) }
        return (itemTime, sessionTime)
    }

    /// How late a start may come and still be made on its line.
    static let lateStartAllowance = TimeSpan.milliseconds(40)

    /// How far ahead of the clock a start must still be once prerolled: setting the base time and going to
    /// PLAYING takes a moment.
    var startMargin: TimeSpan { .milliseconds(5) }

    /// The loaded item's info, once `itemTime` and `rate` are known to fit it.
    func validate(itemTime: ItemTime, rate: Double) throws(PlaybackError) -> MediaInfo {
        guard let info = state.withLock({ $0.transport.info }) else { throw .notLoaded }
        guard rate.isFinite, rate > 0 else { throw .invalidRate(rate) }
        if itemTime < .zero { throw .seekOutOfRange(itemTime: itemTime, duration: info.duration) }
        if let duration = info.duration, itemTime > .zero + duration {
            throw .seekOutOfRange(itemTime: itemTime, duration: duration)
        }
        return info
    }
}
