/// The clock-sync estimate: this peer's local monotonic time → session time, in nanoseconds.
///
/// A thin wrapper of `LinearMap<LocalInstant, SessionInstant>` (`map`), which does the arithmetic; this type keeps
/// the plain-nanosecond spelling the rest of the package and the wire use. Benchmarks also use it for true
/// monotonic → a peer's skewed local time. `rate` is "to-nanoseconds per from-nanosecond", close to 1.
public struct ClockMapping: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The map on typed axes.
    public var map: LinearMap<LocalInstant, SessionInstant>

    public init(_ map: LinearMap<LocalInstant, SessionInstant>) { self.map = map }

    public init(localAnchor: Int64, sessionAnchor: Int64, rate: Double = 1) {
        map = LinearMap(from: LocalInstant(nanoseconds: localAnchor), to: SessionInstant(nanoseconds: sessionAnchor),
                        rate: rate)
    }

    /// A reading on the source axis (e.g. local time).
    public var localAnchor: Int64 {
        get { map.fromAnchor.nanoseconds }
        set { map.fromAnchor = LocalInstant(nanoseconds: newValue) }
    }
    /// The reading on the target axis (e.g. session time) that corresponds to `localAnchor`.
    public var sessionAnchor: Int64 {
        get { map.toAnchor.nanoseconds }
        set { map.toAnchor = SessionInstant(nanoseconds: newValue) }
    }
    /// Target nanoseconds per source nanosecond.
    public var rate: Double {
        get { map.rate }
        set { map.rate = newValue }
    }

    /// Maps every time to itself.
    public static let identity = ClockMapping(.identity)

    /// A pure offset: `session = local + offset`.
    public static func offset(_ offset: Int64) -> ClockMapping {
        ClockMapping(localAnchor: 0, sessionAnchor: offset, rate: 1)
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
                                                         to: LocalInstant(nanoseconds: inner.sessionAnchor),
                                                         rate: inner.rate)
        return ClockMapping(map.composed(after: skew))
    }

    /// The inverse map (target → source).
    public var inverted: ClockMapping {
        ClockMapping(localAnchor: sessionAnchor, sessionAnchor: localAnchor, rate: 1 / rate)
    }

    /// The same map re-anchored at source time `local` (keeps numbers small and precise).
    public func reanchored(atLocal local: Int64) -> ClockMapping {
        ClockMapping(map.reanchored(at: LocalInstant(nanoseconds: local)))
    }

    private enum CodingKeys: String, CodingKey { case localAnchor, sessionAnchor, rate }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(localAnchor: try container.decode(Int64.self, forKey: .localAnchor),
                  sessionAnchor: try container.decode(Int64.self, forKey: .sessionAnchor),
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
        return "ClockMapping(offset \(sessionAnchor &- localAnchor) ns at \(localAnchor), \(ppm) ppm)"
    }
}
