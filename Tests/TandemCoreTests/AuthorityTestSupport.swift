import Foundation
@testable import TandemCore

/// Drives a `SessionAuthority` with a manual session clock and collects what it asks the transport to do.
struct AuthorityHarness {
    typealias Action = SessionAuthority.Action

    var authority: SessionAuthority
    /// Session time.
    var now: SessionInstant = .seconds(1)

    init(configuration: AuthorityConfiguration = AuthorityConfiguration(),
         activity: ActivityEnvelope? = AuthorityHarness.movie) {
        authority = SessionAuthority(sessionID: "s1", activity: activity, configuration: configuration, now: now)
    }

    static let movie = ActivityEnvelope(activityIdentifier: "WatchTogether",
                                        metadata: GroupActivityMetadata(title: "Movie", type: .watchTogether),
                                        payload: Data("{}".utf8), itemID: "movie")

    static func info(duration: TimeSpan = .seconds(5400), contentID: String? = "abc") -> MediaInfo {
        MediaInfo(duration: duration, isSeekable: true, hasVideo: true, hasAudio: true, contentID: contentID)
    }

    mutating func advance(ms: Double) { now += .milliseconds(ms) }

    /// Joins and expects to be admitted.
    @discardableResult
    mutating func join(_ name: String, preroll: TimeSpan = .zero, host: Bool = false,
                       reconnectAs: ParticipantID? = nil, token: String? = nil) -> (ParticipantID, [Action]) {
        nextToken += 1
        switch authority.join(name: name, reconnectAs: reconnectAs, reconnectToken: token, prerollEstimate: preroll,
                              wantsHost: host, newReconnectToken: "token-\(nextToken)", now: now) {
        case .joined(let id, let actions): return (id, actions)
        case .refused(let reason): fatalError("join refused: \(reason)")
        }
    }

    /// The reconnect token the authority gave `id` (its welcome carries it).
    func token(of id: ParticipantID) -> String { authority.members[id]!.reconnectToken }

    /// Joins and reports ready with `info`.
    @discardableResult
    mutating func joinReady(_ name: String, preroll: TimeSpan = .zero, host: Bool = false,
                            info: MediaInfo = AuthorityHarness.info()) -> ParticipantID {
        let (id, _) = join(name, preroll: preroll, host: host)
        send(.readiness(.ready(info)), from: id)
        return id
    }

    @discardableResult
    mutating func send(_ message: ClientMessage, from id: ParticipantID) -> [Action] {
        authority.receive(message, from: id, now: now)
    }

    private var nextRequestID: UInt64 = 1
    /// Reconnect tokens handed out are "token-1", "token-2", … (one number per join call).
    private var nextToken = 0

    @discardableResult
    mutating func request(_ command: TimelineRequest.Command, from id: ParticipantID,
                          proposing start: SessionInstant? = nil) -> [Action] {
        var request = TimelineRequest(requestID: nextRequestID, command: command,
                                      basedOnGeneration: authority.timeline.generation, requestedAtSessionTime: now)
        request.proposedStart = start
        nextRequestID += 1
        return send(.timelineRequest(request), from: id)
    }

    @discardableResult
    mutating func fireTimer() -> [Action] { authority.timerFired(now: now) }
}

extension Array where Element == SessionAuthority.Action {
    func messages(to id: ParticipantID) -> [ServerMessage] {
        compactMap { if case .send(let message, let to) = $0, to == id { return message } else { return nil } }
    }

    func timelines(to id: ParticipantID) -> [Timeline] {
        messages(to: id).compactMap { if case .timeline(let t) = $0 { return t } else { return nil } }
    }

    func notices(to id: ParticipantID) -> [Notice] {
        messages(to: id).compactMap { if case .notice(let n) = $0 { return n } else { return nil } }
    }

    func notices(_ kind: Notice.Kind, to id: ParticipantID) -> [Notice] { notices(to: id).filter { $0.kind == kind } }

    func recipients(where matches: (ServerMessage) -> Bool) -> Set<ParticipantID> {
        Set(compactMap { if case .send(let message, let to) = $0, matches(message) { return to } else { return nil } })
    }

    /// The welcome snapshot sent to `id`, if any.
    func welcome(to id: ParticipantID) -> SessionSnapshot? {
        for case .welcome(let snapshot) in messages(to: id) { return snapshot }
        return nil
    }

    /// Refusals sent to `id`.
    func refusals(to id: ParticipantID) -> [String] {
        messages(to: id).compactMap { if case .refused(let reason, _, _) = $0 { return reason } else { return nil } }
    }

    var wakeUps: [SessionInstant] { compactMap { if case .wakeUp(let t) = $0 { return t } else { return nil } } }

    var closes: [ParticipantID: InvalidationReason] {
        var result: [ParticipantID: InvalidationReason] = [:]
        for case .close(let id, let reason) in self { result[id] = reason }
        return result
    }

    var sessionEnd: InvalidationReason? {
        for case .sessionEnded(let reason) in self { return reason }
        return nil
    }
}

extension AuthorityConfiguration {
    /// Seeks and rate changes on a schedule (`optimisticStarts`).
    static var withScheduledStarts: AuthorityConfiguration {
        var configuration = AuthorityConfiguration()
        configuration.optimisticStarts = true
        return configuration
    }

    /// Seeks and rate changes that stop the group until everyone has said it is prepared (no scheduled starts).
    static var withPrepareRounds: AuthorityConfiguration {
        var configuration = AuthorityConfiguration()
        configuration.optimisticStarts = false
        return configuration
    }
}

extension Timeline {
    var waitingFor: [ParticipantID: [SuspensionReason]]? {
        if case .waiting(let who) = status { return who } else { return nil }
    }
    var isPaused: Bool { if case .paused = status { return true } else { return false } }
}
