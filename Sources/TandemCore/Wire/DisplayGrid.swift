/// Where a peer's display refreshes and where its media's frames fall, so that the authority can put the frames of
/// a new line on those refreshes (`AuthorityConfiguration.alignsStartsToDisplays`). A browser page sends it with its
/// link reports: a browser shows each video frame on a refresh of the display, so a line that falls between two
/// refreshes leaves the page that far from the group however well it follows (up to half a refresh).
public struct DisplayGrid: Sendable, Hashable, Codable {
    /// The display's refresh interval.
    public var refresh: TimeSpan
    /// The session time of one of its refreshes (a recent one: the display's clock drifts from the session's).
    public var refreshAt: SessionInstant
    /// How long a frame of the peer's media lasts (item time), when known.
    public var frame: TimeSpan?
    /// The item time of one of its frames, when known; absent, a start's own item time is taken for a frame's.
    public var frameAt: ItemTime?

    public init(refresh: TimeSpan, refreshAt: SessionInstant, frame: TimeSpan? = nil, frameAt: ItemTime? = nil) {
        self.refresh = refresh
        self.refreshAt = refreshAt
        self.frame = frame
        self.frameAt = frameAt
    }

    /// Refresh intervals taken: 240 Hz to 20 Hz. Frames: 1 ms to 1 s. A grid outside them is ignored.
    public static let refreshRange = TimeSpan.milliseconds(4)...TimeSpan.milliseconds(50)
    public static let frameRange = TimeSpan.milliseconds(1)...TimeSpan.seconds(1)

    /// The grid, if its figures are ones a display and media can have, its refresh within `window` of `now` (a
    /// minute: a report's is recent; a grid a list carries may be older, as it goes again only when it moved) and
    /// its frame time within a day of media; else nil.
    func validated(now: SessionInstant, window: TimeSpan = .seconds(60)) -> DisplayGrid? {
        // `magnitude`, not `abs`: a difference of Int64.min (a hostile report) has no absolute value.
        guard Self.refreshRange.contains(refresh),
              (refreshAt - now).nanoseconds.magnitude <= UInt64(window.nanoseconds)
        else { return nil }
        var grid = self
        if let frame, let frameAt, Self.frameRange.contains(frame),
           (0...TimeSpan.seconds(86_400).nanoseconds).contains(frameAt.nanoseconds) {
            grid.frame = frame
        } else {
            grid.frame = nil
            grid.frameAt = nil
        }
        return grid
    }

    /// Where `instant` falls after the last refresh before it (0 up to a refresh).
    func phase(of instant: SessionInstant) -> Int64 {
        let r = refresh.nanoseconds
        let d = (instant - refreshAt).nanoseconds % r
        return d < 0 ? d + r : d
    }

    /// How far `instant` is from the nearest refresh.
    func distance(of instant: SessionInstant) -> Int64 {
        let p = phase(of: instant)
        return min(p, refresh.nanoseconds - p)
    }

    /// The session time, on a line anchored at `anchor` and `itemTime` playing at `rate`, of a frame of the media:
    /// the frame nearest `itemTime` where the frames are known, else `itemTime` itself. Nil where the frames do not
    /// come a whole number of refreshes apart at that rate (then no choice of start puts them all on refreshes).
    func frameInstant(anchor: SessionInstant, itemTime: ItemTime, rate: Double) -> SessionInstant? {
        guard rate >= 0.01, rate <= 100 else { return nil }
        guard let frame, let frameAt, frame.nanoseconds > 0 else { return anchor }
        let onDisplay = Double(frame.nanoseconds) / rate
        let refreshes = (onDisplay / Double(refresh.nanoseconds)).rounded()
        // Within 1 % of a whole number of refreshes (a 30 fps video on a 60 Hz display, at 1×, ½× or 2×).
        guard refreshes >= 1, abs(onDisplay - refreshes * Double(refresh.nanoseconds)) <= onDisplay / 100 else { return nil }
        // How far the nearest frame lies from `itemTime` (within half a frame), from the remainder of their
        // distance: no product of large numbers, whatever item time a start has.
        let (distance, overflow) = itemTime.nanoseconds.subtractingReportingOverflow(frameAt.nanoseconds)
        guard !overflow else { return nil }
        var offset = -(distance % frame.nanoseconds)
        if offset > frame.nanoseconds / 2 { offset -= frame.nanoseconds }
        if offset < -frame.nanoseconds / 2 { offset += frame.nanoseconds }
        return anchor + TimeSpan(nanoseconds: Int64((Double(offset) / rate).rounded()))
    }

    /// Whether the others should hear this grid where they last heard `listed`: a display come, or `listed` would
    /// put a refresh `listedRefreshTolerance` or more from where this grid has one (its interval was refined, or
    /// the display's clock drifted from the session's), or the media's frames changed.
    func hasMoved(from listed: DisplayGrid?) -> Bool {
        guard let listed else { return true }
        let tolerance = Self.listedRefreshTolerance.nanoseconds
        if listed.distance(of: refreshAt) >= tolerance { return true }
        switch (listed.frame, listed.frameAt, frame, frameAt) {
        case (nil, nil, nil, nil):
            return false
        case let (theirs?, theirAt?, mine?, mineAt?):
            // The same frames where the lengths agree within a microsecond and the frames' item times fall within
            // the tolerance of each other (a report names a recent frame, not always the same one).
            guard (theirs - mine).magnitude < .microseconds(1) else { return true }
            let (gap, overflow) = mineAt.nanoseconds.subtractingReportingOverflow(theirAt.nanoseconds)
            guard !overflow else { return true }
            let rest = (gap % mine.nanoseconds + mine.nanoseconds) % mine.nanoseconds
            return min(rest, mine.nanoseconds - rest) >= tolerance
        default:
            return true
        }
    }

    /// The grid with its media's frames counted from `itemTime` (where a page shows the first frame after a seek
    /// there); unchanged where its frames are not known.
    func rebased(at itemTime: ItemTime) -> DisplayGrid {
        guard frame != nil else { return self }
        var grid = self
        grid.frameAt = itemTime
        return grid
    }

    /// How far a listed grid may put a refresh from where the display now has one before the list goes again.
    static var listedRefreshTolerance: TimeSpan { .microseconds(250) }

    /// `start`, on a line from `itemTime` at `rate`, moved later by less than a refresh so that the line's frames
    /// fall on the refreshes of `grids` (see `SessionAuthority.alignedToDisplays`): of several, the least of the
    /// largest distances from a refresh, the earliest of equals. Grids whose frames do not come a whole number of
    /// refreshes apart at `rate` are left out; with none left, `start` itself.
    static func aligned(_ start: SessionInstant, itemTime: ItemTime, rate: Double,
                        grids: [DisplayGrid]) -> SessionInstant {
        let frames = grids.compactMap { grid in
            grid.frameInstant(anchor: start, itemTime: itemTime, rate: rate).map { (grid, $0) }
        }
        var best: (worst: Int64, shift: Int64)?
        for (grid, frame) in frames {
            // The least shift that puts this display's frame on one of its refreshes.
            let phase = grid.phase(of: frame)
            let shift = phase == 0 ? 0 : grid.refresh.nanoseconds - phase
            var worst: Int64 = 0
            for (other, theirs) in frames {
                worst = max(worst, other.distance(of: theirs + TimeSpan(nanoseconds: shift)))
            }
            if best.map({ worst < $0.worst || (worst == $0.worst && shift < $0.shift) }) ?? true { best = (worst, shift) }
        }
        return start + TimeSpan(nanoseconds: best?.shift ?? 0)
    }
}
