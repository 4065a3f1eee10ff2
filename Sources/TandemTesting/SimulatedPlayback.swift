import TandemCore

/// How a simulated player behaves: how long it takes to load and to seek, and what it reports about the item.
public struct FakeEngineProfile: Sendable, Hashable {
    /// Time from `load` to prerolled at 0 (ns).
    public var loadDelay: Int64
    /// Time an accurate seek (or a preroll at a new position) takes (ns).
    public var seekDelay: Int64
    /// What the engine tells the coordinator to plan with (ns); `PlaybackEngine.prerollEstimate`.
    public var prerollEstimate: Int64
    /// What `load` reports.
    public var media: MediaInfo
    /// Rendering speed error in ppm (a sink that lost sync): the drift watchdog should catch it.
    public var renderDriftPPM: Double

    public init(loadDelay: Int64 = 300_000_000, seekDelay: Int64 = 80_000_000, prerollEstimate: Int64 = 300_000_000,
                media: MediaInfo = FakeEngineProfile.defaultMedia, renderDriftPPM: Double = 0) {
        self.loadDelay = loadDelay
        self.seekDelay = seekDelay
        self.prerollEstimate = prerollEstimate
        self.media = media
        self.renderDriftPPM = renderDriftPPM
    }

    /// A two-hour movie with a fixed fingerprint.
    public static let defaultMedia = MediaInfo(duration: 7_200_000_000_000, isSeekable: true, hasVideo: true,
                                               hasAudio: true, contentID: "movie-sha-0001", title: "Movie")
}

/// A simulated player that renders on the **true** clock of a simulation (`FakePlaybackEngine` runs one as a
/// `PlaybackEngine`).
///
/// It owns a clock calibrated like a real engine's: true time → the peer's local clock (`localClock`, with the
/// offset and drift the simulation gave the peer) → session time (`clockMapping`, the coordinator's estimate,
/// which may be off by the clock-sync error). `play(from: X, atSessionTime: T)` therefore renders `X` at the true
/// time at which *this peer believes* session time is `T`; comparing render times across peers on the true clock
/// measures the real sync error. Commands run one after another, each taking realistic time.
public struct SimulatedPlayback: Sendable {
    /// One piece of what the engine renders, from `start` (true time) until the next piece.
    public enum Piece: Sendable, Hashable {
        /// A still frame at this item time (paused, prerolled, seeking or stalled).
        case frozen(itemTime: Int64)
        /// Moving: item time `item + rate × (engine session time − session)`.
        case line(item: Int64, session: Int64, rate: Double)
    }

    /// A command's outcome, due at true time `at`.
    public struct Completion: Sendable, Hashable {
        public var at: Int64
        public var id: UInt64
        public var outcome: EngineOutcome
    }

    public let profile: FakeEngineProfile
    /// True time → this peer's local monotonic time.
    public let localClock: ClockMapping
    /// Local → session time, as the coordinator set it.
    public private(set) var clockMapping: ClockMapping = .identity
    /// Everything rendered, in start order (true times).
    public private(set) var pieces: [(start: Int64, piece: Piece)] = []
    /// Items loaded so far, with the true time each load finished.
    public private(set) var loads: [(itemID: String, at: Int64)] = []
    private var busyUntil: Int64 = .min
    private var stallPieceStart: Int64?
    private var stallRate: Double = 0
    private var loaded = false

    public init(profile: FakeEngineProfile, localClock: ClockMapping) {
        self.profile = profile
        self.localClock = localClock
    }

    /// The engine's own reading of session time at true time `t`.
    public func engineSessionTime(atTrue t: Int64) -> Int64 {
        // `localClock` maps true time to this peer's local time (a skew on plain nanoseconds).
        let local = LocalInstant(nanoseconds: localClock.sessionTime(atLocal: LocalInstant(nanoseconds: t)).nanoseconds)
        return clockMapping.sessionTime(atLocal: local).nanoseconds
    }

    /// The true time at which the engine's clock reads session time `s`.
    public func trueTime(atEngineSession s: Int64) -> Int64 {
        let local = clockMapping.localTime(atSession: SessionInstant(nanoseconds: s))
        return localClock.localTime(atSession: SessionInstant(nanoseconds: local.nanoseconds)).nanoseconds
    }

    private func piece(atTrue t: Int64) -> (start: Int64, piece: Piece)? {
        var found: (Int64, Piece)?
        for p in pieces {
            if p.start <= t { found = p } else { break }
        }
        return found
    }

    /// The item time shown at true time `t` (a still frame counts), or nil before anything was loaded.
    public func renderedItemTime(atTrue t: Int64) -> Int64? {
        guard let (_, p) = piece(atTrue: t) else { return nil }
        switch p {
        case .frozen(let x): return x
        case .line(let x, let s, let r):
            // Before its scheduled start a line shows its first frame; a sink that lost sync renders too fast.
            let line = ItemProjection(from: SessionInstant(nanoseconds: s), to: ItemTime(nanoseconds: x),
                                      rate: r * (1 + profile.renderDriftPPM / 1_000_000))
            return line(SessionInstant(nanoseconds: max(s, engineSessionTime(atTrue: t)))).nanoseconds
        }
    }

    /// The rate at which the engine is moving at true time `t` (0 when frozen or before a scheduled start).
    public func movingRate(atTrue t: Int64) -> Double {
        guard let (_, p) = piece(atTrue: t), case .line(_, let s, let r) = p else { return 0 }
        return engineSessionTime(atTrue: t) >= s ? r : 0
    }

    /// True times at which the engine started moving, with the item time and rate it started from.
    public var starts: [(trueTime: Int64, itemTime: Int64, rate: Double)] {
        pieces.compactMap { p in
            guard case .line(_, let session, let r) = p.piece else { return nil }
            // The scheduled instant on the current calibration (it may have been refined since the command).
            let start = max(p.start, trueTime(atEngineSession: session))
            return (start, renderedItemTime(atTrue: start) ?? 0, r)
        }
    }

    private mutating func append(_ piece: Piece, at start: Int64) {
        pieces.removeAll { $0.start >= start }
        pieces.append((start, piece))
    }

    /// Runs one engine command issued at true time `now`; returns its outcome and when it is due.
    public mutating func run(_ command: EngineCommand, id: UInt64, atTrue now: Int64) -> Completion? {
        if case .setClockMapping(let m) = command {
            // Calibration changes apply at once (the real engine slews small ones).
            clockMapping = m
            return nil
        }
        let start = max(now, busyUntil)
        let shown = renderedItemTime(atTrue: start)
        let moving = movingRate(atTrue: start) > 0
        switch command {
        case .setClockMapping:
            return nil
        case .load(let itemID):
            let done = start + profile.loadDelay
            loads.append((itemID, done))
            if let shown { append(.frozen(itemTime: shown), at: start) }   // the old item stops at once
            append(.frozen(itemTime: 0), at: done)
            loaded = true
            busyUntil = done
            return Completion(at: done, id: id, outcome: .loaded(profile.media))
        case .prepare(let target, _):
            let x = target.nanoseconds
            guard loaded else { return Completion(at: start, id: id, outcome: .failed(.notLoaded)) }
            if shown == x, !moving {
                busyUntil = start + 1_000_000
                return Completion(at: busyUntil, id: id, outcome: .prepared(itemTime: target))
            }
            if let shown { append(.frozen(itemTime: shown), at: start) }
            let done = start + profile.seekDelay
            append(.frozen(itemTime: x), at: done)
            busyUntil = done
            return Completion(at: done, id: id, outcome: .prepared(itemTime: target))
        case .play(let from, let at, let r):
            let (x, t) = (from.nanoseconds, at.nanoseconds)
            guard loaded else { return Completion(at: start, id: id, outcome: .failed(.notLoaded)) }
            let scheduled = trueTime(atEngineSession: t)
            var ready = start
            if moving, scheduled >= start {
                // Switch lines at the scheduled instant without stopping.
            } else if !moving, shown == x, scheduled >= start {
                // Prerolled where it must start.
            } else {
                if let shown { append(.frozen(itemTime: shown), at: start) }
                ready = start + profile.seekDelay
                if scheduled < ready {
                    // Like a real engine, it never moves a start: prerolled at `x`, it refuses one it missed.
                    append(.frozen(itemTime: x), at: ready)
                    busyUntil = ready
                    return Completion(at: ready, id: id,
                                      outcome: .failed(.startMissed(lateBy: TimeSpan(nanoseconds: ready - scheduled))))
                }
            }
            // From `ready` on, a line shows its first frame until its scheduled instant, then moves.
            append(.line(item: x, session: t, rate: r), at: ready)
            busyUntil = ready
            return Completion(at: ready, id: id, outcome: .playing)
        case .pause:
            let item = shown ?? 0
            append(.frozen(itemTime: item), at: start)
            busyUntil = start
            return Completion(at: start, id: id, outcome: .paused(itemTime: ItemTime(nanoseconds: item)))
        }
    }

    /// Makes a moving engine jump `offset` ns of item time at true time `t` (a sink that lost sync, a decoder that
    /// skipped): it keeps moving, but off the timeline, until someone resynchronises it.
    public mutating func slip(atTrue t: Int64, by offset: Int64) {
        guard let (_, p) = piece(atTrue: t), case .line(let x, let s, let r) = p, movingRate(atTrue: t) > 0 else { return }
        append(.line(item: x + offset, session: s, rate: r), at: t)
    }

    /// Freezes rendering at true time `t` for `duration` (a network or decoder stall); commands wait it out.
    /// Returns the true time of recovery, at which the simulation should call `recover(atTrue:)`.
    public mutating func stall(atTrue t: Int64, duration: Int64) -> Int64 {
        let item = renderedItemTime(atTrue: t) ?? 0
        stallRate = movingRate(atTrue: t)
        append(.frozen(itemTime: item), at: t)
        stallPieceStart = t
        busyUntil = max(busyUntil, t + duration)
        return t + duration
    }

    /// Ends a stall: if nothing else was commanded meanwhile, rendering continues from the frozen frame
    /// (now behind the timeline, as a real player would be).
    public mutating func recover(atTrue t: Int64) {
        defer { stallPieceStart = nil }
        let rate = stallRate
        guard rate > 0, let s = stallPieceStart, let last = pieces.last, last.start == s,
              case .frozen(let item) = last.piece else { return }
        append(.line(item: item, session: engineSessionTime(atTrue: t), rate: rate), at: t)
    }
}
