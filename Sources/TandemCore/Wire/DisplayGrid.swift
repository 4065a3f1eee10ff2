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

    /// The grid, if its figures are ones a display and media can have, its refresh within a minute of `now` and its
    /// frame time within a day of media; else nil.
    func validated(now: SessionInstant) -> DisplayGrid? {
        // `magnitude`, not `abs`: a difference of Int64.min (a hostile report) has no absolute value.
        guard Self.refreshRange.contains(refresh),
              (refreshAt - now).nanoseconds.magnitude <= UInt64(TimeSpan.seconds(60).nanoseconds)
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
}
