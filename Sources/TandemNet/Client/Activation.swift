import Foundation
import Synchronization
import TandemCore

/// Where `activate` starts a session: an embedded `SessionServer` in this process, or a relay (`tandem serve`) that
/// lets clients create sessions.
public enum ActivationServer: Sendable {
    /// A server in this process: the session is created in it directly.
    case embedded(SessionServer)
    /// A relay at `host:port`: the session is created over the wire (`hello.create`), with the relay's creation
    /// token when it asks for one.
    case relay(host: String, port: Int = Invite.defaultPort, tls: Bool = false, pinnedCertificateSHA256: [UInt8]? = nil,
               createToken: String? = nil)
}

/// What `activate` returns: the session, already joined by the activator, and the invite to share.
public struct Activation<Activity: GroupActivity>: Sendable {
    public let session: GroupSession<Activity>
    /// The invite for everyone else: its secret never goes over the wire.
    public let invite: Invite
}

extension GroupActivity {
    /// SharePlay's `activate()`: starts a new session of this activity on `server`, joins it as its host and
    /// returns it (`isLocallyInitiated`) with the invite to send to the others. Every call draws a fresh session
    /// name and secret, so leaving and activating again gives a new session. The connection loads journal
    /// attachments lazily. `run()` the session (and the coordinator, journal and messengers made on its link).
    public func activate(on server: ActivationServer, name: String, itemID: String? = nil,
                         options: TandemClient.Options = .init()) async throws -> Activation<Self> {
        let envelope = try self.envelope(itemID: itemID)
        var options = options
        options.asHost = true
        options.waitsToJoin = false
        options.lazyAttachments = true
        let invite: Invite
        switch server {
        case .embedded(let server):
            invite = try server.createSession(activity: envelope)
        case .relay(let host, let port, let tls, let pin, let token):
            invite = Invite.random(host: host, port: port, tls: tls, pinnedCertificateSHA256: pin)
            options.createSession = true
            options.createToken = token
        }
        let connection = try await TandemClient.connect(invite: invite, name: name, options: options)
        let session = GroupSession<Self>(link: connection, isLocallyInitiated: true)
        if connection.welcome.activity == nil {
            // Created over the wire: the session starts without an activity; the host sets it.
            do { try await session.setActivity(self, itemID: envelope.itemID) } catch {
                await connection.close()
                throw error
            }
        }
        session.join()
        return Activation(session: session, invite: invite)
    }

    /// The sessions of this activity type that `invites` lead to, as they arrive: each invite is connected as
    /// `name` without taking part (`waitsToJoin`), so the session is `.waiting` and shows its activity and
    /// participants until the app calls `join()`; nothing else of it reaches this peer before. Invites that cannot
    /// be connected, or whose session carries another activity type, are skipped (the latter left at once);
    /// `skipped` hears why. Pulled by the consumer: nothing connects while nobody listens.
    public static func sessions<Invites: AsyncSequence & Sendable>(
        invites: Invites, name: String, options: TandemClient.Options = .init(),
        skipped: (@Sendable (Invite, String) -> Void)? = nil
    ) -> AsyncStream<GroupSession<Self>> where Invites.Element == Invite {
        var options = options
        options.waitsToJoin = true
        options.lazyAttachments = true
        return AsyncStream.pulling(invites) { [options] invite in
            let connection: TandemClientConnection
            do {
                connection = try await TandemClient.connect(invite: invite, name: name, options: options)
            } catch {
                skipped?(invite, "\(error)")
                return nil
            }
            if let envelope = connection.welcome.activity, envelope.activityIdentifier != activityIdentifier {
                skipped?(invite, "the session is for \(envelope.activityIdentifier), not \(activityIdentifier)")
                await connection.close()
                return nil
            }
            return GroupSession<Self>(link: connection)
        }
    }
}

/// A joiner's pending invites, as they arrive (from a chat, a file, a command): an `AsyncSequence` for
/// `GroupActivity.sessions(invites:name:)`. It holds at most `capacity` invites not yet taken (the oldest go first).
public final class InviteInbox: AsyncSequence, Sendable {
    public typealias Element = Invite
    private let stream: AsyncStream<Invite>
    private let continuation: AsyncStream<Invite>.Continuation

    public init(capacity: Int = 64) {
        (stream, continuation) = AsyncStream.makeStream(of: Invite.self, bufferingPolicy: .bufferingNewest(Swift.max(1, capacity)))
    }

    /// Adds an invite.
    public func deliver(_ invite: Invite) { continuation.yield(invite) }

    /// No more invites: the sequence ends once the pending ones are taken.
    public func close() { continuation.finish() }

    public func makeAsyncIterator() -> AsyncStream<Invite>.Iterator { stream.makeAsyncIterator() }
}
