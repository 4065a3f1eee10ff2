import Foundation
import Synchronization
import Tandem
import TandemSyncplay

/// Syncplay clients in Tandem sessions: a Syncplay listener beside a session (`tandem host --syncplay-port`) or
/// beside a relay's sessions (`tandem serve --syncplay-port`). A client that names a session id as its room and
/// that session's Syncplay password (`SyncplayPassword`, derived from the handshake key) becomes a participant of
/// the session through its own Tandem connection from this machine (`SyncplayGuestLink`), so the authority sees an
/// ordinary participant. Anything else gets Syncplay's `Error` and is dropped. Beside a server with a certificate
/// (`--tls-cert`), a client that asks for STARTTLS gets TLS with that certificate.
package final class SyncplayGuests: Sendable {
    package let listener: SyncplayListener
    private let links = Mutex<[ObjectIdentifier: Task<Void, Never>]>([:])

    /// How an admitted client's Tandem connection is made, given the options of a Syncplay participant.
    typealias Connect = @Sendable (SyncplayGuest, TandemClient.Options) async throws -> TandemClientConnection

    /// What a relay's Syncplay clients are told once, on joining: what does not cross.
    package static let relayNotice = "This Tandem relay joins you to the session without its secret: play, pause "
        + "and seek cross, chat does not (it is sealed end to end with a key this server does not hold)."

    /// Listens on `host:port` for Syncplay clients of the session `invite` names; each joins it by dialling `dial`
    /// (the same session, from this machine) with the secret, so chat crosses both ways. The password is the
    /// session's Syncplay password, or (as before there was one) its secret.
    package static func start(host: String, port: Int, invite: Invite, dial: Invite,
                              configuration: SyncplayListener.Configuration = .init()) async throws -> SyncplayGuests {
        let password = SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)
        return try await start(host: host, port: port, configuration: configuration) { room, presented in
            // Every comparison is made whatever the room, so that a wrong room and a wrong password take the same time.
            let derived = SyncplayServerState.passwordMatches(presented, secret: password)
            let secret = SyncplayServerState.passwordMatches(presented, secret: invite.secret)
            return room == invite.session && (derived || secret)
        } connect: { guest, options in
            try await TandemClient.connect(invite: dial, name: guest.username, options: options)
        }
    }

    /// Listens on `host:port` for Syncplay clients of any session `server` (a relay) hosts: the room names the
    /// session, the password is its Syncplay password, which the relay checks against the handshake key it holds.
    /// Each joins from this machine with that key (`TandemClient.connect(to:handshakeKey:name:options:)`): without the
    /// secret there is no app-data key, so chat stays out both ways (the hello says `chat: false`, the welcome
    /// message says why).
    package static func start(relay server: SessionServer, host: String, port: Int,
                              configuration: SyncplayListener.Configuration = .init()) async throws -> SyncplayGuests {
        var configuration = configuration
        configuration.features["chat"] = .bool(false)
        // STARTTLS with the relay's own certificate, when it has one that is not self-signed.
        configuration.tls = configuration.tls ?? server.tlsContextForVerifyingClients
        configuration.motd = [configuration.motd, relayNotice].compactMap { $0 }.joined(separator: "\n")
        let decoy = HandshakeKey.random()
        return try await start(host: host, port: port, configuration: configuration) { room, presented in
            let key = Invite.isValidSessionID(room) ? server.handshakeKey(ofSession: room) : nil
            // Checked against a random key for an unknown room, so that both refusals take the same time.
            return SyncplayPassword.matches(presented, handshakeKey: (key ?? decoy).bytes) && key != nil
        } connect: { guest, options in
            guard let key = server.handshakeKey(ofSession: guest.room) else {
                throw TandemClientError.sessionEnded(InvalidationReason(code: .ended, message: "it is no longer on this relay"))
            }
            let address = Invite(host: server.localHost, port: server.port, session: guest.room, secret: "", tls: server.usesTLS,
                                 pinnedCertificateSHA256: server.certificateSHA256)
            return try await TandemClient.connect(to: address, handshakeKey: key, name: guest.username, options: options)
        }
    }

    /// `start(relay:host:port:)` when a port is asked for (`tandem serve --syncplay-port`); when it cannot listen,
    /// the relay is shut down and the error says what to do.
    package static func start(relay server: SessionServer, host: String, askedPort port: Int?) async throws -> SyncplayGuests? {
        guard let port else { return nil }
        do { return try await start(relay: server, host: host, port: port) } catch {
            await server.shutdown()
            throw cannotListen(host: host, port: port, error)
        }
    }

    static func cannotListen(host: String, port: Int, _ error: any Error) -> PeerFailure {
        PeerFailure(.usage, "--syncplay-port \(port): cannot listen on \(host):\(port) (\(error)) — pick a free port, or 0 for any")
    }

    private static func start(host: String, port: Int, configuration: SyncplayListener.Configuration,
                              admits: @escaping @Sendable (_ room: String, _ passwordMD5: String?) -> Bool,
                              connect: @escaping Connect) async throws -> SyncplayGuests {
        let carriesChat = configuration.features["chat"] != .bool(false)
        let holder = Mutex<SyncplayGuests?>(nil)
        let listener = try await SyncplayListener.start(host: host, port: port, configuration: configuration) { room, password, name in
            guard admits(room, password) else {
                return .refuse("wrong room or password: the room is the session id (tandem://HOST:PORT/ROOM#…) and the "
                    + "password the session's Syncplay password, both printed by tandem host")
            }
            return .admit(username: name, members: [:])
        } welcomed: { guest in
            holder.withLock { $0 }?.follow(guest, carriesChat: carriesChat, connect: connect)
        }
        let guests = SyncplayGuests(listener: listener)
        holder.withLock { $0 = guests }
        return guests
    }

    private init(listener: SyncplayListener) { self.listener = listener }

    /// Stops listening and takes every Syncplay client out of its session.
    package func close() async {
        await listener.close()
        let running = links.withLock { links in defer { links = [:] }; return Array(links.values) }
        // Each link ends its Syncplay client with an Error saying why, and leaves the session.
        for task in running { task.cancel() }
    }

    private func follow(_ guest: SyncplayGuest, carriesChat: Bool, connect: @escaping Connect) {
        let key = ObjectIdentifier(guest)
        // Entered under the lock before it can run, so a link that ends at once is still taken out of the table.
        links.withLock { links in
            links[key] = Task {
                await SyncplayGuestLink.run(guest, carriesChat: carriesChat, connect: connect)
                _ = self.links.withLock { $0.removeValue(forKey: key) }
            }
        }
    }
}

extension SyncplayGuests {
    /// How a Syncplay user joins `invite`'s session here: this listener, the session id as the room, the session's
    /// Syncplay password.
    package func header(invite: Invite) -> [String] {
        ["Syncplay users join with: " + Self.command(host: invite.host, port: "\(listener.port)", invite: invite)]
    }

    /// How a Syncplay user joins a session on this relay (the session id and password come from its host).
    package func relayHeader(advertising host: String) -> [String] {
        ["Syncplay users join sessions here with: syncplay --host \(Self.bracketed(host)):\(listener.port) "
            + "--room=SESSION --password=PASSWORD FILE (tandem host prints both)"]
    }

    /// `syncplay --host HOST:PORT --room=SESSION --password=PASSWORD FILE` for `invite`'s session. The values are
    /// attached with `=`: a session id may start with `-`, which Syncplay's argument parser would take for an option.
    package static func command(host: String, port: String, invite: Invite) -> String {
        "syncplay --host \(bracketed(host)):\(port) --room=\(invite.session) "
            + "--password=\(SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)) FILE"
    }

    /// The `syncplay` event: where Syncplay users join `invite`'s session (`port` nil: the relay's own
    /// `--syncplay-port`, which this host does not know).
    package static func event(host: String, port: Int?, invite: Invite) -> SyncplayJoinEvent {
        SyncplayJoinEvent(host: host, port: port, room: invite.session,
                          password: SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes))
    }

    private static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}
