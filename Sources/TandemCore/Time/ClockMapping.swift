/// The clock-sync estimate: this peer's local monotonic time → session time.
///
/// A thin wrapper of `LinearMap<LocalInstant, SessionInstant>` (`map`), which does the arithmetic; it encodes as
/// `localAnchor`, `sessionAnchor` (bare nanoseconds) and `rate`. Benchmarks also use it for true monotonic → a
/// peer's skewed local time. `rate` is "to-nanoseconds per from-nanosecond", close to 1.
public struct ClockMapping: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The map on typed axes.
    public var map: LinearMap<LocalInstant, SessionInstant>

    public init(_ map: LinearMap<LocalInstant, SessionInstant>) { self.map = map }

    public init(localAnchor: LocalInstant, sessionAnchor: SessionInstant, rate: Double = 1) {
        map = LinearMap(from: localAnchor, to: sessionAnchor, rate: rate)
    }

    /// A reading on the source axis (e.g. local time).
    public var localAnchor: LocalInstant {
        get { map.fromAnchor }
        set { map.fromAnchor = newValue }
    }
    /// The reading on the target axis (e.g. session time) that corresponds to `localAnchor`.
    public var sessionAnchor: SessionInstant {
        get { map.toAnchor }
        set { map.toAnchor = newValue }
    }
    /// Target nanoseconds per source nanosecond.
    public var rate: Double {
        get { map.rate }
        set { map.rate = newValue }
    }

    /// Maps every time to itself.
    public static let identity = ClockMapping(.identity)

    /// A pure offset: `session = local + offset`.
    public static func offset(_ offset: TimeSpan) -> ClockMapping {
        ClockMapping(localAnchor: .zero, sessionAnchor: .zero + offset, rate: 1)
    }

    /// The target-axis time at source time `local`.
    public func sessionTime(atLocal local: LocalInstant) -> SessionInstant { map(local) }

    /// The source-axis time at target time `session`.
    public func localTime(atSession session: SessionInstant) -> LocalInstant { map.inverse(session) }

    /// The session time at a local instant.
    public func callAsFunction(_ local: LocalInstant) -> SessionInstant { map(local) }

    /// Offset `session − local` at source time `local`.
    public func offset(atLocal local: LocalInstant) -> TimeSpan { map.offset(at: local) }

    /// `self ∘ inner`: first `inner`, then `self`.
    public func composed(after inner: ClockMapping) -> ClockMapping {
        // `inner` is read as local → local (a skew), which is how benchmarks use it.
        let skew = LinearMap<LocalInstant, LocalInstant>(from: inner.map.fromAnchor,
                                                         to: LocalInstant(nanoseconds: inner.sessionAnchor.nanoseconds),
                                                         rate: inner.rate)
        return ClockMapping(map.composed(after: skew))
    }

    /// The inverse map (target → source).
    public var inverted: ClockMapping {
        ClockMapping(localAnchor: LocalInstant(nanoseconds: sessionAnchor.nanoseconds),
                     sessionAnchor: SessionInstant(nanoseconds: localAnchor.nanoseconds), rate: 1 / rate)
    }

    /// The same map re-anchored at source time `local` (keeps numbers small and precise).
    public func reanchored(atLocal local: LocalInstant) -> ClockMapping {
        ClockMapping(map.reanchored(at: local))
    }

    private enum CodingKeys: String, CodingKey { case localAnchor, sessionAnchor, rate }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(localAnchor: try container.decode(LocalInstant.self, forKey: .localAnchor),
                  sessionAnchor: try container.decode(SessionInstant.self, forKey: .sessionAnchor),
                  rate: try container.decode(Double.self, forKey: .rate))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(localAnchor, forKey: .localAnchor)
        try container.encode(sessionAnchor, forKey: .sessionAnchor)
        try container.encode(rate, forKey: .rate)
    }

    public var description: String {
        let ppm = (rate - 1) * 1_000_000
        return "ClockMapping(offset \(sessionAnchor.nanoseconds &- localAnchor.nanoseconds) ns at \(localAnchor.nanoseconds), \(ppm) ppm)"
    }
}
