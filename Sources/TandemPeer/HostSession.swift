import Foundation
import Logging
import Tandem
import TandemSyncplay

/// Where a host's session lives.
package enum HostServer: Sendable {
    /// A server started in this process, listening on `bind`:`port` (with TLS from `tls`, the browser page when
    /// `web` is set). The invite names `advertise`, else this machine's first non-loopback IPv4 address when
    /// listening everywhere, else `bind`. With `streamsFirstFile`, browsers of the session's members may stream the
    /// first item over HTTP.
    case embedded(bind: String, port: Int, tls: ServerTLSFiles?, web: WebConfiguration?, advertise: String?,
                  streamsFirstFile: Bool)
    /// A standalone server (`tandem serve`): its address `tandem://HOST:PORT` or an invite to reuse, and the
    /// creation token it asks for, if any.
    case standalone(address: String, createToken: String?)

    /// Whether a server is started in this process.
    package var isEmbedded: Bool {
        if case .embedded = self { return true }
        return false
    }
}

/// A hosted session once it runs: the host as its first participant, the invite to hand on, and the embedded
/// server when there is one (it ends with the host: "the host left").
package struct HostSession: Sendable {
    package let participant: LocalPeer
    package let invite: Invite
    package let server: SessionServer?
    /// Syncplay clients' way in (`--syncplay-port`), when asked for.
    package let syncplay: SyncplayGuests?

    /// Creates the session for `items` on `server`, connects the host to it with `player`, shares what the session
    /// does not have yet (`HostedItems.share`) and, with `inviteFile`, saves the invite there for its owner alone.
    /// With `syncplayPort`, Syncplay clients may join on that port of `syncplayBind` (see `SyncplayGuests`).
    /// On any failure nothing is left running: the host leaves and an embedded server is shut down.
    package static func start(items: HostedItems, file: String, on server: HostServer, name: String,
                              player: GStreamerPlayer, options: TandemClient.Options, preview: PreviewImage?,
                              inviteFile: String?, syncplayPort: Int? = nil, syncplayBind: String = "0.0.0.0",
                              warn: (String) -> Void) async throws -> HostSession {
        var options = options
        options.asHost = true
        let invite: Invite
        let dial: Invite
        var embedded: SessionServer?
        switch server {
        case .standalone(let address, let createToken):
            invite = try Invite.forNewSession(onServer: address)
            options.createSession = true
            options.createToken = createToken
            dial = invite
        case .embedded(let bind, let port, let tls, let web, let advertise, let streamsFirstFile):
            // Named before the server starts, so that the first file can be offered to this session alone.
            let sessionID = Invite.random(host: "127.0.0.1", port: Invite.defaultPort).session
            var configuration = ServerConfiguration()
            configuration.web = web
            if streamsFirstFile { configuration.web?.mediaFiles[sessionID] = file }
            let started = try await SessionServer.start(host: bind, port: port, tls: tls, configuration: configuration,
                                                        logger: Logger(label: "tandem.server"))
            embedded = started
            do {
                invite = try started.createSession(id: sessionID, advertisedHost: advertise ?? advertisedHost(bind: bind),
                                                   activity: items.envelope)
            } catch {
                await started.shutdown()
                throw error
            }
            var local = invite
            local.host = started.localHost
            dial = local
        }

        let participant: LocalPeer
        do {
            participant = try await LocalPeer.connect(invite: dial, name: name, file: file, media: items.media,
                                                      player: player, options: options)
        } catch {
            await embedded?.shutdown()
            throw error
        }
        var syncplay: SyncplayGuests?
        do {
            try await items.share(from: participant, setActivity: !server.isEmbedded, preview: preview, warn: warn)
            if let inviteFile { try invite.save(toPrivateFile: inviteFile) }
            if let syncplayPort {
                // Each Syncplay client joins from this machine, as the host did.
                // STARTTLS with the embedded server's certificate, when it has one that is not self-signed.
                var configuration = SyncplayListener.Configuration()
                configuration.tls = embedded?.tlsContextForVerifyingClients
                do {
                    syncplay = try await SyncplayGuests.start(host: syncplayBind, port: syncplayPort, invite: invite, dial: dial,
                                                              configuration: configuration)
                } catch {
                    throw SyncplayGuests.cannotListen(host: syncplayBind, port: syncplayPort, error)
                }
            }
        } catch {
            await participant.leave()
            await embedded?.shutdown()
            throw error
        }
        return HostSession(participant: participant, invite: invite, server: embedded, syncplay: syncplay)
    }

    /// How Syncplay users join, for `--json`: the same as `syncplayHeader` (nil on an embedded server without
    /// `--syncplay-port`).
    package var syncplayEvent: SyncplayJoinEvent? {
        if let syncplay { return SyncplayGuests.event(host: invite.host, port: syncplay.listener.port, invite: invite) }
        guard server == nil else { return nil }
        return SyncplayGuests.event(host: invite.host, port: nil, invite: invite)
    }

    /// How Syncplay users join: through this host's listener (`--syncplay-port`), or, on a relay, through the relay's
    /// own (`tandem serve --syncplay-port`), with the same room and password.
    package var syncplayHeader: [String] {
        if let syncplay { return syncplay.header(invite: invite) }
        guard server == nil else { return [] }
        return ["Syncplay users join through the relay, if it runs with --syncplay-port PORT: "
            + SyncplayGuests.command(host: invite.host, port: "PORT", invite: invite)]
    }
}
