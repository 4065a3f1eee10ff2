import Foundation
import Synchronization

/// One live session of an activity, as SharePlay's `GroupSession`: its state, participants and activity, over a
/// `SessionLink` to the session's authority.
///
/// A session over a link that entered waiting (`TandemClient.Options.waitsToJoin`, the links `sessions(invites:)`
/// makes) starts `.waiting`: the authority sends it nothing but the activity and the participants until `join()`
/// makes it `.joined`. A link that joined as it connected gives a session that is `.joined` from the start (the
/// authority already counts it in; `join()` then does nothing): the state always says what the authority does. It
/// ends `.invalidated(reason:)` when the participant leaves, someone ends it for everyone, or the connection is
/// gone. Every property can be observed as an `AsyncStream` that starts with the current value.
///
/// It follows the authority while `run()` runs: run it in a task its owner owns; `join()` and the `activity`
/// setter start it themselves when nobody has (so a forgotten `run()` costs nothing but the task's ownership).
///
/// Requests the authority may refuse throw `GroupSessionError`: what the session's rules (`rules`, announced in the
/// welcome) refuse is thrown before anything is sent, with the authority's words; what the authority still refuses
/// (a bound, a race with a change of host) arrives on `refusals`, and a refused activity change puts the group's
/// activity back.
public final class GroupSession<Activity: GroupActivity>: Sendable, Identifiable {
    /// Where this participant stands in the session.
    public enum State: Sendable, Hashable {
        case waiting
        case joined
        /// The session is over for this participant; the reason says why in words a user can read.
        case invalidated(reason: InvalidationReason)
    }

    /// Errors from changing the session.
    public typealias SessionError = GroupSessionError

    /// The connection to the authority; messengers, journals and coordinators of this session use it too.
    public let link: any SessionLink
    /// This participant.
    public let localParticipant: Participant
    /// The session's id.
    public let id: String
    /// Whether this peer started the session (`activate`), rather than being invited to it.
    public let isLocallyInitiated: Bool

    private let stateBox: FanOut<State>
    private let participantsBox: FanOut<Set<Participant>>
    private let activityBox: FanOut<ActivityEnvelope>
    private let noticesBox: FanOut<Notice>
    let queueBox: FanOut<SessionQueue>
    private let refusalsBox = FanOut<Refusal>(replay: .none, buffering: .newest(64))
    /// What the authority has said about roles and rules, and the activity before this participant's last proposal
    /// (put back when the authority refuses it).
    private let standing: GroupSessionStanding
    /// The link's messages, subscribed to on creation so that nothing sent after the welcome is missed; `run()`
    /// consumes them.
    private let upstream: Mutex<AsyncStream<ServerMessage>?>
    /// Activities the `activity` setter proposes; `run()` sends them.
    private let proposals = FanOut<Activity>(replay: .backlogToFirstSubscriber)
    /// Requests `join()` makes; `run()` sends them in order.
    private let outbox = FanOut<ClientMessage>(replay: .backlogToFirstSubscriber)

    /// A session over `link`, starting from the link's welcome snapshot. Nothing follows the link until `run()`.
    public init(link: any SessionLink, isLocallyInitiated: Bool = false) {
        self.link = link
        self.isLocallyInitiated = isLocallyInitiated
        let welcome = link.welcome
        id = welcome.sessionID
        localParticipant = welcome.localParticipant
        let joinedAlready = welcome.participants.contains { $0.participant.id == welcome.localParticipant.id && $0.hasJoined }
        stateBox = FanOut(initial: joinedAlready ? .joined : .waiting, replay: .latest)
        standing = GroupSessionStanding(rules: welcome.rules ?? SessionRules(),
                                        hostIDs: Set(welcome.participants.filter(\.isHost).map(\.participant.id)))
        participantsBox = FanOut(initial: Self.joined(welcome.participants), replay: .latest)
        activityBox = FanOut(initial: welcome.activity, replay: .latest)
        noticesBox = FanOut(replay: .none, buffering: .newest(256))
        queueBox = FanOut(initial: welcome.queue ?? SessionQueue(), replay: .latest)
        upstream = Mutex(link.serverMessages())
    }

    /// Follows the session: applies what the authority sends to the state, participants, activity and notices,
    /// and sends the activities the `activity` setter proposes. Returns when the session is invalidated (or the
    /// calling task is cancelled); run it for as long as the session is in use, in a task its owner owns, as
    /// `PlaybackCoordinator.run()`. Called again while it runs (or after `join()` started it), it waits for the
    /// session's end (or the caller's cancellation) without following twice.
    public func run() async {
        standing.withLock { $0.following = true }
        guard let upstream = upstream.withLock({ u in defer { u = nil }; return u }) else {
            for await state in states { if case .invalidated = state { return } }
            return
        }
        let proposed = proposals.subscribe()
        let requests = outbox.subscribe()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await activity in proposed { try? await setActivity(activity) }
            }
            group.addTask { [self] in
                for await request in requests { try? await send(request) }
            }
            group.addTask { [self] in
                await follow(upstream)
            }
            // The session is over when the link's messages end: stop sending proposals.
            _ = await group.next()
            group.cancelAll()
        }
        proposals.finish()
        outbox.finish()
    }

    /// Participants who have joined (one that entered waiting is listed once it joins).
    private static func joined(_ states: [ParticipantState]) -> Set<Participant> {
        Set(states.filter(\.hasJoined).map(\.participant))
    }

    private func follow(_ upstream: AsyncStream<ServerMessage>) async {
        for await message in upstream {
            switch message {
            case .welcome(let snapshot):
                // A reconnected link's fresh snapshot: catch up with what changed while it was down.
                noteRoles(snapshot.participants, rules: snapshot.rules)
                participantsBox.send(Self.joined(snapshot.participants))
                if let envelope = snapshot.activity, envelope != activityBox.latest { activityBox.send(envelope) }
                if let queue = snapshot.queue, queue != queueBox.latest { queueBox.send(queue) }
            case .queue(let queue):
                queueBox.send(queue)
            case .participants(let states):
                noteRoles(states, rules: nil)
                participantsBox.send(Self.joined(states))
            case .activity(let envelope):
                activityBox.send(envelope)
            case .notice(let notice):
                noticesBox.send(notice)
            case .refused:
                guard let refusal = message.refusal else { break }
                if refusal.request == .setActivity,
                   let before = standing.withLock({ s in defer { s.beforeProposal = nil }; return s.beforeProposal }),
                   before != activityBox.latest {
                    activityBox.send(before)  // the group's activity, not the one refused
                }
                refusalsBox.send(refusal)
            case .invalidated(let reason):
                invalidate(reason)
                return
            default:
                break
            }
        }
        // Cancelled by the owner: the session goes on for others who hold it; only a closed link invalidates it.
        if Task.isCancelled { return }
        invalidate(InvalidationReason(code: .connectionLost, message: "the connection to the session was lost"))
    }

    private func invalidate(_ reason: InvalidationReason) {
        if case .invalidated = stateBox.latest { return }
        stateBox.send(.invalidated(reason: reason))
        stateBox.finish()
        participantsBox.finish()
        activityBox.finish()
        noticesBox.finish()
        refusalsBox.finish()
        queueBox.finish()
        proposals.finish()
        outbox.finish()
    }

    // MARK: Observation

    /// The current state.
    public var state: State { stateBox.latest ?? .waiting }
    /// The current state, then every change.
    public var states: AsyncStream<State> { stateBox.subscribe() }

    /// Everyone who has joined the session, this participant included once it has.
    public var activeParticipants: Set<Participant> { participantsBox.latest ?? [] }
    /// The participants, then every change.
    public var activeParticipantsUpdates: AsyncStream<Set<Participant>> { participantsBox.subscribe() }

    /// The participant a message came from (`context.source`), while it is in the session.
    public func participant(for context: GroupSessionMessenger.MessageContext) -> Participant? {
        activeParticipants.first { $0.id == context.source }
    }

    /// Notices worth showing (who paused, who joined, who is waited for, different media, apps' own notices).
    public var notices: AsyncStream<Notice> { noticesBox.subscribe() }

    /// Shows `notice` in this participant's own `notices` only.
    func showLocally(_ notice: Notice) { noticesBox.send(notice) }

    /// What the authority refused of this participant's requests after they were sent (a call that could see it
    /// threw it instead), as they come.
    public var refusals: AsyncStream<Refusal> { refusalsBox.subscribe() }

    /// What participants other than the host may do in this session, as the authority announced it.
    public var rules: SessionRules { standing.withLock { $0.rules } }

    /// Whether this participant holds the host's role.
    public var isLocalHost: Bool { standing.withLock { $0.hostIDs.contains(localParticipant.id) } }

    private func noteRoles(_ states: [ParticipantState], rules: SessionRules?) {
        standing.withLock { standing in
            standing.hostIDs = Set(states.filter(\.isHost).map(\.participant.id))
            if let rules { standing.rules = rules }
        }
    }

    /// Throws what the authority would answer: `notJoined` before joining, `invalidated` after the end, and the
    /// session rules' refusal (`refuse`, given whether this participant is the host).
    func check(_ refuse: (SessionRules, Bool) -> Refusal?) throws {
        switch state {
        case .invalidated(let reason): throw SessionError.invalidated(reason)
        case .waiting: throw SessionError.notJoined
        case .joined: break
        }
        let (rules, isHost) = standing.withLock { ($0.rules, $0.hostIDs.contains(localParticipant.id)) }
        if let refusal = refuse(rules, isHost) { throw SessionError.refused(refusal) }
    }

    /// Starts `run()` in a task of the session's own when its owner has not started it.
    private func followUnlessFollowed() {
        guard !standing.withLock({ $0.following }) else { return }
        Task { [self] in
            await Task.yield()  // an owner's `Task { await session.run() }` made just before goes first
            guard !standing.withLock({ $0.following }) else { return }
            await run()
        }
    }

    /// The activity as it travels (identifier, metadata, item).
    public var activityEnvelope: ActivityEnvelope? { activityBox.latest }
    /// The envelope, then every change.
    public var activityEnvelopes: AsyncStream<ActivityEnvelope> { activityBox.subscribe() }

    /// The shared activity, decoded; nil when none is set or it is another app's type. Setting it proposes the new
    /// activity to everyone (see `setActivity(_:itemID:)` to wait for the send and see errors).
    public var activity: Activity? {
        get {
            guard let envelope = activityBox.latest else { return nil }
            return try? JSONDecoder().decode(Activity.self, from: envelope.payload)
        }
        set {
            guard let newValue else { return }
            // A property setter cannot wait: `run()` sends it; what it refuses arrives on `refusals`.
            proposals.send(newValue)
            followUnlessFollowed()
        }
    }

    /// Proposes a new activity to everyone; every participant converges on it. `itemID` names the item the
    /// playback timeline refers to (defaults to the activity's title). Throws `GroupSessionError.refused` when the
    /// session's rules do not let this participant change it (`.notHost`), `notJoined` before joining.
    public func setActivity(_ activity: Activity, itemID: String? = nil) async throws {
        try check { rules, isHost in rules.refusingActivityChange(isHost: isHost) }
        let payload: Data
        do { payload = try JSONEncoder().encode(activity) } catch {
            throw SessionError.encodingFailed(String(describing: error))
        }
        let envelope = ActivityEnvelope(activityIdentifier: Activity.activityIdentifier, metadata: activity.metadata,
                                        payload: payload,
                                        itemID: itemID ?? activity.metadata.title ?? Activity.activityIdentifier)
        // The authority does not echo our own change back: it is applied here, before it is sent, so that a refusal
        // (which may arrive before the send returns) finds `before` to put back.
        let before = activityBox.latest
        standing.withLock { $0.beforeProposal = before }
        activityBox.send(envelope)
        do { try await send(.setActivity(envelope)) } catch {
            let unsent = standing.withLock { s in defer { s.beforeProposal = nil }; return s.beforeProposal != nil }
            if unsent, let before, activityBox.latest == envelope { activityBox.send(before) }
            throw error
        }
    }

    // MARK: Life cycle

    /// Takes part in the session: the authority starts sending this participant the timeline, app messages,
    /// notices and the journal. `run()` sends the request; `joinNow()` sends it and waits.
    public func join() {
        guard case .waiting = state else { return }
        stateBox.send(.joined)
        outbox.send(.takePart)
        followUnlessFollowed()
    }

    /// `join()` for a caller that can wait: returns once the request is on the link, so anything sent after it
    /// (readiness, messages) reaches the authority after the join.
    public func joinNow() async throws {
        guard case .waiting = state else { return }
        try await send(.takePart)
        stateBox.send(.joined)
    }

    /// Shows `text` in everyone's `notices` (this participant's too), as a notice of kind `.app` naming the sender:
    /// SharePlay's `showNotice`. One line: control characters are removed and it is cut to
    /// `TextBounds.maxNoticeBytes`; notices count against the sender's app-message rate, and the authority refuses
    /// (`.refused`) what is over it. Throws `notJoined` before `join()`.
    public func showNotice(_ text: String) async throws {
        guard case .joined = state else {
            if case .invalidated(let reason) = state { throw SessionError.invalidated(reason) }
            throw SessionError.notJoined
        }
        let line = TextBounds.line(text, maxBytes: TextBounds.maxNoticeBytes)
        guard !line.isEmpty else { throw SessionError.emptyNotice }
        try await send(.notice(text: line))
    }

    /// Leaves; the others go on.
    public func leave() async {
        if case .invalidated = state { return }
        await link.close()
        invalidate(InvalidationReason(code: .left, message: "you left the session"))
    }

    /// Ends the session for everyone. Throws `GroupSessionError.refused` (`.notHost`) when the session's rules keep
    /// that for the host (`rules.everyoneMayEndSession`), `notJoined` before joining.
    public func end() async throws {
        try check { rules, isHost in rules.refusingEnd(isHost: isHost) }
        try await send(.end)
    }

    func send(_ message: ClientMessage) async throws {
        if case .invalidated(let reason) = state { throw SessionError.invalidated(reason) }
        do { try await link.send(message) } catch let reason as InvalidationReason {
            throw SessionError.invalidated(reason)
        }
    }
}

extension GroupActivity {
    /// An envelope for this activity, for a host creating a session. `itemID` names the item the playback timeline
    /// refers to (defaults to the title).
    public func envelope(itemID: String? = nil) throws -> ActivityEnvelope {
        ActivityEnvelope(activityIdentifier: Self.activityIdentifier, metadata: metadata,
                         payload: try JSONEncoder().encode(self),
                         itemID: itemID ?? metadata.title ?? Self.activityIdentifier)
    }
}

extension GroupActivity {
    /// The sessions of this activity type among `links`, as they arrive: the `for await session in
    /// MyActivity.sessions(from: …)` an app iterates (and `run()`s each session it keeps). A transport (TandemNet's client, TandemTesting's hub) supplies
    /// the links; links whose session carries another activity type are skipped, as are links to sessions without
    /// an activity when `includingUnset` is false.
    public static func sessions<Links: AsyncSequence & Sendable>(from links: Links, includingUnset: Bool = true)
        -> AsyncStream<GroupSession<Self>> where Links.Element == any SessionLink {
        // Pulled by the consumer: nothing runs while nobody listens.
        AsyncStream.pulling(links) { link in
            if let envelope = link.welcome.activity {
                guard envelope.activityIdentifier == activityIdentifier else { return nil }
            } else if !includingUnset {
                return nil
            }
            return GroupSession<Self>(link: link)
        }
    }
}

/// Errors from changing a `GroupSession`.
public enum GroupSessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The activity could not be encoded.
    case encodingFailed(String)
    /// The session is over.
    case invalidated(InvalidationReason)
    /// Only a participant that has joined can do this: call `join()` first.
    case notJoined
    /// A notice with no text left once cleaned.
    case emptyNotice
    /// The session's authority refuses this (its rules, announced in the welcome: `code` says what kind, `reason`
    /// in words a user can read).
    case refused(Refusal)

    public var description: String {
        switch self {
        case .encodingFailed(let why): return "the activity could not be encoded: \(why)"
        case .invalidated(let reason): return "the session is over: \(reason.message)"
        case .notJoined: return "join the session first"
        case .emptyNotice: return "the notice has no text to show"
        case .refused(let refusal): return refusal.reason
        }
    }
}

/// What a `GroupSession` knows of roles and rules, the activity before its last proposal (put back when the
/// authority refuses it), and whether `run()` has started (by its owner, or by `join()`).
final class GroupSessionStanding: @unchecked Sendable {
    // @unchecked Sendable: `standing` is touched only under `lock`.
    struct Standing {
        var rules: SessionRules
        var hostIDs: Set<ParticipantID>
        var beforeProposal: ActivityEnvelope?
        var following = false
    }
    private let lock = NSLock()
    private var standing: Standing
    init(rules: SessionRules, hostIDs: Set<ParticipantID>) {
        standing = Standing(rules: rules, hostIDs: hostIDs)
    }
    func withLock<T>(_ body: (inout Standing) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&standing)
    }
}
