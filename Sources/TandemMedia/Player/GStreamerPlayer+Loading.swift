import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import Logging
import TandemCore

// Loading an item: preroll it at the start, tell a real preroll from a file that holds no media, and translate
// what went wrong into the error the user sees.
extension GStreamerPlayer {
    func loadOnQueue(_ source: MediaLocation) throws(PlaybackError) -> MediaInfo {
        try ensureOpen()
        let pipeline = handles.pipeline
        bus.setContext(location: source.display, isFile: source.isFile, loading: true)
        defer { bus.setContext(location: source.display, isFile: source.isFile, loading: false) }
        bus.emit(.loading(progress: 0))

        pipeline.setState(GST_STATE_READY)
        _ = tdm_gst_wait_async_done(pipeline, nil, TimeSpan.seconds(5).nanoseconds)
        state.withLock { $0.transport = .empty }
        tdm_gst_error_trap_reset(handles.trap)
        // A streamed item is fingerprinted as a file is (two range requests), so that the group's checks that
        // everyone plays the same item hold for it; taken before the pipeline opens its own connection.
        let contentID = source.isFile ? nil : MediaFingerprint.ofHTTP(source.uri)
        tdm_gst_set_string(pipeline, "uri", source.uri)
        try applySubtitleFile()
        let started = SystemMonotonicClock().now
        pipeline.setState(GST_STATE_PAUSED)
        let done = tdm_gst_wait_async_done(pipeline, handles.trap, configuration.prerollTimeout.nanoseconds)
        if done != 1 {
            let error = trappedError(source: source)
                ?? (done == -1
                    ? (source.isFile ? .truncatedOrCorrupt(path: source.display, detail: "preroll timed out")
                        : .unreachable(uri: source.display, detail: "no data within the preroll timeout"))
                    : .engineFailure("the pipeline refused to preroll \(source.display)"))
            pipeline.setState(GST_STATE_NULL)
            throw error
        }
        let hasVideo = tdm_gst_get_int(pipeline, "n-video") > 0
        let hasAudio = tdm_gst_get_int(pipeline, "n-audio") > 0
        let gotData = tdm_gst_sinks_prerolled(handles.videoSink) != 0 || tdm_gst_sinks_prerolled(handles.audioSink) != 0
        guard (hasVideo || hasAudio) && gotData else {
            pipeline.setState(GST_STATE_NULL)
            if source.isFile {
                throw .truncatedOrCorrupt(path: source.display, detail: "no audio or video could be read from it")
            }
            throw .notMedia(path: source.display)
        }
        // The preroll is what a later start must allow for. A stream's first one waits on its connection and its
        // first bytes, and the play-through wait after it on the download: neither is a preroll (counted as one,
        // they put a streamer's late joins seconds ahead, past what it had fetched; see `prepareOnQueue`).
        if source.isFile {
            recordPreroll(SystemMonotonicClock().now - started)
        } else {
            waitUntilPlayableThrough(until: started + configuration.prerollTimeout)
        }
        attachLateSinks()
        applyTrackPreferences()
        let duration = pipeline.queryDuration()
        let info = MediaInfo(
            duration: duration.map { TimeSpan(nanoseconds: $0) },
            isSeekable: pipeline.querySeekable(),
            hasVideo: hasVideo, hasAudio: hasAudio,
            contentID: source.isFile ? MediaFingerprint.ofFile(atPath: source.path) : contentID,
            title: GStreamer.take(tdm_gst_error_trap_title(handles.trap)),
            changesRateInPlace: configuration.changesRateInPlace && tdm_gst_supports_instant_rate(pipeline) != 0)
        state.withLock {
            $0.transport = .paused(info, .prerolled(Prepared(itemTime: 0, rate: 1), at: 0))
            $0.location = source.uri
        }
        logger.debug("loaded", metadata: ["location": "\(source.display)", "duration": "\(duration ?? -1)"])
        bus.emit(.ready(info))
        return info
    }

    /// A streamed item stays loading until it can play through: its download buffer is full (100 %), or it has
    /// `playThroughLead` fetched and fetches faster than it plays (`playThroughRate` times, over at least half a
    /// second), so that the download stays ahead. Past `deadline` it is ready anyway; once the buffer has been
    /// full, a shortfall is a stall the group waits for (`BusPump`).
    private func waitUntilPlayableThrough(until deadline: LocalInstant) {
        let pipeline = handles.pipeline
        let duration = pipeline.queryDuration().map { TimeSpan(nanoseconds: $0) }
        var first: (at: LocalInstant, reach: Double)?
        while SystemMonotonicClock().now < deadline {
            guard let percent = pipeline.queryBufferingPercent() else { return }
            if percent >= 100 { return }
            let now = SystemMonotonicClock().now
            if let duration, duration > .zero, let reach = pipeline.queryDownloadedReach(from: 0).map({ $0 * duration.seconds }) {
                if reach >= duration.seconds { return }
                if let first, (now - first.at) >= .milliseconds(500) {
                    let rate = (reach - first.reach) / (now - first.at).seconds
                    if reach >= Self.playThroughLead.seconds, rate >= Self.playThroughRate { return }
                }
                if first == nil { first = (now, reach) }
                bus.emit(.loading(progress: min(1, reach / min(duration.seconds, Self.playThroughLead.seconds))))
            } else {
                bus.emit(.loading(progress: Double(percent) / 100))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Item time a streamed item must have fetched before it is ready (with `playThroughRate`).
    static let playThroughLead = TimeSpan.seconds(3)
    /// How many times faster than it plays a streamed item must be fetching to be ready before its buffer is full.
    static let playThroughRate = 1.25

    /// The error the pipeline's bus recorded since the last reset, as the user should see it; nil when none.
    func trappedError(source: MediaLocation?, location: (String, Bool)? = nil) -> PlaybackError? {
        var info = tdm_gst_message_info()
        guard tdm_gst_error_trap_get(handles.trap, &info) != 0 else {
            tdm_gst_message_info_clear(&info)
            return nil
        }
        let message = GStreamerMessage(consuming: &info)
        let (display, isFile) = source.map { ($0.display, $0.isFile) } ?? location ?? ("the item", true)
        return message.playbackError(location: display, isFile: isFile)
    }

    /// Whether a streamed item's download holds `itemTime` and a second past it, so that a preroll there waits on
    /// decoding only (true for a local file, and when the pipeline does not say).
    func hasFetched(_ itemTime: ItemTime, duration: TimeSpan?) -> Bool {
        guard let duration, duration > .zero, !bus.location.1 else { return true }
        let fraction = min(1, max(0, itemTime.seconds / duration.seconds))
        guard let reach = handles.pipeline.queryDownloadedReach(from: fraction) else { return true }
        return reach >= 1 || (reach - fraction) * duration.seconds >= 1
    }

    func recordPreroll(_ duration: TimeSpan) {
        state.withLock { $0.prerolls.record(duration) }
    }
}
