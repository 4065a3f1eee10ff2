import Foundation

/// Something a participant did that an app wants shown, as SharePlay's `GroupSessionEvent`: who (`originator`), what
/// (`action`) and where in the app (`url`, nil for none). `GroupSession.showNotice(_:)` shows it on this device only,
/// as SharePlay shows it in this device's system UI; `showNotice(_ text:)` is the one that reaches everyone.
public struct GroupSessionEvent: Hashable, Sendable {
    /// What happened (an open set: `init(rawValue:)` names an app's own action, shown as it is written).
    public struct Action: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let play = Action(rawValue: "played")
        public static let pause = Action(rawValue: "paused")
        public static let seek = Action(rawValue: "moved the playback position")
        public static let changeRate = Action(rawValue: "changed the playback speed")
        public static let changeActivity = Action(rawValue: "changed the activity")
        public static let join = Action(rawValue: "joined")
        public static let leave = Action(rawValue: "left")
        public var description: String { rawValue }

        /// The kind of notice it is shown as.
        var noticeKind: Notice.Kind {
            switch self {
            case .play: .played
            case .pause: .paused
            case .seek: .seeked
            case .changeRate: .rateChanged
            case .changeActivity: .activityChanged
            case .join: .joined
            case .leave: .left
            default: .app
            }
        }
    }

    public var originator: Participant
    public var action: Action
    public var url: URL?

    public init(originator: Participant, action: Action, url: URL?) {
        self.originator = originator
        self.action = action
        self.url = url
    }
}

extension GroupSession {
    /// Shows `event` in this participant's own `notices` (SharePlay shows it on this device only; nothing is sent):
    /// a notice of the action's kind naming its originator ("bob paused"), with the event's `url`, stamped with the
    /// session time now (the link's clock estimate; the local clock's reading before there is one).
    public func showNotice(_ event: GroupSessionEvent) {
        let name = TextBounds.line(event.originator.name, maxBytes: TextBounds.maxNoticeBytes / 2)
        let text = TextBounds.line("\(name) \(event.action.rawValue)", maxBytes: TextBounds.maxNoticeBytes)
        let local = SystemMonotonicClock().now
        let now = link.clockMapping()?.sessionTime(atLocal: local) ?? SessionInstant(nanoseconds: local.nanoseconds)
        showLocally(Notice(kind: event.action.noticeKind, participant: event.originator.id, text: text,
                           sessionTime: now, url: event.url))
    }
}
