import Foundation

/// A request the session's authority did not carry out: what a caller can act on (`code`), which kind of request it
/// was (`request`), and words a user can read (`reason`). It travels in `ServerMessage.refused`; the library's calls
/// throw it where they can see it (`GroupSessionError.refused`), and `GroupSession.refusals` carries the others.
public struct Refusal: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    /// What kind of refusal (an open set: a newer authority's codes decode too).
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Only the host may do this (`SessionRules` says what everyone may).
        public static let notHost = Code(rawValue: "notHost")
        /// Nothing is shared before joining: call `join()` first.
        public static let notJoined = Code(rawValue: "notJoined")
        /// Over the sender's message rate: send less often.
        public static let rateLimited = Code(rawValue: "rateLimited")
        /// Larger than a bound (a message, a fingerprint, the queue's bytes).
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// A count bound reached (queue items, suspensions, recipients).
        public static let limit = Code(rawValue: "limit")
        /// The request makes no sense now (no such entry, an empty notice, nothing to add).
        public static let invalid = Code(rawValue: "invalid")
        /// From an authority that gives no code.
        public static let other = Code(rawValue: "other")
        public var description: String { rawValue }
    }

    /// Which kind of request was refused (an open set, as `Code`).
    public struct Request: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let setActivity = Request(rawValue: "setActivity")
        public static let end = Request(rawValue: "end")
        public static let queue = Request(rawValue: "queue")
        public static let notice = Request(rawValue: "notice")
        public static let appMessage = Request(rawValue: "appMessage")
        public static let journal = Request(rawValue: "journal")
        public static let suspension = Request(rawValue: "suspension")
        public static let timeline = Request(rawValue: "timeline")
        public var description: String { rawValue }

        /// The kind of `message`, for the requests an authority may refuse (nil for the others).
        public init?(_ message: ClientMessage) {
            switch message {
            case .setActivity: self = .setActivity
            case .end: self = .end
            case .queue: self = .queue
            case .notice: self = .notice
            case .appMessage: self = .appMessage
            case .journal: self = .journal
            case .suspension: self = .suspension
            case .timelineRequest: self = .timeline
            default: return nil
            }
        }
    }

    public var code: Code
    /// The request refused (nil: the authority did not say).
    public var request: Request?
    public var reason: String

    public init(_ code: Code, _ reason: String, request: Request? = nil) {
        self.code = code
        self.reason = reason
        self.request = request
    }

    public init(_ code: Code, request: Request?, _ reason: String) {
        self.init(code, reason, request: request)
    }

    /// This refusal, naming `request`.
    public func requesting(_ request: Request) -> Refusal {
        var copy = self
        copy.request = request
        return copy
    }

    public var description: String { reason }

    /// Nothing is shared before joining.
    public static let joinFirst = Refusal(.notJoined, "join the session first: nothing is shared before you join")

    /// Only the host may `what` ("change the activity").
    public static func onlyTheHost(_ what: String, request: Request, otherwise: String? = nil) -> Refusal {
        Refusal(.notHost, "only the host can \(what)" + (otherwise.map { "; \($0)" } ?? ""), request: request)
    }
}

/// What a session lets participants other than the host do: the authority decides with these and announces them in
/// its welcome (`SessionSnapshot.rules`), so a participant's library refuses what the authority would, before
/// sending, with the same words. One home for each of these decisions.
public struct SessionRules: Hashable, Sendable, Codable {
    /// Anyone may end the session for everyone (otherwise the host only).
    public var everyoneMayEndSession: Bool
    /// Anyone may change the activity and edit the queue (otherwise the host only; moving the group along the
    /// queue is everyone's).
    public var everyoneMayChangeActivity: Bool
    /// Anyone may remove others' attachments (otherwise the host, and each owner its own).
    public var everyoneMayRemoveAttachments: Bool

    public init(everyoneMayEndSession: Bool = false, everyoneMayChangeActivity: Bool = false,
                everyoneMayRemoveAttachments: Bool = false) {
        self.everyoneMayEndSession = everyoneMayEndSession
        self.everyoneMayChangeActivity = everyoneMayChangeActivity
        self.everyoneMayRemoveAttachments = everyoneMayRemoveAttachments
    }

    /// Whether a participant (`isHost` or not) may end the session for everyone; nil when it may.
    public func refusingEnd(isHost: Bool) -> Refusal? {
        isHost || everyoneMayEndSession ? nil
            : .onlyTheHost("end the session for everyone", request: .end, otherwise: "leave with q instead")
    }

    /// Whether a participant may change the activity; nil when it may.
    public func refusingActivityChange(isHost: Bool) -> Refusal? {
        isHost || everyoneMayChangeActivity ? nil : .onlyTheHost("change the activity", request: .setActivity)
    }

    /// Whether a participant may edit the queue (`what`: "add to the queue"…); nil when it may.
    public func refusingQueueEdit(_ what: String, isHost: Bool) -> Refusal? {
        isHost || everyoneMayChangeActivity ? nil : .onlyTheHost(what, request: .queue)
    }
}
