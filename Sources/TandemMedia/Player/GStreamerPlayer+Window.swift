import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import Synchronization
import TandemCore

// What a person watching has in the video window: an on-screen display, the keys they press there, volume and
// mute, audio and subtitle tracks, subtitles from a file, and a personal output offset.
extension GStreamerPlayer {
    // MARK: On-screen display

    /// Whether the player draws an on-screen display (`Configuration.overlay`, and a video stream to draw on).
    public var hasOverlay: Bool { window.osd != nil }

    /// Shows `text` on the video, top left on a shaded band (several lines allowed); nil or empty clears it.
    /// Drawn on every frame from the next one on (a paused picture shows it after the next preroll). The text is
    /// shown as it is: markup in it (someone's chat line) is escaped, never interpreted.
    public func setOverlayText(_ text: String?) {
        guard let osd = window.osd else { return }
        tdm_gst_set_string(UnsafeMutableRawPointer(osd), "text", Self.escapingMarkup(text ?? ""))
    }

    /// `text` as literal Pango markup (textoverlay interprets its text as markup).
    static func escapingMarkup(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// Key presses in the video window, as GstNavigation names them ("space", "Left", "Right", "Up", "Down",
    /// "f", "m", "9", …). Needs `Configuration.overlay`; one consumer.
    public var windowKeys: AsyncStream<String> { window.keys }

    /// Sends a key press upstream from the video sink, exactly as a video window does when a key is pressed in
    /// it (for tests and for sinks without a window); false when the sink has no input to send it from.
    @discardableResult
    public func injectWindowKey(_ key: String) -> Bool {
        tdm_gst_send_key_press(handles.videoSink, key) != 0
    }

    // MARK: Volume

    /// Linear volume, 0 (silent) to 1 (as recorded) and up to 1.5.
    public var volume: Double { tdm_gst_get_double(UnsafeMutableRawPointer(handles.pipeline), "volume") }

    /// Sets the volume (clamped to 0...1.5).
    public func setVolume(_ volume: Double) {
        let clamped = volume.isFinite ? min(max(volume, 0), 1.5) : 1
        tdm_gst_set_double(UnsafeMutableRawPointer(handles.pipeline), "volume", clamped)
    }

    public var isMuted: Bool { tdm_gst_get_int(UnsafeMutableRawPointer(handles.pipeline), "mute") != 0 }
    public func setMuted(_ muted: Bool) {
        tdm_gst_set_boolean(UnsafeMutableRawPointer(handles.pipeline), "mute", muted ? 1 : 0)
    }

    // MARK: Tracks

    /// The loaded item's audio tracks.
    public var audioTrackCount: Int { Int(tdm_gst_get_int(UnsafeMutableRawPointer(handles.pipeline), "n-audio")) }
    /// The audio track playing (0-based), -1 when none.
    public var audioTrack: Int { Int(tdm_gst_get_int(UnsafeMutableRawPointer(handles.pipeline), "current-audio")) }

    /// Subtitle tracks: the subtitle file's first (when the configuration names one), then the item's own.
    public var subtitleTrackCount: Int {
        (window.state.withLock { $0.fileCues != nil } ? 1 : 0)
            + Int(tdm_gst_get_int(UnsafeMutableRawPointer(handles.pipeline), "n-text"))
    }

    /// The subtitle track shown (0-based, as in `subtitleTrackCount`), nil when subtitles are off.
    public var subtitleTrack: Int? { window.state.withLock { $0.shown } }

    /// Plays audio track `index` (0-based) of the loaded item.
    public func selectAudioTrack(_ index: Int) throws(PlaybackError) {
        let count = audioTrackCount
        guard (0..<count).contains(index) else { throw .noSuchTrack(kind: "audio", index: index, count: count) }
        tdm_gst_set_int(UnsafeMutableRawPointer(handles.pipeline), "current-audio", Int32(index))
    }

    /// Shows subtitle track `index` (0-based, as in `subtitleTrackCount`), or none for nil.
    public func selectSubtitleTrack(_ index: Int?) throws(PlaybackError) {
        let pipeline = UnsafeMutableRawPointer(handles.pipeline)
        let count = subtitleTrackCount
        if let index, !(0..<count).contains(index) {
            throw .noSuchTrack(kind: "subtitle", index: index, count: count)
        }
        let hasFile = window.state.withLock { $0.fileCues != nil }
        let showFile = hasFile && index == 0
        let embedded = index.map { hasFile ? $0 - 1 : $0 }.flatMap { $0 >= 0 ? $0 : nil }
        window.showCues(showFile)
        if let embedded { tdm_gst_set_int(pipeline, "current-text", Int32(embedded)) }
        tdm_gst_subtitles_set_visible(window.embeddedSubtitles, handles.pipeline, embedded != nil ? 1 : 0)
        window.state.withLock { $0.shown = index }
    }

    /// The languages of the loaded item's audio tracks (ISO 639-2/T, e.g. "fra"), nil for a track without one.
    public var audioTrackLanguages: [String?] { trackLanguages(text: false, count: audioTrackCount) }

    /// The languages of the loaded item's own subtitle tracks (a subtitle file is not among them).
    public var embeddedSubtitleLanguages: [String?] {
        trackLanguages(text: true, count: Int(tdm_gst_get_int(UnsafeMutableRawPointer(handles.pipeline), "n-text")))
    }

    /// Whether subtitle track 0 is the configured subtitle file (then the item's own tracks follow it).
    public var hasSubtitleFile: Bool { window.state.withLock { $0.fileCues != nil } }

    private func trackLanguages(text: Bool, count: Int) -> [String?] {
        (0..<max(0, min(count, 64))).map { index in
            GStreamer.take(tdm_gst_track_language(handles.pipeline, text ? 1 : 0, Int32(index)))
                .flatMap(Self.normalizedLanguage)
        }
    }

    /// An ISO 639 code as ISO 639-2/T in lower case ("fr", "fre", "FRA" → "fra"); nil for anything that is not a
    /// language code (2 to 8 letters or hyphens).
    public static func normalizedLanguage(_ code: String) -> String? {
        guard (2...8).contains(code.count), code.allSatisfy({ ($0.isASCII && $0.isLetter) || $0 == "-" }) else {
            return nil
        }
        return GStreamer.take(tdm_gst_language_normalized(code))
    }

    /// After a load: the configured track choices; one the item does not have is a warning, not a failure.
    func applyTrackPreferences() {
        do {
            if let audio = configuration.preferredAudioTrack { try selectAudioTrack(audio) }
            if let subtitles = configuration.preferredSubtitleTrack { try selectSubtitleTrack(subtitles) }
        } catch {
            bus.emit(.warning(error.description))
        }
    }

    /// At a load: the configured subtitle file's cues, shown from the start. A file is drawn by the player's own
    /// overlay, cue by cue on exactly the frames each covers (playbin's external-subtitle path can keep the
    /// timing of before a seek).
    func applySubtitleFile() throws(PlaybackError) {
        guard let file = configuration.subtitleFile else { return }
        let cues = try SubtitleFile.load(path: file)
        window.state.withLock { $0.fileCues = cues }
        window.showCues(true)
        window.state.withLock { $0.shown = 0 }
    }

    // MARK: Personal offset

    /// How much later (positive) or earlier (negative) than the group this player renders: for output that
    /// lags by itself (Bluetooth headphones, a TV's picture processing) beyond what its sink reports. What
    /// a sink reports as its latency is already accounted for by the pipeline.
    public var outputOffset: TimeSpan { state.withLock { $0.outputOffset } }

    /// Shifts this player's output by `offset` through the engine clock: changes up to the step threshold are
    /// slewed while playing (no seek, no visible jump), larger ones step. `currentItemTime` stays the group's
    /// position, so the drift watchdog does not fight the offset.
    public func setOutputOffset(_ offset: TimeSpan) {
        let mapping = state.withLock { state -> ClockMapping in
            state.outputOffset = offset
            return state.sessionMapping
        }
        setClockMapping(mapping)
    }
}

/// The window's parts of a player: the video filter (subtitle and on-screen display overlays), the key stream,
/// and the subtitle file's cues.
///
/// `@unchecked Sendable`: the element pointers are only used through GStreamer's thread-safe API; `state` is
/// behind a lock.
final class PlayerWindow: @unchecked Sendable {
    struct State {
        /// The subtitle file's cues, once loaded.
        var fileCues: [SubtitleCue]?
        /// The probe drawing them (0 when they are hidden).
        var cueProbe: UInt = 0
        /// The subtitle track shown, nil when none.
        var shown: Int?
    }

    let osd: UnsafeMutablePointer<GstElement>?
    let subtitles: UnsafeMutablePointer<GstElement>?
    /// Shows or hides the item's own subtitles (hidden until chosen); lives as long as the playbin.
    let embeddedSubtitles: UnsafeMutableRawPointer
    let keys: AsyncStream<String>
    let state = Mutex(State())
    private let keySink: AsyncStream<String>.Continuation

    /// With `overlay` (an on-screen display and keys) or `subtitleFont` (a subtitle file to draw), builds
    /// playbin's video filter: a `textoverlay` for subtitles (bottom centre), then one for the display (top left).
    init(playbin: UnsafeMutablePointer<GstElement>, overlay: Bool, subtitleFont: String?) {
        (keys, keySink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(64))
        embeddedSubtitles = tdm_gst_subtitles_watch(playbin, 0)
        guard overlay || subtitleFont != nil else {
            (osd, subtitles) = (nil, nil)
            keySink.finish()
            return
        }
        guard let filter = tdm_gst_overlay_filter_new(subtitleFont ?? "Sans 24") else {
            (osd, subtitles) = (nil, nil)
            keySink.finish()
            return
        }
        let bin = UnsafeMutablePointer<GstBin>(OpaquePointer(filter))
        let osdElement = gst_bin_get_by_name(bin, "osd")
        subtitles = gst_bin_get_by_name(bin, "subs")
        osd = overlay ? osdElement : nil
        tdm_gst_set_object(UnsafeMutableRawPointer(playbin), "video-filter", UnsafeMutableRawPointer(filter))
        gst_object_unref(UnsafeMutableRawPointer(filter))   // playbin holds it now
        guard overlay, let osdElement else {
            if let osdElement, !overlay { gst_object_unref(UnsafeMutableRawPointer(osdElement)) }
            keySink.finish()
            return
        }
        let box = Unmanaged.passRetained(KeyBox(keySink)).toOpaque()
        tdm_gst_watch_keys(osdElement, "src", { context, key in
            guard let context, let key else { return }
            Unmanaged<KeyBox>.fromOpaque(context).takeUnretainedValue().sink.yield(String(cString: key))
        }, { context in
            guard let context else { return }
            Unmanaged<KeyBox>.fromOpaque(context).takeRetainedValue().sink.finish()
        }, box)
    }

    /// Draws the subtitle file's cues, or stops drawing them.
    func showCues(_ show: Bool) {
        guard let subtitles else { return }
        state.withLock { state in
            if state.cueProbe != 0 {
                tdm_gst_pad_probe_remove(subtitles, "video_sink", state.cueProbe)
                state.cueProbe = 0
                tdm_gst_set_string(UnsafeMutableRawPointer(subtitles), "text", "")
            }
            guard show, let cues = state.fileCues else { return }
            let starts = cues.map(\.start.nanoseconds)
            let ends = cues.map(\.end.nanoseconds)
            let texts = cues.map { strdup(GStreamerPlayer.escapingMarkup($0.text)) }
            defer { texts.forEach { free($0) } }
            let constTexts = texts.map { UnsafePointer<CChar>($0) }
            state.cueProbe = constTexts.withUnsafeBufferPointer { pointers in
                UInt(tdm_gst_subtitle_cues_attach(subtitles, starts, ends, pointers.baseAddress, cues.count))
            }
        }
    }

    deinit {
        keySink.finish()
        if let osd { gst_object_unref(UnsafeMutableRawPointer(osd)) }
        if let subtitles { gst_object_unref(UnsafeMutableRawPointer(subtitles)) }
    }
}

/// Carries the key stream's continuation through the C callback's context.
private final class KeyBox: Sendable {
    let sink: AsyncStream<String>.Continuation
    init(_ sink: AsyncStream<String>.Continuation) { self.sink = sink }
}
