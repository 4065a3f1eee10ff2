import Foundation
import TandemCore

/// What `prepareForActivation()` found: SharePlay's `GroupActivityActivationResult`, with the reason spelt out when
/// activation cannot work.
public enum GroupActivityActivationResult: Sendable, Hashable, CustomStringConvertible {
    /// A shared session can be started: `activate(on:)` should work now.
    case activationPreferred
    /// It cannot (why, in words a person can act on): play alone, or fix what the reason says.
    case activationDisabled(reason: String)
    /// The task asking was cancelled before an answer.
    case cancelled

    public var description: String {
        switch self {
        case .activationPreferred: return "activation preferred"
        case .activationDisabled(let reason): return "activation disabled: \(reason)"
        case .cancelled: return "cancelled"
        }
    }
}

extension ActivationServer {
    /// SharePlay's `prepareForActivation()`: checks for real whether `activate(on:)` can start a session here, so the
    /// app can offer watching together or go on alone. An embedded server must be running with room for a session;
    /// a relay must be reachable and accept the creation (with this `createToken`), which is asked over a real
    /// connection that creates nothing (a creation probe: the handshake up to the proof, answered with a `close`)
    /// and is closed at once. Bounded by `options.connectTimeout`; a cancelled task gets `.cancelled` and its
    /// connection is closed.
    public func prepareForActivation(options: TandemClient.Options = .init()) async -> GroupActivityActivationResult {
        guard !Task.isCancelled else { return .cancelled }
        switch self {
        case .embedded(let server):
            if let problem = server.whyNoRoomForSession { return .activationDisabled(reason: problem) }
            return .activationPreferred
        case .relay(let host, let port, let tls, let pin, let token):
            let invite = Invite.random(host: host, port: port, tls: tls, pinnedCertificateSHA256: pin)
            var options = options
            options.createToken = token
            let relay = "the relay at \(invite.host):\(invite.port)"
            do {
                try await TandemClientConnection.probeCreation(invite: invite, options: options)
                return Task.isCancelled ? .cancelled : .activationPreferred
            } catch is CancellationError {
                return .cancelled
            } catch {
                if Task.isCancelled { return .cancelled }
                return .activationDisabled(reason: Self.reason(error, relay: relay))
            }
        }
    }

    /// A refusal or failure of a creation probe, as a reason a person can act on.
    static func reason(_ error: any Error, relay: String) -> String {
        guard let error = error as? TandemClientError else { return "cannot reach \(relay): \(error)" }
        switch error {
        case .wrongSecret:
            // The one answer to a creation the server does not allow (the probe's proof is right).
            return "\(relay) does not let clients create sessions (its allowsRemoteSessionCreation is off; tandem serve turns it on)"
        case .refused(let code, let message) where code == WireErrorCode.creationRefused.rawValue:
            return "\(relay) refused to create a session: \(message)"
        case .serverFull(let message):
            return "\(relay): \(message)"
        case .protocolVersion(let message):
            return "\(relay) speaks another protocol version: \(message)"
        case .timedOut:
            return "\(relay) did not answer in time"
        case .tls(let message):
            return "cannot reach \(relay) over TLS: \(message)"
        case .unreachable(let message):
            return "cannot reach \(relay): \(message)"
        default:
            return "\(relay) refused: \(error)"
        }
    }
}

extension GroupActivity {
    /// SharePlay's `prepareForActivation()` for this activity on `server`: `.activationDisabled` when the activity
    /// cannot be shared (it does not encode within the session's bounds) or `server` cannot start a session
    /// (`ActivationServer.prepareForActivation`).
    public func prepareForActivation(on server: ActivationServer,
                                     options: TandemClient.Options = .init()) async -> GroupActivityActivationResult {
        do { _ = try envelope() } catch {
            return .activationDisabled(reason: "the activity cannot be shared: \(error)")
        }
        return await server.prepareForActivation(options: options)
    }
}
