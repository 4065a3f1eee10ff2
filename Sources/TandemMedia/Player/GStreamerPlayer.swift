import CTandemGStreamer
import CTandemGStreamerShim
import Dispatch
import Logging
import TandemCore

/// The real `PlaybackEngine`: a GStreamer `playbin` on a clock the engine owns and calibrates to session time.
///
/// Threading: every GStreamer call that can block (state changes, seeks, waiting for preroll) runs on the
/// player's own serial dispatch queue and reaches async callers through continuations; the bus is served by a
/// dedicated thread that turns messages into `events`. Nothing here blocks Swift's cooperative pool.
///
/// Sendable: all stored properties are immutable references to Sendable values; the mutable state sits in a
/// lock (`Locked<PlayerState>`), and the GStreamer objects in `GstHandles`, whose pointers are only used
/// through thread-safe GStreamer API (see there).
///
/// The parts live in files of their own: configuration, the engine clock (`+Clock`), loading (`+Loading`),
/// prepare / play / pause (`+Transport`), the sinks (`+Sinks`), the video window's extras (`+Window`) and the X
/// window the player owns for its title and full screen (`+VideoWindow`).
public final class GStreamerPlayer: PlaybackEngine {
    public let events: AsyncStream<PlaybackEngineEvent>
    /// What the sinks rendered and when (true CLOCK_MONOTONIC): ground truth for tests and benchmarks.
    public let renderProbe: RenderProbe
    /// True CLOCK_MONOTONIC → this peer's local time (identity unless a benchmark skews the peer's view).
    public let localTimeModel: ClockMapping
    public let configuration: Configuration
    /// What the player changed in the sinks it was given, in words for the person (once): a sink that did not
    /// wait on the clock now does (see `syncToClock`). Empty when nothing needed changing.
    public let sinkNotices: [String]

    let handles: GstHandles
    let window: PlayerWindow
    let videoWindow: VideoWindow
    let state: Locked<PlayerState>
    let queue: DispatchQueue
    let bus: BusPump
    /// Ends a streamed item's stall once it fetches fast enough again.
    let stallWatch: StallWatch
    let logger: Logger

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
        let videoDescription = Self.sinkDescription(configuration.videoSink, kind: .video)
        let audioDescription = Self.sinkDescription(configuration.audioSink, kind: .audio)
        do {
            videoSink = try Self.makeSink(videoDescription, kind: .video)
        } catch {
            gst_object_unref(playbin)
            throw error
        }
        do {
            audioSink = try Self.makeSink(audioDescription, kind: .audio)
        } catch {
            gst_object_unref(videoSink)
            gst_object_unref(playbin)
            throw error
        }
        sinkNotices = [Self.syncToClock(videoSink, kind: .video, description: videoDescription),
                       Self.syncToClock(audioSink, kind: .audio, description: audioDescription)].compactMap { $0 }
        for notice in sinkNotices { logger.notice("\(notice)") }
        tdm_gst_tune_audio_sinks(audioSink, configuration.audioDriftTolerance.nanoseconds / 1000,
                                 UInt64(max(0, configuration.audioAlignmentThreshold.nanoseconds)))
        tdm_gst_set_object(playbin, "video-sink", videoSink)
        tdm_gst_set_object(playbin, "audio-sink", audioSink)

        let probe = RenderProbe(capacity: configuration.renderProbeCapacity)
        var attached = Set<RenderRecord.StreamKind>()
        if Self.attachProbe(probe, to: videoSink, kind: .video) { attached.insert(.video) }
        if Self.attachProbe(probe, to: audioSink, kind: .audio) { attached.insert(.audio) }
        renderProbe = probe

        let clock = tdm_gst_clock_new_monotonic(UInt64(max(0, configuration.preciseWait.nanoseconds)))!
        let now = SystemMonotonicClock().now
        let calibration = localTimeModel.reanchored(atLocal: now)
        Self.apply(calibration, lead: .zero, to: clock)
        gst_pipeline_use_clock(playbin.asPipeline, clock)
        let trap = tdm_gst_install_error_trap(playbin)!
        videoWindow = VideoWindow(pipeline: playbin, videoSink: videoSink, title: configuration.windowTitle ?? "Tandem",
                                  watching: VideoWindow.mayAsk(configuration.videoSink))
        window = PlayerWindow(playbin: playbin, overlay: configuration.overlay,
                              subtitleFont: configuration.subtitleFile == nil ? nil : configuration.subtitleFont)

        handles = GstHandles(pipeline: playbin, videoSink: videoSink, audioSink: audioSink, trap: trap)
        state = Locked(PlayerState(clock: ClockHandle(clock), calibration: calibration,
                                        probeAttached: attached))
        gst_object_unref(clock)  // the handle and the pipeline hold their own references
        queue = DispatchQueue(label: "tandem.media.player")
        let (stream, continuation) = AsyncStream<PlaybackEngineEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        events = stream
        bus = BusPump(pipeline: playbin, continuation: continuation, logger: logger)
        stallWatch = StallWatch(bus: bus)
        bus.start()
        stallWatch.start { [weak self] in
            guard let self, let uri = self.loadedURI, !uri.hasPrefix("file:"), let ahead = self.bufferedAhead(),
                  let position = self.currentItemTime(), let duration = self.mediaInfo?.duration else { return nil }
            return (ahead, position, duration)
        } renderLag: { [weak self] in
            self?.streamedRenderLag()
        }
    }

    deinit {
        stallWatch.stop()
        bus.stop()
        teardown()
    }

    // MARK: - PlaybackEngine

    public func load(_ location: String) async throws(PlaybackError) -> MediaInfo {
        let source = try MediaLocation(location)
        return try await onQueue { () throws(PlaybackError) -> MediaInfo in try self.loadOnQueue(source) }
    }

    public func prepare(at itemTime: ItemTime, rate: Double) async throws(PlaybackError) {
        try await onQueue { () throws(PlaybackError) in try self.prepareOnQueue(at: itemTime, rate: rate) }
    }

    public func play(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant,
                     rate: Double) async throws(PlaybackError) {
        try await onQueue { () throws(PlaybackError) in
            try self.playOnQueue(from: itemTime, atSessionTime: sessionTime, rate: rate)
        }
    }

    @discardableResult
    public func pause() async throws(PlaybackError) -> ItemTime {
        try await onQueue { () throws(PlaybackError) -> ItemTime in try self.pauseOnQueue() }
    }

    public func currentItemTime() -> ItemTime? {
        let (loaded, held) = state.withLock { ($0.transport.info != nil, $0.transport.heldItemTime) }
        guard loaded else { return nil }
        if let held { return held }
        // The pipeline renders `outputOffset` behind the group on purpose; report the group's position.
        let (offset, rate) = state.withLock { ($0.outputOffset, $0.playingRate) }
        return handles.pipeline.queryPosition().map { ItemTime(nanoseconds: $0) + offset * rate }
    }

    public var prerollEstimate: TimeSpan { state.withLock { $0.prerolls.estimate } }

    /// How far (in wall time) the sinks render behind the playing line, for a streamed item that plays and is not
    /// near its end; nil otherwise. A render from before the line began counts as the line's first item time.
    func streamedRenderLag() -> TimeSpan? {
        let (line, info, playing, location, calibration) = state.withLock {
            ($0.playingLine, $0.transport.info, $0.transport.isPlaying, $0.location, $0.calibration)
        }
        guard playing, let line, line.rate > 0, let info, let location, !location.hasPrefix("file:") else { return nil }
        let expected = line(calibration.sessionTime(atLocal: SystemMonotonicClock().now))
        if let duration = info.duration, (expected - ItemTime(nanoseconds: duration.nanoseconds)) > .milliseconds(-500) {
            return nil
        }
        var shown = line.toAnchor
        if let record = renderProbe.latest(info.hasVideo ? .video : .audio),
           calibration.sessionTime(atLocal: LocalInstant(nanoseconds: record.monotonicTime)) >= line.fromAnchor {
            shown = max(shown, ItemTime(nanoseconds: record.itemTime))
        }
        return (expected - shown) / line.rate
    }

    /// The latest buffer the sinks released (video when there is any, else audio), from the render probe, on this
    /// peer's local clock.
    public func latestRender() -> RenderedMoment? {
        guard let record = renderProbe.latest(.video) ?? renderProbe.latest(.audio) else { return nil }
        let local = localTimeModel.sessionTime(atLocal: LocalInstant(nanoseconds: record.monotonicTime))
        return RenderedMoment(itemTime: ItemTime(nanoseconds: record.itemTime), at: LocalInstant(nanoseconds: local.nanoseconds))
    }

    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.stallWatch.stop()
                self.bus.stop()
                self.state.withLock { $0.isClosed = true }
                self.handles.pipeline.setState(GST_STATE_NULL)
                self.videoWindow.free()   // the window goes with the player
                continuation.resume()
            }
        }
    }

    // MARK: - Extras beyond the protocol (the clock's are in `+Clock`)

    /// What the last successful `load` reported.
    public var mediaInfo: MediaInfo? { state.withLock { $0.transport.info } }

    /// The URI of the item the last successful `load` loaded (a `file://` URI for a path).
    public var loadedURI: String? { state.withLock { $0.transport.info == nil ? nil : $0.location } }

    /// Item time fetched ahead of the position, for an item that streams over HTTP (its download buffer holds
    /// bytes; their time is taken as proportional to them, as for a constant bitrate); nil before a load or when
    /// nothing answers the buffering query. Meaningful only for a network source: a local file reads as fetched.
    public func bufferedAhead() -> TimeSpan? {
        guard let duration = mediaInfo?.duration, duration > .zero, let position = currentItemTime() else { return nil }
        let fraction = min(1, max(0, position.seconds / duration.seconds))
        guard let reach = handles.pipeline.queryDownloadedReach(from: fraction) else { return nil }
        return .seconds(max(0, reach - fraction) * duration.seconds)
    }

    // MARK: - Helpers

    /// Runs `body` on the player's queue, where every blocking GStreamer call is made.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        let result: Result<T, PlaybackError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(PlaybackError) -> T in try body() }) }
        }
        return try result.get()
    }

    func ensureOpen() throws(PlaybackError) {
        if state.withLock({ $0.isClosed }) { throw .engineFailure("the player is closed") }
    }

    private func teardown() {
        handles.pipeline.setState(GST_STATE_NULL)
        videoWindow.free()   // no sink holds the window once the pipeline is down
        state.withLock { $0.clock = ClockHandle(nil) }
        gst_object_unref(handles.videoSink)
        gst_object_unref(handles.audioSink)
        gst_object_unref(handles.pipeline)
    }
}
