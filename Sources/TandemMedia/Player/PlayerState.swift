import CTandemGStreamer
import CTandemGStreamerShim
import TandemCore

/// Everything a `GStreamerPlayer` changes after init, kept under one lock (`Locked`).
///
/// One lock on purpose: a start reads the clock lead and marks the player playing in one step, and a calibration
/// change reads whether it plays in the same step as it changes the clock (see `GStreamerPlayer+Clock`).
struct PlayerState: Sendable {
    /// Where the loaded item stands. Changed only on the player's queue.
    enum Transport: Sendable {
        /// Nothing loaded: before the first load, while a load runs, and after one failed.
        case empty
        /// Loaded and not playing.
        case paused(MediaInfo, Paused)
        /// Loaded and playing: `play` set the pipeline's base time.
        case playing(MediaInfo)
    }

    /// What a paused player knows about where it holds.
    enum Paused: Sendable {
        /// Prerolled for `Prepared` (running time 0 there), holding at item time `at`.
        case prerolled(Prepared, at: ItemTime)
        /// Paused by `pause` at this item time; a start prerolls again.
        case held(at: ItemTime)
        /// Stopped playing without a position of its own (a prepare interrupted playback, or a start failed):
        /// the pipeline is asked.
        case unknown
    }

    var clock: ClockHandle
    /// CLOCK_MONOTONIC → engine clock reading, as applied right now.
    var calibration: ClockMapping
    /// How far the GstClock reads ahead of session time (never negative). GstClocks never read backwards,
    /// so a backward calibration step while not playing raises the lead instead of moving the clock back; a
    /// start sets its base time `lead` later to match. Constant while playing.
    var clockLead: TimeSpan = .zero
    /// Counts calibration changes, so that a slew's scheduled end is dropped when a newer change came first.
    var calibrationGeneration = 0
    var sessionMapping: ClockMapping = .identity
    /// The path or URI of the loaded item (nil before a successful load).
    var location: String?
    var transport: Transport = .empty
    var prerolls = PrerollHistory()
    var probeAttached: Set<RenderRecord.StreamKind>
    var isClosed = false
    /// The personal output offset (`setOutputOffset`): the engine clock reads this much behind session time.
    var outputOffset: TimeSpan = .zero
    /// The rate the pipeline plays at (set by `play`), to turn the offset into item time.
    var playingRate = 1.0
    /// The line the pipeline plays (session time → item time) since the latest `play`, or an in-place rate change.
    var playingLine: ItemProjection?
    /// The session time at which running time is 0 for the playing pipeline (the start of the latest `play`, moved
    /// with the base time when a rate switch's lateness was corrected).
    var runningTimeOrigin: SessionInstant = .zero
    /// The latency the latest `play` set on the pipeline.
    var pipelineLatency: TimeSpan = .zero
    /// The latest rate change made in place.
    var lastRateSwitch: GStreamerPlayer.RateSwitch?

    init(clock: ClockHandle, calibration: ClockMapping, probeAttached: Set<RenderRecord.StreamKind>) {
        self.clock = clock
        self.calibration = calibration
        self.probeAttached = probeAttached
    }
}

extension PlayerState.Transport {
    /// What the last successful load reported; nil when nothing is loaded.
    var info: MediaInfo? {
        switch self {
        case .empty: nil
        case .paused(let info, _), .playing(let info): info
        }
    }

    var isPlaying: Bool {
        if case .playing = self { return true }
        return false
    }

    /// The item time a paused player holds at, when it knows it.
    var heldItemTime: ItemTime? {
        switch self {
        case .paused(_, .prerolled(_, let at)), .paused(_, .held(let at)): at
        case .empty, .playing, .paused(_, .unknown): nil
        }
    }

    /// What the pipeline is prerolled for, when it is paused and prerolled.
    var prepared: Prepared? {
        if case .paused(_, .prerolled(let prepared, _)) = self { return prepared }
        return nil
    }
}

/// The item time and rate a pipeline was prerolled for (a flushing seek there, paused).
struct Prepared: Equatable, Sendable {
    var itemTime: ItemTime
    var rate: Double
}

/// The last few preroll durations, and how long a start should allow for one.
struct PrerollHistory: Sendable {
    private var samples: [TimeSpan] = []

    mutating func record(_ duration: TimeSpan) {
        samples.append(duration)
        if samples.count > 8 { samples.removeFirst() }
    }

    /// The slowest recent preroll plus a margin: a start others schedule must be one this peer can make.
    var estimate: TimeSpan {
        guard let slowest = samples.max() else { return .milliseconds(150) }
        return slowest * Int64(3) / Int64(2) + .milliseconds(20)
    }
}

/// The GStreamer objects of one player.
///
/// `@unchecked Sendable`: the pointers never change after init, and they are only used through GStreamer API that
/// is thread-safe (state changes, queries and property access take the objects' own locks); blocking calls are
/// funnelled through the player's serial queue.
struct GstHandles: @unchecked Sendable {
    let pipeline: UnsafeMutablePointer<GstElement>
    let videoSink: UnsafeMutablePointer<GstElement>
    let audioSink: UnsafeMutablePointer<GstElement>
    let trap: OpaquePointer
}
