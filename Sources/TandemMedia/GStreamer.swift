import CTandemGStreamer
import Foundation
import CTandemGStreamerShim
import TandemCore

/// Process-wide GStreamer set-up and the small translations every part of TandemMedia shares.
public enum GStreamer {
    /// Initialises GStreamer for this process (idempotent). Returns false when GStreamer cannot start.
    @discardableResult
    public static func initialize() -> Bool {
        if ProcessInfo.processInfo.environment["TANDEM_SINK_PRIORITY"] == "normal" { sinkThreadPriority = .normal }
        return tdm_gst_init() != 0
    }

    /// How the streaming threads that feed a player's sinks are scheduled, from the next thread that starts on.
    public enum SinkThreadPriority: Sendable, Hashable {
        /// As every other thread.
        case normal
        /// Real time (SCHED_FIFO, priority 10) where the system allows it (root, CAP_SYS_NICE, or an RLIMIT_RTPRIO
        /// of 10 or more, e.g. `@audio - rtprio 95` in limits.conf), else nice −10 where allowed, else as `normal`.
        /// A sink thread the scheduler wakes late shows its frame late; on a busy machine that tail is most of the
        /// spread between peers (`docs/BENCHMARKS.md`).
        case realtime
    }

    /// How the latest sink thread to start in this process was scheduled in the end: `realtime` (SCHED_FIFO),
    /// `raised` (nice −10), `ordinary`; nil before any started.
    public static var sinkThreadScheduling: String? {
        switch tdm_gst_sink_thread_scheduling() {
        case Int32(TDM_GST_SINK_THREADS_REALTIME): return "realtime"
        case Int32(TDM_GST_SINK_THREADS_RAISED): return "raised"
        case Int32(TDM_GST_SINK_THREADS_ORDINARY): return "ordinary"
        default: return nil
        }
    }

    /// The default is `.realtime`; `TANDEM_SINK_PRIORITY=normal` in the environment gives `.normal` (to compare).
    public static var sinkThreadPriority: SinkThreadPriority {
        get { tdm_gst_get_sink_thread_priority() == Int32(TDM_GST_SINK_PRIORITY_NORMAL) ? .normal : .realtime }
        set {
            tdm_gst_set_sink_thread_priority(Int32(newValue == .normal ? TDM_GST_SINK_PRIORITY_NORMAL
                                                                       : TDM_GST_SINK_PRIORITY_REALTIME))
        }
    }

    /// Initialises GStreamer or throws a typed error saying what to install.
    static func require() throws(PlaybackError) {
        guard initialize() else {
            throw .engineFailure("GStreamer could not be initialised — install gstreamer1.0-plugins-base "
                + "and check GST_PLUGIN_PATH")
        }
    }

    /// The Debian package that provides a missing GStreamer element or codec.
    ///
    /// `detail` is an element name ("vp8dec"), a caps name ("video/x-h264") or GStreamer's installer detail
    /// string ("gstreamer|1.0|playbin|H.264 decoder|decoder-video/x-h264"). Returns nil when unknown.
    public static func debianPackage(providing detail: String) -> String? {
        // Installer details end with "decoder-CAPS", "encoder-CAPS", "element-NAME", "urisource-SCHEME" …
        var key = detail.lowercased()
        if let last = key.split(separator: "|").last { key = String(last) }
        for prefix in ["decoder-", "encoder-", "element-", "urisource-", "urisink-"] where key.hasPrefix(prefix) {
            key = String(key.dropFirst(prefix.count))
        }
        if let comma = key.firstIndex(of: ",") { key = String(key[..<comma]) }
        key = key.trimmingCharacters(in: .whitespaces)

        let table: [(needles: [String], package: String)] = [
            (["h264", "h265", "hevc", "x-h26", "aac", "mpeg", "ac3", "x-ac3", "eac3", "wmv", "wma", "avdec", "x-divx",
              "x-xvid", "x-msmpeg", "x-dts", "x-alac"], "gstreamer1.0-libav"),
            (["av1", "dav1d", "x-av1", "webrtc", "dash", "hls", "x-hls", "dashdemux", "hlsdemux", "srt", "rtmp"],
             "gstreamer1.0-plugins-bad"),
            (["x264", "mpeg2dec", "a52", "x-realmedia", "sid"], "gstreamer1.0-plugins-ugly"),
            (["vp8", "vp9", "x-vp8", "x-vp9", "matroska", "webm", "x-matroska", "flac", "x-flac", "wav", "x-wav",
              "wavpack", "jpeg", "png", "mp4", "quicktime", "qtdemux", "isomp4", "pulse", "autodetect",
              "autovideosink", "autoaudiosink", "souphttpsrc", "http", "https", "speex", "mulaw", "alaw",
              "mpg123", "mp3", "x-mp3", "lame", "v4l2", "x-speex", "x-mulaw", "x-alaw", "timeoverlay"],
             "gstreamer1.0-plugins-good"),
            (["opus", "vorbis", "ogg", "theora", "x-opus", "x-vorbis", "x-theora", "audioconvert", "videoconvert",
              "audioresample", "videoscale", "playbin", "decodebin", "uridecodebin", "typefind", "audiotestsrc",
              "videotestsrc", "xvimagesink", "ximagesink", "alsasink", "alsa", "textoverlay", "x-raw"],
             "gstreamer1.0-plugins-base"),
            (["fakesink", "filesrc", "filesink", "queue", "identity", "tee", "fdsrc", "file"], "libgstreamer1.0-0"),
        ]
        let bare = key.hasPrefix("video/") || key.hasPrefix("audio/") || key.hasPrefix("application/")
            ? String(key.drop(while: { $0 != "/" }).dropFirst()) : key
        for entry in table {
            for needle in entry.needles where bare == needle || bare.hasPrefix(needle) || key == needle {
                return entry.package
            }
        }
        for entry in table {
            for needle in entry.needles where needle.count >= 4 && bare.contains(needle) { return entry.package }
        }
        return nil
    }

    /// The installer detail GStreamer posts when no decoder handles `caps` (e.g. "video/x-h264"), nil if the
    /// caps do not parse. Feed it to `debianPackage(providing:)`.
    public static func missingDecoderDetail(caps: String) -> String? {
        guard initialize() else { return nil }
        guard let parsed = gst_caps_from_string(caps) else { return nil }
        defer { gst_caps_unref(parsed) }
        return take(gst_missing_decoder_installer_detail_new(parsed))
    }

    /// Takes ownership of a C string GLib allocated (the shim's "caller frees" strings too) and returns it as a
    /// Swift string.
    static func take(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        defer { g_free(pointer) }
        return String(cString: pointer)
    }
}

/// A bus message or trapped error copied out of C.
struct GStreamerMessage: Sendable {
    var kind: Int32
    var fromPipeline: Bool
    var percent: Int
    var domain: Int32
    var code: Int32
    var text: String?
    var debug: String?
    var source: String?
    var missingDetail: String?
    var title: String?

    /// Copies `info` and clears it.
    init(consuming info: inout tdm_gst_message_info) {
        kind = info.kind
        fromPipeline = info.from_pipeline != 0
        percent = Int(info.percent)
        domain = info.domain
        code = info.code
        func copy(_ p: UnsafeMutablePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        text = copy(info.text)
        debug = copy(info.debug)
        source = copy(info.source)
        missingDetail = copy(info.missing_detail)
        title = copy(info.title)
        tdm_gst_message_info_clear(&info)
    }

    /// Translates an error (or missing plugin) into the typed error the user sees.
    func playbackError(location: String, isFile: Bool) -> PlaybackError {
        let message = text ?? "unknown error"
        if kind == Int32(TDM_GST_MSG_MISSING_PLUGIN) {
            let detail = missingDetail ?? message
            // Text files are "found" as text/plain, for which no "decoder" exists: that is not media.
            if detail.contains("text/plain") || detail.contains("application/octet-stream") {
                return .notMedia(path: location)
            }
            return .missingPlugin(detail: text ?? detail, debianPackage: GStreamer.debianPackage(providing: detail))
        }
        switch (domain, code) {
        case (Int32(TDM_GST_DOMAIN_STREAM), Int32(GST_STREAM_ERROR_TYPE_NOT_FOUND.rawValue)),
             (Int32(TDM_GST_DOMAIN_STREAM), Int32(GST_STREAM_ERROR_WRONG_TYPE.rawValue)):
            return .notMedia(path: location)
        case (Int32(TDM_GST_DOMAIN_STREAM), Int32(GST_STREAM_ERROR_CODEC_NOT_FOUND.rawValue)),
             (Int32(TDM_GST_DOMAIN_CORE), Int32(GST_CORE_ERROR_MISSING_PLUGIN.rawValue)):
            return .missingPlugin(detail: message, debianPackage: nil)
        case (Int32(TDM_GST_DOMAIN_STREAM), _):
            return .truncatedOrCorrupt(path: location, detail: message)
        case (Int32(TDM_GST_DOMAIN_RESOURCE), Int32(GST_RESOURCE_ERROR_NOT_FOUND.rawValue)):
            return isFile ? .noSuchFile(path: location) : .unreachable(uri: location, detail: message)
        case (Int32(TDM_GST_DOMAIN_RESOURCE), _):
            return isFile ? .truncatedOrCorrupt(path: location, detail: message)
                : .unreachable(uri: location, detail: message)
        default:
            return .engineFailure(message)
        }
    }
}
