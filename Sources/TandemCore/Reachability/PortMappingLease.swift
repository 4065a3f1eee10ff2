/// When a port mapping on the router is renewed, and whether it still holds: renewed at half of what the router
/// granted; a failed renewal is tried again after 5 s, doubling up to a minute, until the lease runs out, when the
/// mapping counts as lost (and is still tried, so that a router back from a restart maps again). A permanent lease
/// (UPnP routers that grant only those) is renewed every `permanentRenewal` all the same, for the same reason.
public struct PortMappingLease: Sendable, Equatable {
    public static let permanentRenewal: Duration = .seconds(600)
    public static let firstRetry: Duration = .seconds(5)
    public static let longestRetry: Duration = .seconds(60)

    public private(set) var expiry: LocalInstant?
    public private(set) var nextRenewal: LocalInstant
    public private(set) var failures = 0

    /// A mapping granted for `lifetime` at `now` (`.zero`: permanent).
    public init(granted lifetime: Duration, at now: LocalInstant) {
        (expiry, nextRenewal) = Self.schedule(lifetime, at: now)
    }

    /// Whether the mapping still holds at `now` (a permanent one always does until a renewal fails).
    public func holds(at now: LocalInstant) -> Bool {
        guard let expiry else { return failures == 0 }
        return now < expiry
    }

    public mutating func renewed(granted lifetime: Duration, at now: LocalInstant) {
        failures = 0
        (expiry, nextRenewal) = Self.schedule(lifetime, at: now)
    }

    public mutating func renewalFailed(at now: LocalInstant) {
        failures += 1
        var wait = Self.firstRetry
        for _ in 1..<min(failures, 8) { wait = min(wait * 2, Self.longestRetry) }
        nextRenewal = now.advanced(by: wait)
        if expiry == nil { expiry = now }
    }

    private static func schedule(_ lifetime: Duration, at now: LocalInstant) -> (LocalInstant?, LocalInstant) {
        guard lifetime > .zero else { return (nil, now.advanced(by: permanentRenewal)) }
        return (now.advanced(by: lifetime), now.advanced(by: max(lifetime / 2, .seconds(1))))
    }
}
