import CTandemGStreamerShim
import Dispatch
import Foundation
import TandemCore

/// What GStreamer's discoverer finds in a media file or URI: duration, streams and codecs, tags.
public struct MediaProbe: Sendable, Hashable, Codable {
    /// One elementary stream.
    public struct Stream: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable { case video, audio, subtitle, other }

        public var kind: Kind
        /// Human codec description, e.g. "VP8" or "Opus".
        public var codec: String
        /// The stream's caps as GStreamer prints them.
        public var caps: String
        public var width: Int?
        public var height: Int?
        /// Frames per second, when known.
        public var frameRate: Double?
        public var channels: Int?
        public var sampleRate: Int?
        /// Bits per second, when the container says.
        public var bitrate: Int?
        /// Audio and subtitle streams: the language the container names (ISO 639, e.g. "eng").
        public var language: String?
        /// Audio and subtitle streams: the track number within its kind, from 1 (what `--audio-track` and
        /// `--sub-track` take).
        public var track: Int?

        public init(kind: Kind, codec: String, caps: String, width: Int? = nil, height: Int? = nil,
                    frameRate: Double? = nil, channels: Int? = nil, sampleRate: Int? = nil, bitrate: Int? = nil,
                    language: String? = nil, track: Int? = nil) {
            self.language = language
            self.track = track
            self.kind = kind
            self.codec = codec
            self.caps = caps
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.channels = channels
            self.sampleRate = sampleRate
            self.bitrate = bitrate
        }
    }

    /// The file path or URI probed.
    public var location: String
    /// The item's length, when known (the same spelling as `MediaInfo.duration`).
    public var duration: TimeSpan?
    public var isSeekable: Bool
    /// Container format description, e.g. "WebM".
    public var container: String?
    public var title: String?
    public var streams: [Stream]
    /// The same content fingerprint `GStreamerPlayer` reports for a local file (nil for network sources), so a
    /// joiner can tell before playing whether its file is the host's.
    public var contentID: String?

    public var hasVideo: Bool { streams.contains { $0.kind == .video } }
    public var hasAudio: Bool { streams.contains { $0.kind == .audio } }

    /// Probes a file path or URI (file://, http://, https://). Runs GStreamer's discoverer on a thread of its own.
    /// - Throws: `PlaybackError` (no such file, a directory, not media, missing plugin, …).
    public static func probe(_ location: String, timeout: TimeSpan = .seconds(15)) async throws(PlaybackError) -> MediaProbe {
        try GStreamer.require()
        let source = try MediaLocation(location)
        let result: Result<MediaProbe, PlaybackError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(PlaybackError) -> MediaProbe in
                    try discover(source, location: location, timeout: timeout)
                })
            }
        }
        return try result.get()
    }

    private static func discover(_ source: MediaLocation, location: String, timeout: TimeSpan) throws(PlaybackError) -> MediaProbe {
        guard let result = tdm_gst_discover(source.uri, timeout.nanoseconds) else {
            throw .engineFailure("the discoverer could not start")
        }
        defer { tdm_gst_discover_result_free(result) }
        let r = result.pointee
        func string(_ p: UnsafeMutablePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        let errorText = string(r.error)
        switch Int(r.result) {
        case Int(TDM_GST_DISCOVER_OK):
            break
        case Int(TDM_GST_DISCOVER_MISSING_PLUGINS):
            let details = string(r.missing) ?? errorText ?? "unknown"
            if details.contains("text/plain") || details.contains("application/octet-stream") {
                throw .notMedia(path: source.display)
            }
            let first = details.split(separator: "\n").first.map(String.init) ?? details
            let human = first.split(separator: "|").dropFirst(3).first.map(String.init) ?? first
            throw .missingPlugin(detail: human, debianPackage: GStreamer.debianPackage(providing: first))
        case Int(TDM_GST_DISCOVER_TIMEOUT):
            throw source.isFile ? .truncatedOrCorrupt(path: source.display, detail: "probing timed out")
                : .unreachable(uri: source.display, detail: "probing timed out")
        case Int(TDM_GST_DISCOVER_URI_INVALID):
            throw .unsupportedScheme(String(source.uri.prefix { $0 != ":" }))
        default:
            var info = tdm_gst_message_info()
            info.kind = Int32(TDM_GST_MSG_ERROR)
            info.domain = r.domain
            info.code = r.code
            let message = GStreamerMessage(consuming: &info)
            var error = message
            error.text = errorText
            throw error.playbackError(location: source.display, isFile: source.isFile)
        }
        var streams: [Stream] = []
        var tracks: [Stream.Kind: Int] = [:]
        for index in 0..<Int(r.stream_count) {
            let s = r.streams[index]
            let kind: Stream.Kind = switch s.kind {
            case 0: .video
            case 1: .audio
            case 2: .subtitle
            default: .other
            }
            streams.append(Stream(
                kind: kind, codec: string(s.codec) ?? "unknown", caps: string(s.caps) ?? "",
                width: kind == .video && s.width > 0 ? Int(s.width) : nil,
                height: kind == .video && s.height > 0 ? Int(s.height) : nil,
                frameRate: kind == .video && s.fps_den > 0 && s.fps_num > 0 ? Double(s.fps_num) / Double(s.fps_den) : nil,
                channels: kind == .audio && s.channels > 0 ? Int(s.channels) : nil,
                sampleRate: kind == .audio && s.sample_rate > 0 ? Int(s.sample_rate) : nil,
                bitrate: s.bitrate > 0 ? Int(s.bitrate) : nil,
                language: string(s.language).flatMap { $0.isEmpty ? nil : $0 },
                track: kind == .audio || kind == .subtitle ? { tracks[kind, default: 0] += 1; return tracks[kind] }() : nil))
        }
        guard !streams.isEmpty else {
            throw source.isFile ? .truncatedOrCorrupt(path: source.display, detail: "no audio or video stream found")
                : .notMedia(path: source.display)
        }
        return MediaProbe(location: location, duration: r.duration >= 0 ? TimeSpan(nanoseconds: r.duration) : nil,
                          isSeekable: r.seekable != 0, container: string(r.container), title: string(r.title),
                          streams: streams,
                          contentID: source.isFile ? MediaFingerprint.ofFile(atPath: source.path)
                            : MediaFingerprint.ofHTTP(source.uri))
    }

    public init(location: String, duration: TimeSpan?, isSeekable: Bool, container: String?, title: String?,
                streams: [Stream], contentID: String? = nil) {
        self.location = location
        self.duration = duration
        self.isSeekable = isSeekable
        self.container = container
        self.title = title
        self.streams = streams
        self.contentID = contentID
    }
}
