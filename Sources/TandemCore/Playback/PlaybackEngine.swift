/// What a player reports about a loaded item.
public struct MediaInfo: Sendable, Codable, Hashable {
    /// Duration, when known (encoded as bare nanoseconds).
    public var duration: TimeSpan?
    /// Whether accurate seeking works on this item.
    public var isSeekable: Bool
    public var hasVideo: Bool
    public var hasAudio: Bool
    /// A content fingerprint (e.g. a hash of the first bytes and size), used to warn when peers play different files.
    public var contentID: String?
    /// The item's own title tag, if any.
    public var title: String?
    /// Whether this player changes the rate of this item in place while it plays (no flush, no preroll): a `play`
    /// given while playing, on a line that continues the one it plays, switches rate at its session time. The
    /// authority then schedules a rate change as a new playing line at once, instead of a stop and a prepare round,
    /// when every participant says so. Absent (older peers, the browser page) means no.
    public var changesRateInPlace: Bool

    public init(duration: TimeSpan?, isSeekable: Bool, hasVideo: Bool, hasAudio: Bool,
                contentID: String? = nil, title: String? = nil, changesRateInPlace: Bool = false) {
        self.duration = duration
        self.isSeekable = isSeekable
        self.hasVideo = hasVideo
        self.hasAudio = hasAudio
        self.contentID = contentID
        self.title = title
        self.changesRateInPlace = changesRateInPlace
    }

    private enum CodingKeys: String, CodingKey {
        case duration, isSeekable, hasVideo, hasAudio, contentID, title, changesRateInPlace
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        duration = try c.decodeIfPresent(TimeSpan.self, forKey: .duration)
        isSeekable = try c.decode(Bool.self, forKey: .isSeekable)
        hasVideo = try c.decode(Bool.self, forKey: .hasVideo)
        hasAudio = try c.decode(Bool.self, forKey: .hasAudio)
        contentID = try c.decodeIfPresent(String.self, forKey: .contentID)
        title = try c.decodeIfPresent(String.self, forKey: .title)
        changesRateInPlace = try c.decodeIfPresent(Bool.self, forKey: .changesRateInPlace) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(duration, forKey: .duration)
        try c.encode(isSeekable, forKey: .isSeekable)
        try c.encode(hasVideo, forKey: .hasVideo)
        try c.encode(hasAudio, forKey: .hasAudio)
        try c.encodeIfPresent(contentID, forKey: .contentID)
        try c.encodeIfPresent(title, forKey: .title)
        // Written only when true, so what older peers receive is unchanged.
        if changesRateInPlace { try c.encode(true, forKey: .changesRateInPlace) }
    }
}

/// Errors a `PlaybackEngine` reports. Each message says what the user can do.
public enum PlaybackError: Error, Sendable, Hashable, CustomStringConvertible {
    case noSuchFile(path: String)
    case isDirectory(path: String)
    case notMedia(path: String)
    case truncatedOrCorrupt(path: String, detail: String)
    case unsupportedScheme(String)
    /// A GStreamer element or codec is missing; `debianPackage` names what to install when known.
    case missingPlugin(detail: String, debianPackage: String?)
    case unreachable(uri: String, detail: String)
    case seekOutOfRange(itemTime: ItemTime, duration: TimeSpan?)
    case invalidRate(Double)
    /// `play` could not be ready before its session time: it was ready `lateBy` after it. The engine stays
    /// prerolled and does not play; the caller plans a later start (the coordinator joins the line further on).
    case startMissed(lateBy: TimeSpan)
    case notLoaded
    case notSeekable
    /// The subtitle file cannot be used; `detail` says why.
    case badSubtitles(path: String, detail: String)
    /// There is no `kind` track `index` (0-based) among `count`.
    case noSuchTrack(kind: String, index: Int, count: Int)
    case engineFailure(String)

    public var description: String {
        switch self {
        case .noSuchFile(let p): return "no such file: \(p) — check the path"
        case .isDirectory(let p): return "\(p) is a directory — give a media file inside it"
        case .notMedia(let p): return "\(p) is not a media file GStreamer can play — pick an audio or video file"
        case .truncatedOrCorrupt(let p, let d): return "\(p) is truncated or corrupt (\(d)) — get a complete copy"
        case .unsupportedScheme(let s): return "unsupported URI scheme '\(s)' — use a file path, file://, http:// or https://"
        case .missingPlugin(let d, let pkg):
            if let pkg { return "missing GStreamer plugin: \(d) — install it with: apt-get install \(pkg)" }
            return "missing GStreamer plugin: \(d) — install the GStreamer plugin package that provides it"
        case .unreachable(let u, let d): return "cannot read \(u): \(d) — check the address and your connection"
        case .seekOutOfRange(let t, let dur):
            let durText = dur.map { String(format: "%.3f s", $0.seconds) } ?? "unknown"
            return String(format: "cannot seek to %.3f s: outside the item (duration %@)", t.seconds, durText)
        case .invalidRate(let r): return "invalid playback rate \(r) — use a finite rate greater than 0 (e.g. 0.5 to 2)"
        case .startMissed(let late):
            return String(format: "could not get ready in time for the scheduled start (%.0f ms late) — "
                          + "the start is planned again further on", late.milliseconds)
        case .notLoaded: return "nothing is loaded — open a media file first"
        case .notSeekable: return "this item cannot be seeked"
        case .badSubtitles(let p, let d):
            return "cannot use the subtitles in \(p): \(d) — give a SubRip (.srt), WebVTT (.vtt) or SSA/ASS file"
        case .noSuchTrack(let kind, let index, let count):
            if count == 0 { return "this item has no \(kind) tracks" }
            return "there is no \(kind) track \(index + 1): this item has \(count) (1 to \(count))"
        case .engineFailure(let d): return "playback failed: \(d)"
        }
    }
}

/// Events a `PlaybackEngine` delivers asynchronously (from GStreamer's bus, never on the cooperative pool).
public enum PlaybackEngineEvent: Sendable, Hashable {
    /// Loading; progress in 0...1 when known.
    case loading(progress: Double?)
    /// Loaded and prerolled.
    case ready(MediaInfo)
    /// Network buffering in percent (0...100), for display. A stall is reported with `stalled` (and its end with
    /// `recovered`): the engine decides when buffering means one.
    case buffering(percent: Int)
    /// Rendering stopped for lack of data (network stall, decoder stall).
    case stalled
    /// Data flows again after `stalled`.
    case recovered
    case endOfStream
    case error(PlaybackError)
    /// A non-fatal problem worth telling the user about.
    case warning(String)
}

/// The player a `PlaybackCoordinator` drives. `GStreamerPlayer` (TandemMedia) is the real one; TandemTesting has a
/// simulated one. Item times are `ItemTime`, session times `SessionInstant`, durations `TimeSpan`.
///
/// Time model: the engine owns a clock that reads **session time**, calibrated with `setClockMapping`, which maps
/// the peer's *local* monotonic time to session time. `play(from:atSessionTime:rate:)` renders `itemTime` exactly
/// when that clock reads `sessionTime`.
public protocol PlaybackEngine: AnyObject, Sendable {
    /// Engine events. There is one stream per engine, meant for one consumer (the coordinator).
    var events: AsyncStream<PlaybackEngineEvent> { get }

    /// Opens a file path or URI and prerolls it paused at item time 0.
    /// Throws `PlaybackError` (no such file, not media, missing plugin, …).
    func load(_ location: String) async throws -> MediaInfo

    /// Pauses (if needed) and prerolls at `itemTime` with an accurate seek, ready to start at `rate`.
    /// Returns when the first frame/sample at `itemTime` is ready to render.
    func prepare(at itemTime: ItemTime, rate: Double) async throws

    /// Renders `itemTime` when the engine's clock reads `sessionTime`, then continues at `rate`.
    /// If not prepared at `itemTime`, the engine prepares first (so call `prepare` ahead of time for precision).
    /// An engine never moves a start: if, once prerolled, `sessionTime` is already past (or too close to make),
    /// it throws `PlaybackError.startMissed` and stays prerolled without playing. Where a late peer joins the
    /// running timeline instead is the coordinator's decision. A start that comes a little late to an engine
    /// prerolled where it starts (`PlaybackCoordinatorStateMachine.Configuration.lateStartAllowance`) may instead
    /// be made on its line, what is already past left out (`GStreamerPlayer` does up to 40 ms late). Given while
    /// playing, on a line that continues the one playing (a rate change), an engine whose
    /// `MediaInfo.changesRateInPlace` is true switches rate at `sessionTime` without stopping; one that cannot stops
    /// and starts as above. Such a line can come a little after its
    /// `sessionTime` (`PlaybackCoordinatorStateMachine.Configuration.inPlaceSwitchMargin`): switch at once and put
    /// the frames back on the line, or throw `startMissed` to have the coordinator plan a join.
    func play(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant, rate: Double) async throws

    /// Pauses at once and returns the item time it paused at.
    @discardableResult
    func pause() async throws -> ItemTime

    /// The item time being rendered now, if loaded.
    func currentItemTime() -> ItemTime?

    /// Sets the calibration of the engine's clock: local monotonic time → session time.
    /// Small changes while playing are slewed (no audible or visible steps); large ones step.
    func setClockMapping(_ mapping: ClockMapping)

    /// How long `prepare` typically takes here, so the group can schedule starts the slowest peer can make.
    var prerollEstimate: TimeSpan { get }

    /// The latest moment the engine's output rendered (item time, on the peer's local clock), if the engine sees
    /// its renders; the coordinator reports how far that lies from the group's line (`renderOffset`). The default
    /// is nil: the group then sees no render offset for this peer.
    func latestRender() -> RenderedMoment?

    /// Releases the pipeline.
    func close() async
}

/// One moment an engine's output rendered: which item time, and when on the peer's local clock.
public struct RenderedMoment: Sendable, Hashable {
    public var itemTime: ItemTime
    public var at: LocalInstant

    public init(itemTime: ItemTime, at: LocalInstant) {
        self.itemTime = itemTime
        self.at = at
    }
}

extension PlaybackEngine {
    /// An engine that does not see its renders reports none.
    public func latestRender() -> RenderedMoment? { nil }
}
