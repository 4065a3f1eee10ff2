import CTandemGStreamer
import CTandemGStreamerShim
import Dispatch
import Foundation
import Logging
import TandemCore

/// The real `PlaybackEngine`: a GStreamer `playbin` on a clock the engine owns and calibrates to session time.
///
/// Threading: every GStreamer call that can block (state changes, seeks, waiting for preroll) runs on the
/// player's own serial dispatch queue and reaches async callers through continuations; the bus is served by a
/// dedicated thread that turns messages into `events`. Nothing here blocks Swift's cooperative pool.
///
/// Sendable: all stored properties are immutable references to Sendable values; the mutable state sits in a
/// lock (`LockedState`), and the GStreamer objects in `GstHandles`, whose pointers are only used through
/// thread-safe GStreamer API (see there).
public final class GStreamerPlayer: PlaybackEngine {
    /// Where a stream is rendered.
    public enum Sink: Sendable, Hashable {
        /// Real output when a display / sound server exists, otherwise `headless`.
        case automatic
        /// `fakesink sync=true`: renders on time into nothing (tests, benchmarks, servers).
        case headless
        /// Any gst-launch style bin description, e.g. `"pulsesink device=alsa_output.usb-…"`.
        case description(String)
    }

    /// How a player is built.
    public struct Configuration: Sendable {
        public var videoSink: Sink
        public var audioSink: Sink
        /// Audio sinks resynchronise when they drift further than this from the clock (ns). GStreamer's default
        /// is 40 ms, far too loose for watching together.
        public var audioDriftTolerance: Int64
        /// Audio sinks realign timestamps that jump by more than this (ns); GStreamer's default is 40 ms.
        public var audioAlignmentThreshold: Int64
        /// Calibration errors up to this size are slewed while playing; larger ones step (ns).
        public var stepThreshold: Int64
        /// How long a slew takes to absorb an error (ns).
        public var slewDuration: Int64
        /// Render records kept between drains.
        public var renderProbeCapacity: Int
        /// How long loading or preparing may take before it fails (ns).
        public var prerollTimeout: Int64
        /// Sinks sleep until this long before each buffer's release time and spin the rest (ns), because timer
        /// wake-ups can be 0.1–1 ms late (virtual machines especially). Costs about this much CPU per buffer;
        /// 0 leaves waiting to GStreamer alone.
        public var preciseWait: Int64

        public init(videoSink: Sink = .automatic, audioSink: Sink = .automatic,
                    audioDriftTolerance: Int64 = Nanos.milliseconds(5),
                    audioAlignmentThreshold: Int64 = Nanos.milliseconds(10),
                    stepThreshold: Int64 = Nanos.milliseconds(20), slewDuration: Int64 = Nanos.seconds(1),
                    renderProbeCapacity: Int = 8192, prerollTimeout: Int64 = Nanos.seconds(20),
                    preciseWait: Int64 = 0) {
            self.videoSink = videoSink
            self.audioSink = audioSink
            self.audioDriftTolerance = audioDriftTolerance
            self.audioAlignmentThreshold = audioAlignmentThreshold
            self.stepThreshold = stepThreshold
            self.slewDuration = slewDuration
            self.renderProbeCapacity = renderProbeCapacity
            self.prerollTimeout = prerollTimeout
            self.preciseWait = preciseWait
        }

        /// Both streams rendered by `fakesink sync=true`.
        public static var headless: Configuration { Configuration(videoSink: .headless, audioSink: .headless) }
    }

    public let events: AsyncStream<PlaybackEngineEvent>
    /// What the sinks rendered and when (true CLOCK_MONOTONIC): ground truth for tests and benchmarks.
    public let renderProbe: RenderProbe
    /// True CLOCK_MONOTONIC → this peer's local time (identity unless a benchmark skews the peer's view).
    public let localTimeModel: ClockMapping
    public let configuration: Configuration

    private let handles: GstHandles
    private let state: LockedState<PlayerState>
    private let queue: DispatchQueue
    private let bus: BusPump
    private let logger: Logger

    /// Builds the pipeline (nothing loaded yet).
    ///
    /// - Parameters:
    ///   - localTimeModel: maps true CLOCK_MONOTONIC to this peer's local time. Identity for real use;
    ///     benchmarks inject an offset and drift here so the peer's view of time is wrong the way a real
    ///     machine's is, while the render probe keeps measuring true time.
    /// - Throws: `PlaybackError.missingPlugin` when a sink element does not exist,
    ///   `.engineFailure` when GStreamer cannot start.
    public init(configuration: Configuration = Configuration(), localTimeModel: ClockMapping = .identity,
                logger: Logger = Logger(label: "tandem.media.player")) throws(PlaybackError) {
        try GStreamer.require()
        self.configuration = configuration
        self.localTimeModel = localTimeModel
        self.logger = logger
        guard let playbin = tdm_gst_playbin_new(nil) else {
            throw .missingPlugin(detail: "playbin", debianPackage: "gstreamer1.0-plugins-base")
        }
        let videoSink: UnsafeMutablePointer<GstElement>
        let audioSink: UnsafeMutablePointer<GstElement>
        do {
            videoSink = try Self.makeSink(configuration.videoSink, kind: .video)
        } catch {
            tdm_gst_unref(playbin)
            throw error
        }
        do {
            audioSink = try Self.makeSink(configuration.audioSink, kind: .audio)
        } catch {
            tdm_gst_unref(videoSink)
            tdm_gst_unref(playbin)
            throw error
        }
        tdm_gst_tune_audio_sinks(audioSink, configuration.audioDriftTolerance / 1000,
                                 UInt64(max(0, configuration.audioAlignmentThreshold)))
        tdm_gst_set_object(playbin, "video-sink", videoSink)
        tdm_gst_set_object(playbin, "audio-sink", audioSink)

        let probe = RenderProbe(capacity: configuration.renderProbeCapacity)
        var attached = Set<RenderRecord.StreamKind>()
        if tdm_gst_render_probe_attach(probe.pointer, videoSink, Int32(TDM_GST_KIND_VIDEO)) > 0 { attached.insert(.video) }
        if tdm_gst_render_probe_attach(probe.pointer, audioSink, Int32(TDM_GST_KIND_AUDIO)) > 0 { attached.insert(.audio) }
        renderProbe = probe

        let clock = tdm_gst_clock_new_monotonic(UInt64(max(0, configuration.preciseWait)))!
        let now = tdm_gst_monotonic_now()
        let calibration = localTimeModel.reanchored(atLocal: now)
        Self.apply(calibration, lead: 0, to: clock)
        tdm_gst_pipeline_use_clock(playbin, clock)
        let trap = tdm_gst_install_error_trap(playbin)!

        handles = GstHandles(pipeline: playbin, videoSink: videoSink, audioSink: audioSink, trap: trap)
        state = LockedState(PlayerState(clock: ClockHandle(clock), calibration: calibration,
                                        probeAttached: attached))
        tdm_gst_unref(clock)  // the handle and the pipeline hold their own references
        queue = DispatchQueue(label: "tandem.media.player")
        let (stream, continuation) = AsyncStream<PlaybackEngineEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        events = stream
        bus = BusPump(pipeline: playbin, continuation: continuation, logger: logger)
        bus.start()
    }

    deinit {
        bus.stop()
        teardown()
    }

    // MARK: - PlaybackEngine

    public func load(_ location: String) async throws(PlaybackError) -> MediaInfo {
        let source = try MediaLocation(location)
        return try await onQueue { () throws(PlaybackError) -> MediaInfo in try self.loadOnQueue(source) }
    }

    public func prepare(at itemTime: Int64, rate: Double) async throws(PlaybackError) {
        try await onQueue { () throws(PlaybackError) in try self.prepareOnQueue(at: itemTime, rate: rate) }
    }

    public func play(from itemTime: Int64, atSessionTime sessionTime: Int64, rate: Double) async throws(PlaybackError) {
        try await onQueue { () throws(PlaybackError) in
            try self.playOnQueue(from: itemTime, atSessionTime: sessionTime, rate: rate)
        }
    }

    @discardableResult
    public func pause() async throws(PlaybackError) -> Int64 {
        try await onQueue { () throws(PlaybackError) -> Int64 in try self.pauseOnQueue() }
    }

    public func currentItemTime() -> Int64? {
        let (loaded, paused) = state.withLock { ($0.info != nil, $0.pausedAt) }
        guard loaded else { return nil }
        if let paused { return paused }
        let position = tdm_gst_query_position(handles.pipeline)
        return position >= 0 ? position : nil
    }

    public func setClockMapping(_ mapping: ClockMapping) {
        let target = mapping.composed(after: localTimeModel)
        let now = tdm_gst_monotonic_now()
        let work: ClockWork = state.withLock { state in
            state.sessionMapping = mapping
            state.calibrationGeneration += 1
            let plan = ClockCalibrationPlan.plan(current: state.calibration, target: target, now: now,
                                                 isPlaying: state.isPlaying,
                                                 stepThreshold: configuration.stepThreshold,
                                                 slewDuration: configuration.slewDuration)
            switch plan {
            case .step(let next):
                let backwards = state.calibration.sessionTime(atLocal: now) - next.sessionTime(atLocal: now)
                state.calibration = next
                if !state.isPlaying {
                    // Not playing: nothing waits on the clock, and the next start sets the base time from the
                    // lead. A backward step becomes lead (the GstClock keeps reading on, never backwards); a
                    // forward step uses up lead first. No clock swap, so nothing can race a start.
                    state.clockLead = max(0, state.clockLead + backwards)
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
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(duration))) {
                self.state.withLock { state in
                    guard state.calibrationGeneration == generation else { return }
                    state.calibration = final
                    Self.apply(final, lead: state.clockLead, to: state.clock.clock)
                }
            }
        }
    }

    /// Backward calibration steps up to this size (ns) are applied to the running clock, which holds still for
    /// that long; larger ones get a fresh clock.
    static let largestHeldStep: Int64 = 2_000_000

    public var prerollEstimate: Int64 {
        state.withLock { state in
            guard !state.prerollSamples.isEmpty else { return Nanos.milliseconds(150) }
            // The slowest recent preroll plus a margin: a start others schedule must be one this peer can make.
            return state.prerollSamples.max()! * 3 / 2 + Nanos.milliseconds(20)
        }
    }

    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.bus.stop()
                self.state.withLock { $0.closed = true }
                _ = tdm_gst_set_state(self.handles.pipeline, Int32(GST_STATE_NULL.rawValue))
                continuation.resume()
            }
        }
    }

    // MARK: - Extras beyond the protocol

    /// The engine clock's reading now (session time), ns.
    public func sessionTimeNow() -> Int64 {
        let calibration = state.withLock { $0.calibration }
        return calibration.sessionTime(atLocal: tdm_gst_monotonic_now())
    }

    /// What the pipeline's GstClock itself reads now, less its lead: the session time the sinks wait on (ns).
    public func pipelineClockNow() -> Int64 {
        let (clock, lead) = state.withLock { ($0.clock, $0.clockLead) }
        return Int64(bitPattern: tdm_gst_clock_now(clock.clock)) - lead
    }

    /// The CLOCK_MONOTONIC time (ns) at which the engine clock reads `sessionTime`, with the current calibration.
    public func monotonicTime(atSessionTime sessionTime: Int64) -> Int64 {
        state.withLock { $0.calibration }.localTime(atSession: sessionTime)
    }

    /// The current local → session mapping (as last given to `setClockMapping`).
    public var clockMapping: ClockMapping { state.withLock { $0.sessionMapping } }

    /// What the last successful `load` reported.
    public var mediaInfo: MediaInfo? { state.withLock { $0.info } }

    // MARK: - Work on the player queue

    private func loadOnQueue(_ source: MediaLocation) throws(PlaybackError) -> MediaInfo {
        try ensureOpen()
        let pipeline = handles.pipeline
        bus.setContext(location: source.display, isFile: source.isFile, loading: true)
        defer { bus.setContext(location: source.display, isFile: source.isFile, loading: false) }
        bus.emit(.loading(progress: 0))

        _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_READY.rawValue))
        _ = tdm_gst_wait_async_done(pipeline, nil, Nanos.seconds(5))
        state.withLock {
            $0.info = nil
            $0.prepared = nil
            $0.pausedAt = nil
            $0.isPlaying = false
        }
        tdm_gst_error_trap_reset(handles.trap)
        tdm_gst_set_string(pipeline, "uri", source.uri)
        let started = tdm_gst_monotonic_now()
        _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_PAUSED.rawValue))
        let done = tdm_gst_wait_async_done(pipeline, handles.trap, configuration.prerollTimeout)
        if done != 1 {
            let error = trappedError(source: source)
                ?? (done == -1
                    ? (source.isFile ? .truncatedOrCorrupt(path: source.display, detail: "preroll timed out")
                        : .unreachable(uri: source.display, detail: "no data within the preroll timeout"))
                    : .engineFailure("the pipeline refused to preroll \(source.display)"))
            _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_NULL.rawValue))
            throw error
        }
        let hasVideo = tdm_gst_get_int(pipeline, "n-video") > 0
        let hasAudio = tdm_gst_get_int(pipeline, "n-audio") > 0
        let gotData = tdm_gst_sinks_prerolled(handles.videoSink) != 0 || tdm_gst_sinks_prerolled(handles.audioSink) != 0
        guard (hasVideo || hasAudio) && gotData else {
            _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_NULL.rawValue))
            if source.isFile {
                throw .truncatedOrCorrupt(path: source.display, detail: "no audio or video could be read from it")
            }
            throw .notMedia(path: source.display)
        }
        recordPreroll(tdm_gst_monotonic_now() - started)
        attachLateSinks()
        let duration = tdm_gst_query_duration(pipeline)
        let info = MediaInfo(
            duration: duration >= 0 ? duration : nil,
            isSeekable: tdm_gst_query_seekable(pipeline) != 0,
            hasVideo: hasVideo, hasAudio: hasAudio,
            contentID: source.isFile ? GStreamer.take(tdm_gst_file_fingerprint(source.path)) : nil,
            title: GStreamer.take(tdm_gst_error_trap_title(handles.trap)))
        state.withLock {
            $0.info = info
            $0.prepared = Prepared(itemTime: 0, rate: 1)
            $0.pausedAt = 0
        }
        logger.debug("loaded", metadata: ["location": "\(source.display)", "duration": "\(duration)"])
        bus.emit(.ready(info))
        return info
    }

    private func prepareOnQueue(at itemTime: Int64, rate: Double) throws(PlaybackError) {
        try ensureOpen()
        let info = try validate(itemTime: itemTime, rate: rate)
        let pipeline = handles.pipeline
        let wasPlaying = state.withLock { $0.isPlaying }
        if wasPlaying {
            _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_PAUSED.rawValue))
            state.withLock { $0.isPlaying = false }
        }
        if !info.isSeekable && itemTime != 0 { throw .notSeekable }
        tdm_gst_error_trap_reset(handles.trap)
        let started = tdm_gst_monotonic_now()
        guard tdm_gst_seek(pipeline, rate, itemTime) != 0 else {
            throw .engineFailure("the pipeline refused a seek to \(Nanos.toSeconds(itemTime)) s at rate \(rate)")
        }
        let done = tdm_gst_wait_async_done(pipeline, handles.trap, configuration.prerollTimeout)
        guard done == 1 else {
            let location = bus.location
            throw trappedError(source: nil, location: location)
                ?? .engineFailure(done == -1 ? "preroll after seeking timed out" : "preroll after seeking failed")
        }
        recordPreroll(tdm_gst_monotonic_now() - started)
        let position = tdm_gst_query_position(pipeline)
        state.withLock {
            $0.prepared = Prepared(itemTime: itemTime, rate: rate)
            $0.pausedAt = position >= 0 ? position : itemTime
        }
    }

    private func playOnQueue(from itemTime: Int64, atSessionTime sessionTime: Int64, rate: Double) throws(PlaybackError) {
        try ensureOpen()
        _ = try validate(itemTime: itemTime, rate: rate)
        let pipeline = handles.pipeline
        let margin = Nanos.milliseconds(5)
        var startItem = itemTime
        var startSession = sessionTime
        for attempt in 0..<4 {
            let prepared = state.withLock { $0.isPlaying ? nil : $0.prepared }
            let now = sessionTimeNow()
            if prepared == Prepared(itemTime: startItem, rate: rate), startSession >= now + margin {
                break
            }
            if startSession >= now + prerollEstimate {
                try prepareOnQueue(at: startItem, rate: rate)
                continue
            }
            // Too late to start at `sessionTime`: join the timeline a little ahead, where this peer can make it.
            let lead = prerollEstimate * Int64(attempt + 1) + Nanos.milliseconds(30)
            startSession = max(sessionTime, now + lead)
            startItem = itemTime + Int64((Double(startSession - sessionTime) * rate).rounded())
            if let duration = state.withLock({ $0.info?.duration }), startItem >= duration {
                throw .seekOutOfRange(itemTime: startItem, duration: duration)
            }
            try prepareOnQueue(at: startItem, rate: rate)
        }
        let now = sessionTimeNow()
        guard state.withLock({ $0.prepared }) == Prepared(itemTime: startItem, rate: rate), startSession >= now else {
            throw .engineFailure("could not preroll in time to start at session time \(sessionTime)")
        }
        let latency = tdm_gst_query_latency(pipeline)
        tdm_gst_pipeline_set_latency(pipeline, latency)
        // After the flushing seek the running time of `startItem` is 0; at rate r it advances as (item − X) / r.
        // Sinks render running time t when the clock reads base + t + latency.
        // The GstClock reads session time plus the lead (see `clockLead`). The lead is read, and the player
        // marked playing, under one lock: from then on calibration changes slew instead of adding lead.
        let base: Int64 = state.withLock {
            let base = startSession + $0.clockLead - Int64(latency)
            guard base >= 0 else { return base }
            $0.isPlaying = true
            $0.prepared = nil
            $0.pausedAt = nil
            return base
        }
        guard base >= 0 else { throw .engineFailure("session time \(startSession) is before the clock's origin") }
        gst_element_set_start_time(pipeline, GstClockTime.max)  // GST_CLOCK_TIME_NONE
        gst_element_set_base_time(pipeline, GstClockTime(base))
        guard tdm_gst_set_state(pipeline, Int32(GST_STATE_PLAYING.rawValue)) != 0 else {
            state.withLock { $0.isPlaying = false }
            throw trappedError(source: nil, location: bus.location) ?? .engineFailure("the pipeline refused to play")
        }
    }

    private func pauseOnQueue() throws(PlaybackError) -> Int64 {
        try ensureOpen()
        guard state.withLock({ $0.info != nil }) else { throw .notLoaded }
        let pipeline = handles.pipeline
        if let pausedAt = state.withLock({ $0.isPlaying ? nil : $0.pausedAt }) { return pausedAt }
        _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_PAUSED.rawValue))
        let position = tdm_gst_query_position(pipeline)
        _ = tdm_gst_wait_async_done(pipeline, nil, Nanos.seconds(2))
        let held = max(0, position >= 0 ? position : tdm_gst_query_position(pipeline))
        state.withLock {
            $0.isPlaying = false
            $0.prepared = nil
            $0.pausedAt = held
        }
        return held
    }

    private func replaceClockOnQueue(_ calibration: ClockMapping) {
        guard !state.withLock({ $0.closed }) else { return }
        let pipeline = handles.pipeline
        let fresh = tdm_gst_clock_new_monotonic(UInt64(max(0, configuration.preciseWait)))!
        let (current, lead) = state.withLock { ($0.calibration, $0.clockLead) }
        Self.apply(current, lead: lead, to: fresh)
        // Whether the pipeline plays is read here, on the queue, after any start queued before: a playing
        // pipeline only takes a new clock on its way to PLAYING, so it is cycled through PAUSED.
        let playing = state.withLock { $0.isPlaying }
        if playing { _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_PAUSED.rawValue)) }
        tdm_gst_pipeline_use_clock(pipeline, fresh)
        state.withLock { $0.clock = ClockHandle(fresh) }
        tdm_gst_unref(fresh)
        if playing {
            // start time stays NONE, so the base time set by `play` keeps its meaning on the new clock.
            _ = tdm_gst_set_state(pipeline, Int32(GST_STATE_PLAYING.rawValue))
        }
        logger.debug("replaced the engine clock after a backward step", metadata: ["calibration": "\(calibration)"])
    }

    // MARK: - Helpers

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        let result: Result<T, PlaybackError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(PlaybackError) -> T in try body() }) }
        }
        return try result.get()
    }

    private func ensureOpen() throws(PlaybackError) {
        if state.withLock({ $0.closed }) { throw .engineFailure("the player is closed") }
    }

    private func validate(itemTime: Int64, rate: Double) throws(PlaybackError) -> MediaInfo {
        guard let info = state.withLock({ $0.info }) else { throw .notLoaded }
        guard rate.isFinite, rate > 0 else { throw .invalidRate(rate) }
        if itemTime < 0 { throw .seekOutOfRange(itemTime: itemTime, duration: info.duration) }
        if let duration = info.duration, itemTime > duration {
            throw .seekOutOfRange(itemTime: itemTime, duration: duration)
        }
        return info
    }

    private func trappedError(source: MediaLocation?, location: (String, Bool)? = nil) -> PlaybackError? {
        var info = tdm_gst_message_info()
        guard tdm_gst_error_trap_get(handles.trap, &info) != 0 else {
            tdm_gst_message_info_clear(&info)
            return nil
        }
        let message = GStreamerMessage(consuming: &info)
        let (display, isFile) = source.map { ($0.display, $0.isFile) } ?? location ?? ("the item", true)
        return message.playbackError(location: display, isFile: isFile)
    }

    private func recordPreroll(_ duration: Int64) {
        state.withLock {
            $0.prerollSamples.append(duration)
            if $0.prerollSamples.count > 8 { $0.prerollSamples.removeFirst() }
        }
    }

    /// Sinks such as autovideosink create their real sink only when they start; attach the probe then.
    private func attachLateSinks() {
        let attached = state.withLock { $0.probeAttached }
        var added = attached
        if !attached.contains(.video),
           tdm_gst_render_probe_attach(renderProbe.pointer, handles.videoSink, Int32(TDM_GST_KIND_VIDEO)) > 0 {
            added.insert(.video)
        }
        if !attached.contains(.audio),
           tdm_gst_render_probe_attach(renderProbe.pointer, handles.audioSink, Int32(TDM_GST_KIND_AUDIO)) > 0 {
            added.insert(.audio)
        }
        state.withLock { $0.probeAttached = added }
    }

    private func teardown() {
        _ = tdm_gst_set_state(handles.pipeline, Int32(GST_STATE_NULL.rawValue))
        state.withLock { $0.clock = ClockHandle(nil) }
        tdm_gst_unref(handles.videoSink)
        tdm_gst_unref(handles.audioSink)
        tdm_gst_unref(handles.pipeline)
    }

    /// Calibrates `clock` to read `calibration`'s session time plus `lead`.
    private static func apply(_ calibration: ClockMapping, lead: Int64, to clock: UnsafeMutablePointer<GstClock>?) {
        guard let clock else { return }
        // GstClockTime is unsigned: keep both anchors non-negative by re-anchoring where needed.
        var mapping = ClockMapping(localAnchor: calibration.localAnchor, sessionAnchor: calibration.sessionAnchor &+ lead,
                                   rate: calibration.rate)
        if mapping.localAnchor < 0 || mapping.sessionAnchor < 0 {
            mapping = mapping.reanchored(atLocal: max(tdm_gst_monotonic_now(), 0))
        }
        tdm_gst_clock_calibrate(clock, UInt64(max(0, mapping.localAnchor)), UInt64(max(0, mapping.sessionAnchor)),
                                mapping.rate)
    }

    static func makeSink(_ sink: Sink, kind: RenderRecord.StreamKind) throws(PlaybackError) -> UnsafeMutablePointer<GstElement> {
        let description: String
        switch sink {
        case .headless:
            description = "fakesink sync=true"
        case .description(let text):
            description = text
        case .automatic:
            let environment = ProcessInfo.processInfo.environment
            switch kind {
            case .video:
                let display = environment["DISPLAY"].map { !$0.isEmpty } ?? false
                    || environment["WAYLAND_DISPLAY"].map { !$0.isEmpty } ?? false
                description = display ? "autovideosink" : "fakesink sync=true"
            case .audio:
                var sound = environment["PULSE_SERVER"].map { !$0.isEmpty } ?? false
                if !sound, let runtime = environment["XDG_RUNTIME_DIR"] {
                    sound = FileManager.default.fileExists(atPath: runtime + "/pulse/native")
                }
                description = sound ? "autoaudiosink" : "fakesink sync=true"
            }
        }
        var message: UnsafeMutablePointer<CChar>?
        var missing: Int32 = 0
        guard let element = tdm_gst_bin_from_description(description, &message, &missing) else {
            let text = GStreamer.take(message) ?? "cannot build '\(description)'"
            if missing != 0 {
                throw .missingPlugin(detail: "no GStreamer element '\(text)' (\(kind) sink '\(description)')",
                                     debianPackage: GStreamer.debianPackage(providing: text))
            }
            throw .engineFailure("invalid \(kind) sink '\(description)': \(text)")
        }
        return element
    }
}

// MARK: - Supporting types

/// The GStreamer objects of one player.
///
/// `@unchecked Sendable`: the pointers never change after init, and they are only used through GStreamer API that
/// is thread-safe (state changes, queries and property access take the objects' own locks); blocking calls are
/// funnelled through the player's serial queue.
private struct GstHandles: @unchecked Sendable {
    let pipeline: UnsafeMutablePointer<GstElement>
    let videoSink: UnsafeMutablePointer<GstElement>
    let audioSink: UnsafeMutablePointer<GstElement>
    let trap: OpaquePointer
}

/// A reference to the engine's current clock (the pipeline keeps its own reference too).
///
/// `@unchecked Sendable`: GstClock is a thread-safe GstObject; calibration calls take its lock.
private final class ClockHandle: @unchecked Sendable {
    let clock: UnsafeMutablePointer<GstClock>?
    init(_ clock: UnsafeMutablePointer<GstClock>?) {
        self.clock = clock
        if let clock { gst_object_ref(UnsafeMutableRawPointer(clock)) }
    }
    deinit { tdm_gst_unref(clock) }
}

private struct Prepared: Equatable, Sendable {
    var itemTime: Int64
    var rate: Double
}

private enum ClockWork {
    case none
    case replaceClock(ClockMapping)
    case finishSlew(ClockMapping, after: Int64, generation: Int)
}

private struct PlayerState: Sendable {
    var clock: ClockHandle
    /// CLOCK_MONOTONIC → engine clock reading, as applied right now.
    var calibration: ClockMapping
    /// How far the GstClock reads ahead of session time (ns, never negative). GstClocks never read backwards,
    /// so a backward calibration step while not playing raises the lead instead of moving the clock back; a
    /// start sets its base time `lead` later to match. Constant while playing.
    var clockLead: Int64 = 0
    var calibrationGeneration = 0
    var sessionMapping: ClockMapping = .identity
    var info: MediaInfo?
    /// Prerolled (paused) at this item time and rate with running time 0 there.
    var prepared: Prepared?
    var pausedAt: Int64?
    var isPlaying = false
    var prerollSamples: [Int64] = []
    var probeAttached: Set<RenderRecord.StreamKind>
    var closed = false

    init(clock: ClockHandle, calibration: ClockMapping, probeAttached: Set<RenderRecord.StreamKind>) {
        self.clock = clock
        self.calibration = calibration
        self.probeAttached = probeAttached
    }
}

/// A value protected by a lock.
///
/// `@unchecked Sendable`: every access to `value` happens inside `withLock`, under `lock`.
final class LockedState<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A file path or URI, checked before GStreamer sees it.
struct MediaLocation: Sendable {
    var uri: String
    var display: String
    var path: String
    var isFile: Bool

    init(_ location: String) throws(PlaybackError) {
        if let schemeEnd = location.range(of: "://") {
            let scheme = location[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "http", "https":
                self.init(uri: location, display: location, path: "", isFile: false)
                return
            case "file":
                guard let url = URL(string: location), url.isFileURL else { throw .noSuchFile(path: location) }
                try self.init(path: url.path)
                return
            default:
                throw .unsupportedScheme(scheme)
            }
        }
        guard !location.isEmpty else { throw .noSuchFile(path: location) }
        try self.init(path: location)
    }

    private init(uri: String, display: String, path: String, isFile: Bool) {
        self.uri = uri
        self.display = display
        self.path = path
        self.isFile = isFile
    }

    private init(path: String) throws(PlaybackError) {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) else {
            throw .noSuchFile(path: path)
        }
        if isDirectory.boolValue { throw .isDirectory(path: path) }
        guard FileManager.default.isReadableFile(atPath: absolute) else {
            throw .unreachable(uri: path, detail: "permission denied")
        }
        self.init(uri: URL(fileURLWithPath: absolute).absoluteString, display: path, path: absolute, isFile: true)
    }
}
