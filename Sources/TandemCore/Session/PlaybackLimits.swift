import Foundation

/// The bounds of what a participant may ask of the group's playback: the rates it may play at, what one rate step and
/// one seek step are, and where a seek beyond the item lands. The authority holds them (`AuthorityConfiguration
/// .playback`), enforces them, and announces them in its welcome (`SessionSnapshot.playbackLimits`), so that every
/// participant's coordinator (and the browser page) decides the user's intents with the same numbers; a participant of
/// an authority that announces none uses `PlaybackLimits()`. One home for each of these decisions.
///
/// What the authority does with a request outside them: a rate outside `minimumRate...maximumRate` is refused
/// (`Refusal.Code.invalid`, the request `.timeline`), because a speed the group did not ask for would surprise it; a
/// seek before 0 or past the item is clamped (`clampedSeek(_:itemDuration:)`), because a step from a position a
/// moment old may overshoot by a little and should still move the group.
public struct PlaybackLimits: Hashable, Sendable, Codable {
    /// The slowest rate the group may play at (1 is normal speed).
    public var minimumRate: Double
    /// The fastest rate the group may play at.
    public var maximumRate: Double
    /// The rates a rate step (`[` and `]`) moves between, ascending, within the range.
    public var rateSteps: [Double]
    /// What a small seek step moves (the left and right arrow keys).
    public var smallSeekStep: TimeSpan
    /// What a large seek step moves (the up and down arrow keys).
    public var largeSeekStep: TimeSpan
    /// How far before the end of the item a seek past it lands (so the group sees the last moments rather than an
    /// immediate end of the item).
    public var endMargin: TimeSpan

    public init(minimumRate: Double = 0.25, maximumRate: Double = 4, rateSteps: [Double] = [0.5, 0.75, 1, 1.25, 1.5, 2],
                smallSeekStep: TimeSpan = .seconds(10), largeSeekStep: TimeSpan = .seconds(60),
                endMargin: TimeSpan = .seconds(1)) {
        self.minimumRate = minimumRate
        self.maximumRate = maximumRate
        self.rateSteps = rateSteps
        self.smallSeekStep = smallSeekStep
        self.largeSeekStep = largeSeekStep
        self.endMargin = endMargin
    }

    private enum CodingKeys: String, CodingKey {
        case minimumRate, maximumRate, rateSteps, smallSeekStep, largeSeekStep, endMargin
    }

    /// A field an authority leaves out keeps its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = PlaybackLimits()
        minimumRate = try c.decodeIfPresent(Double.self, forKey: .minimumRate) ?? defaults.minimumRate
        maximumRate = try c.decodeIfPresent(Double.self, forKey: .maximumRate) ?? defaults.maximumRate
        rateSteps = try c.decodeIfPresent([Double].self, forKey: .rateSteps) ?? defaults.rateSteps
        smallSeekStep = try c.decodeIfPresent(TimeSpan.self, forKey: .smallSeekStep) ?? defaults.smallSeekStep
        largeSeekStep = try c.decodeIfPresent(TimeSpan.self, forKey: .largeSeekStep) ?? defaults.largeSeekStep
        endMargin = try c.decodeIfPresent(TimeSpan.self, forKey: .endMargin) ?? defaults.endMargin
    }

    /// One seek step: the arrow keys.
    public enum SeekStep: String, Hashable, Sendable, Codable, CaseIterable {
        case back, forward, farBack, farForward
    }

    /// How far `step` moves (negative: back).
    public func offset(of step: SeekStep) -> TimeSpan {
        switch step {
        case .back: -smallSeekStep
        case .forward: smallSeekStep
        case .farBack: -largeSeekStep
        case .farForward: largeSeekStep
        }
    }

    /// Whether the group may play at `rate`; nil when it may, else the refusal, in the words the authority uses. A
    /// rate of 0 or less is refused whatever the range says (a player cannot play at it).
    public func refusingRate(_ rate: Double) -> Refusal? {
        guard rate.isFinite, rate > 0, rate >= minimumRate, rate <= maximumRate else {
            return Refusal(.invalid, request: .timeline, "rate \(Self.rateText(rate)) is out of range — use a rate from "
                           + "\(Self.rateText(minimumRate)) to \(Self.rateText(maximumRate)) (1 is normal speed)")
        }
        return nil
    }

    /// The next rate step up (or down) from `current`; a refusal at the end of the steps.
    public func steppedRate(from current: Double, up: Bool) -> Result<Double, Refusal> {
        let steps = rateSteps.filter { refusingRate($0) == nil }.sorted()
        let next = up ? steps.first { $0 > current + 1e-9 } : steps.last { $0 < current - 1e-9 }
        if let next { return .success(next) }
        let end = (up ? steps.last : steps.first).map { " (\(Self.rateText($0))×)" } ?? ""
        return .failure(Refusal(.invalid, request: .timeline,
                                "already at the \(up ? "fastest" : "slowest") rate\(end)"))
    }

    /// Where a seek to `itemTime` lands: not before 0, and not past `endMargin` before the end of an item of
    /// `itemDuration` (when known).
    public func clampedSeek(_ itemTime: ItemTime, itemDuration: TimeSpan?) -> ItemTime {
        var target = max(.zero, itemTime)
        if let itemDuration { target = min(target, max(.zero, .zero + itemDuration - endMargin)) }
        return target
    }

    /// Whether a seek a user asked for by its time (not a step) makes sense for an item of `itemDuration`: nil when it
    /// does; a refusal that says why for a time before 0 or at or past the end.
    public func refusingSeek(to itemTime: ItemTime, itemDuration: TimeSpan?) -> Refusal? {
        if itemTime < .zero {
            return Refusal(.invalid, request: .timeline, "cannot seek before the start — use a time of 0 or more seconds")
        }
        if let itemDuration, itemTime >= .zero + itemDuration {
            return Refusal(.invalid, request: .timeline, String(format: "cannot seek to %.1f s: the item lasts %.1f s",
                                                                itemTime.seconds, itemDuration.seconds))
        }
        return nil
    }

    /// "0.25", "4", "1.5": a rate as people write it.
    static func rateText(_ rate: Double) -> String { String(format: "%g", rate) }
}
