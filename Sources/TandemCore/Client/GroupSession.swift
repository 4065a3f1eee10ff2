import Foundation
import Synchronization

/// One live session of an activity, as SharePlay's `GroupSession`: its state, participants and activity, over a
/// `SessionLink` to the session's authority.
///
/// A session starts `.waiting`; `join()` makes it `.joined`; it ends `.invalidated(reason:)` when the participant
/// leaves, someone ends it for everyone, or the connection is gone. Every property can be observed as an
/// `AsyncStream` that starts with the current value.
public final class GroupSession<Activity: GroupActivity>: Sendable {
    /// Where this participant stands in the session.
    public enum State: Sendable, Hashable {
        case waiting
        case joined
        /// The session is over for this participant; the reason says why in words a user can read.
        case invalidated(reason: InvalidationReason)
    }

    /// Errors from changing the session.
    public enum SessionError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The activity could not be encoded.
        case encodingFailed(String)
        /// The session is over.
        case invalidated(InvalidationReason)
        public var description: String {
            switch self {
            case .encodingFailed(let why): return "the activity could not be encoded: \(why)"
            case .invalidated(let reason): return "the session is over: \(reason.message)"
            }
        }
    }

    /// The connection to the authority; messengers, journals and coordinators of this session use it too.
    public let link: any SessionLink
    /// This participant.
    public let localParticipant: Participant
    /// The session's id.
    public let id: String

    private let stateBox: Broadcaster<State>
    private let participantsBox: Broadcaster<Set<Participant>>
    private let activityBox: Broadcaster<ActivityEnvelope>
    private let noticesBox: Broadcaster<Notice>
    private let pump: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// A session over `link`, starting from the link's welcome snapshot.
    public init(link: any SessionLink) {
        self.link = link
        let welcome = link.welcome
        id = welcome.sessionID
        localParticipant = welcome.localParticipant
        stateBox = Broadcaster(initial: .waiting, replaysCurrent: true)
        participantsBox = Broadcaster(initial: Set(welcome.participants.map(\.participant)), replaysCurrent: true)
        activityBox = Broadcaster(initial: welcome.activity, replaysCurrent: true)
        noticesBox = Broadcaster(replaysCurrent: false)
        // Subscribe now, so nothing sent after the welcome is missed.
        let upstream = link.serverMessages()
        let task = Task { [stateBox, participantsBox, activityBox, noticesBox] in
            for await message in upstream {
                switch message {
                case .welcome(let snapshot):
                    // A reconnected link's fresh snapshot: catch up with what changed while it was down.
                    participantsBox.send(Set(snapshot.participants.map(\.participant)))
                    if let envelope = snapshot.activity, envelope != activityBox.current { activityBox.send(envelope) }
                case .participants(let states):
                    participantsBox.send(Set(states.map(\.participant)))
                case .activity(let envelope):
                    activityBox.send(envelope)
                case .notice(let notice):
                    noticesBox.send(notice)
                case .invalidated(let reason):
                    Self.invalidate(reason, stateBox, participantsBox, activityBox, noticesBox)
                    return
                default:
                    break
                }
            }
            Self.invalidate(InvalidationReason(code: .connectionLost, message: "the connection to the session was lost"),
                            stateBox, participantsBox, activityBox, noticesBox)
        }
        pump.withLock { $0 = task }
    }

    deinit { pump.withLock { $0?.cancel() } }

    private static func invalidate(_ reason: InvalidationReason, _ state: Broadcaster<State>,
                                   _ participants: Broadcaster<Set<Participant>>, _ activity: Broadcaster<ActivityEnvelope>,
                                   _ notices: Broadcaster<Notice>) {
        if case .invalidated = state.current { return }
        state.send(.invalidated(reason: reason))
        state.finish()
        participants.finish()
        activity.finish()
        notices.finish()
    }

    // MARK: Observation

    /// The current state.
    public var state: State { stateBox.current ?? .waiting }
    /// The current state, then every change.
    public var states: AsyncStream<State> { stateBox.subscribe() }

    /// Everyone in the session, this participant included.
    public var activeParticipants: Set<Participant> { participantsBox.current ?? [] }
    /// The participants, then every change.
    public var activeParticipantsUpdates: AsyncStream<Set<Participant>> { participantsBox.subscribe() }

    /// Notices worth showing (who paused, who joined, who is waited for, different media).
    public var notices: AsyncStream<Notice> { noticesBox.subscribe() }

    /// The activity as it travels (identifier, metadata, item).
    public var activityEnvelope: ActivityEnvelope? { activityBox.current }
    /// The envelope, then every change.
    public var activityEnvelopes: AsyncStream<ActivityEnvelope> { activityBox.subscribe() }

    /// The shared activity, decoded; nil when none is set or it is another app's type. Setting it proposes the new
    /// activity to everyone (see `setActivity(_:itemID:)` to wait for the send and see errors).
    public var activity: Activity? {
        get {
            guard let envelope = activityBox.current else { return nil }
            return try? JSONDecoder().decode(Activity.self, from: envelope.payload)
        }
        set {
            guard let newValue else { return }
            // A property setter cannot wait: the send runs on its own and its failure shows as the session's state.
            Task { [self] in try? await setActivity(newValue) }
        }
    }

    /// Proposes a new activity to everyone; every participant converges on it. `itemID` names the item the
    /// playback timeline refers to (defaults to the activity's title).
    public func setActivity(_ activity: Activity, itemID: String? = nil) async throws {
        let payload: Data
        do { payload = try JSONEncoder().encode(activity) } catch {
            throw SessionError.encodingFailed(String(describing: error))
        }
        let envelope = ActivityEnvelope(activityIdentifier: Activity.activityIdentifier, metadata: activity.metadata,
                                        payload: payload,
                                        itemID: itemID ?? activity.metadata.title ?? Activity.activityIdentifier)
        try await send(.setActivity(envelope))
        // The authority does not echo our own change back; apply it here.
        activityBox.send(envelope)
    }

    // MARK: Life cycle

    /// Takes part in the session.
    public func join() {
        if case .waiting = state { stateBox.send(.joined) }
    }

    /// Leaves; the others go on.
    public func leave() async {
        if case .invalidated = state { return }
        await link.close()
        Self.invalidate(InvalidationReason(code: .left, message: "you left the session"), stateBox, participantsBox,
                        activityBox, noticesBox)
    }

    /// Ends the session for everyone.
    public func end() async throws {
        try await send(.end)
    }

    private func send(_ message: ClientMessage) async throws {
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
    /// MyActivity.sessions(from: …)` an app iterates. A transport (TandemNet's client, TandemTesting's hub) supplies
    /// the links; links whose session carries another activity type are skipped, as are links to sessions without
    /// an activity when `includingUnset` is false.
    public static func sessions<Links: AsyncSequence & Sendable>(from links: Links, includingUnset: Bool = true)
        -> AsyncStream<GroupSession<Self>> where Links.Element == any SessionLink {
        let (stream, continuation) = AsyncStream.makeStream(of: GroupSession<Self>.self)
        let task = Task {
            do {
                for try await link in links {
                    if let envelope = link.welcome.activity {
                        guard envelope.activityIdentifier == activityIdentifier else { continue }
                    } else if !includingUnset {
                        continue
                    }
                    continuation.yield(GroupSession<Self>(link: link))
                }
            } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
