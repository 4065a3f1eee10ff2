import Foundation

/// What a relay lets one session's members make it hold and pass of the host's shared media
/// (`serve --relay-media`); the default of each is the one SECURITY.md documents.
package struct MediaPassageLimits: Sendable, Hashable {
    /// The session's bandwidth cap: bytes of ranges per second, all members together.
    package var bytesPerSecond: Int = 2_000_000
    /// The largest range one request may ask for (a request is answered by one chunk).
    package var maxRequestBytes: Int = 64 * 1024
    /// Requests one member may have open (waiting for the cap, or for the host's answer).
    package var openPerMember: Int = 16
    /// Requests all members of a session may have open.
    package var openPerSession: Int = 64
    /// How long a request may stay open; then it is answered `timedOut` and its place freed.
    package var requestTimeout: TimeSpan = .seconds(10)

    package init() {}
}

/// One session's passage of shared media through a relay, as a pure state machine: which requests go on to the
/// host and when (a token bucket of `bytesPerSecond` holding at most one request's bytes, so the bytes passed in
/// any window of T seconds are at most `bytesPerSecond × T + maxRequestBytes`), which are refused, and which of the
/// host's chunks are passed to whom. The relay (`MediaRelay` in TandemNet) carries out its actions.
package struct MediaPassage: Sendable {
    /// A request, by its requester and the requester's number for it.
    package struct Key: Hashable, Sendable {
        package var member: ParticipantID
        package var id: UInt32
        package init(member: ParticipantID, id: UInt32) {
            self.member = member
            self.id = id
        }
    }

    package enum Refusal: Sendable, Equatable {
        /// Too many requests open for this member or this session.
        case busy
        /// A length of 0 or over `maxRequestBytes`, or a number already open.
        case badRequest
        /// Open for longer than `requestTimeout`.
        case timedOut
    }

    package enum Action: Sendable, Equatable {
        /// Pass the request on to the host now.
        case forward(Key)
        /// Answer the requester with this refusal.
        case refuse(Key, Refusal)
        /// Call `advance` again at this time.
        case wakeUp(at: LocalInstant)
    }

    package let limits: MediaPassageLimits
    private struct Open {
        var length: Int
        var since: LocalInstant
        var forwarded: Bool
    }
    private var open: [Key: Open] = [:]
    private var waiting: [Key] = []
    private var tokens: Double
    private var refilledAt: LocalInstant

    package init(limits: MediaPassageLimits, now: LocalInstant) {
        self.limits = limits
        tokens = Double(limits.maxRequestBytes)
        refilledAt = now
    }

    /// Requests open now (waiting or forwarded), in all and for `member`.
    package var openCount: Int { open.count }
    package func openCount(for member: ParticipantID) -> Int { open.keys.count(where: { $0.member == member }) }

    /// A member asks for `length` bytes.
    package mutating func request(_ key: Key, length: Int, now: LocalInstant) -> [Action] {
        guard length > 0, length <= limits.maxRequestBytes, open[key] == nil else { return [.refuse(key, .badRequest)] }
        guard open.count < limits.openPerSession, openCount(for: key.member) < limits.openPerMember else {
            return [.refuse(key, .busy)]
        }
        open[key] = Open(length: length, since: now, forwarded: false)
        waiting.append(key)
        return advance(now: now)
    }

    /// The host answered `key`: true when that request was forwarded and is still open (the chunk goes on to its
    /// requester and the request is closed), false when the chunk is to be dropped.
    package mutating func answered(_ key: Key) -> Bool {
        guard open[key]?.forwarded == true else { return false }
        open[key] = nil
        return true
    }

    /// Forgets `member`'s requests (it left): what the host still sends for them is dropped.
    package mutating func forget(_ member: ParticipantID) {
        open = open.filter { $0.key.member != member }
        waiting.removeAll { $0.member == member }
    }

    /// Times out what has been open too long and forwards what the cap allows, in order of arrival.
    package mutating func advance(now: LocalInstant) -> [Action] {
        var actions: [Action] = []
        let elapsed = max(0, (now - refilledAt).seconds)
        tokens = min(Double(limits.maxRequestBytes), tokens + elapsed * Double(limits.bytesPerSecond))
        refilledAt = now
        for (key, request) in open where now - request.since >= limits.requestTimeout {
            open[key] = nil
            actions.append(.refuse(key, .timedOut))
        }
        waiting.removeAll { open[$0] == nil }
        while let key = waiting.first, let request = open[key], Double(request.length) <= tokens {
            waiting.removeFirst()
            tokens -= Double(request.length)
            open[key]?.forwarded = true
            actions.append(.forward(key))
        }
        var wake: LocalInstant?
        if let key = waiting.first, let request = open[key] {
            let missing = Double(request.length) - tokens
            wake = now + .seconds(missing / Double(max(1, limits.bytesPerSecond)))
        }
        if let oldest = open.values.map(\.since).min() {
            let expiry = oldest + limits.requestTimeout
            wake = min(wake ?? expiry, expiry)
        }
        if let wake { actions.append(.wakeUp(at: wake)) }
        return actions
    }
}
