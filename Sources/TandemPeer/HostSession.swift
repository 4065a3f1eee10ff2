import Foundation
import Logging
import Tandem
import TandemPortMapping
import TandemSyncplay

/// Where a host's session lives.
package enum HostServer: Sendable {
    /// A server started in this process, listening on `bind`:`port` (with TLS from `tls`, the browser page when
    /// `web` is set). The invite names `advertise`, else where people outside reach it (`HostReachability`: the
    /// port mapped on the router as `portMapping` allows, …), else this machine's first non-loopback IPv4 address
    /// when listening everywhere, else `bind`. With `streamsFirstFile`, browsers of the session's members may stream
    /// the first item over HTTP. With `sharesMedia`, every member (native or browser) may stream every queue item
    /// that is a local file (`SharedMedia`; the port answers HTTP even without `web`, for media only).
    /// With `fallbackRelay` (a default relay from the configuration), a server nobody outside can reach gives way
    /// to a session on that relay (not with `web`, which the embedded server serves, nor on a loopback `bind`);
    /// shared items then pass through the relay, as on a standalone server.
    case embedded(bind: String, port: Int, tls: ServerTLSFiles?, web: WebConfiguration?, advertise: String?,
                  streamsFirstFile: Bool, portMapping: PortMappingChoice = PortMappingChoice(),
                  fallbackRelay: (address: String, createToken: String?)? = nil, sharesMedia: Bool = false)
    /// A standalone server (`tandem serve`): its address `tandem://HOST:PORT` or an invite to reuse, and the
    /// creation token it asks for, if any. With `sharesMedia`, the host's items pass to the members through the
    /// relay (`RelayedMediaHost`), when it runs with `--relay-media`.
    case standalone(address: String, createToken: String?, sharesMedia: Bool = false)

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
    /// How people outside reach the session, and the router's port mapping that makes it so, when there is one.
    package let reachability: Reachability
    package let portMapping: PortMappingKeeper?
    /// The host's answers to its members' range requests through the relay, when its items pass there.
    package let relayedMedia: RelayedMediaHost?

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
        var invite: Invite
        var dial: Invite
        var embedded: SessionServer?
        var reachability: Reachability
        var portMapping: PortMappingKeeper?
        var items = items
        var relaysMedia = false
        switch server {
        case .standalone(let address, let createToken, let sharesMedia):
            relaysMedia = sharesMedia
            invite = try Invite.forNewSession(onServer: address)
            options.createSession = true
            options.createToken = createToken
            dial = invite
            reachability = .relay(address: invite.host, port: invite.port)
        case .embedded(let bind, let port, let tls, let web, let advertise, let streamsFirstFile, let choice, let fallback,
                       let sharesMedia):
            // Named before the server starts, so that the first file can be offered to this session alone.
            let sessionID = Invite.random(host: "127.0.0.1", port: Invite.defaultPort).session
            var configuration = ServerConfiguration()
            configuration.web = web
            if streamsFirstFile { configuration.web?.mediaFiles[sessionID] = file }
            if sharesMedia {
                let shared = SharedMedia()
                if configuration.web == nil {
                    configuration.web = WebConfiguration()
                    configuration.web?.servesPage = false
                }
                configuration.web?.sharedMedia = shared
                items.media.share { item, path in
                    // Items that are URLs are not the host's to serve.
                    guard !path.contains("://") else { return }
                    shared.offer(session: sessionID, item: item, path: path,
                                 contentID: MediaProbe.fingerprint(ofFile: path))
                }
            }
            let started = try await SessionServer.start(host: bind, port: port, tls: tls, configuration: configuration,
                                                        logger: Logger(label: "tandem.server"))
            embedded = started
            (reachability, portMapping) = await HostReachability.find(bind: bind, port: started.port, choice: choice)
            do {
                let reached = reachability.isReachableFromOutside ? reachability.address : nil
                var created = try started.createSession(id: sessionID, advertisedHost: advertise ?? reached ?? advertisedHost(bind: bind),
                                                        activity: items.envelope)
                created.port = reachability.port
                if case .mapped(let external, _, _) = reachability, advertise == nil,
                   let own = localAddress(toward: external, port: reachability.port) {
                    // A router seldom forwards its public port from its own network: friends there dial this.
                    created.localNetworkAddress = (own, started.port)
                }
                invite = created
            } catch {
                await portMapping?.close()
                await started.shutdown()
                throw error
            }
            // The host itself dials its own listener (the router may have mapped another port outside).
            var local = invite
            local.host = started.localHost
            local.port = started.port
            dial = local
            if let fallback, web == nil, !isLoopback(bind), case .localNetworkOnly(_, _, let reason) = reachability {
                relaysMedia = sharesMedia
                await started.shutdown()
                embedded = nil
                invite = try Invite.forNewSession(onServer: fallback.address)
                options.createSession = true
                options.createToken = fallback.createToken
                dial = invite
                reachability = .relay(address: invite.host, port: invite.port, instead: reason)
            }
        }

        if relaysMedia { items = try items.throughRelay() }
        let participant: LocalPeer
        do {
            participant = try await LocalPeer.connect(invite: dial, name: name, file: file, media: items.media,
                                                      player: player, options: options)
        } catch {
            await portMapping?.close()
            await embedded?.shutdown()
            throw error
        }
        var syncplay: SyncplayGuests?
        let relayedMedia = relaysMedia ? items.media.relayThrough(participant.connection, session: invite.session) : nil
        do {
            try await items.share(from: participant, setActivity: embedded == nil, preview: preview, warn: warn)
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
            await portMapping?.close()
            await embedded?.shutdown()
            throw error
        }
        return HostSession(participant: participant, invite: invite, server: embedded, syncplay: syncplay,
                           reachability: reachability, portMapping: portMapping, relayedMedia: relayedMedia)
    }

    /// Closes what the session opened beside the server once the host is done: the Syncplay listener, and the port
    /// mapping on the router.
    package func finish() async {
        await syncplay?.close()
        await portMapping?.close()
    }

    /// How Syncplay users join, for `--json`: the same as `syncplayHeader` (nil on an embedded server without
    /// `--syncplay-port`).
    package var syncplayEvent: SyncplayJoinEvent? {
        if let syncplay { return SyncplayGuests.event(host: invite.host, port: syncplay.listener.port, invite: invite) }
        guard server == nil else { return nil }
        return SyncplayGuests.event(host: invite.host, port: nil, invite: invite)
    }

    /// What the host's header says after the invite: how people outside reach the session, then how Syncplay users
    /// join.
    package var headerLines: [String] {
        let relayed = relayedMedia == nil ? [] : ["Your copy passes to joiners without one through the relay, sealed "
            + "(the relay must run with tandem serve --relay-media)"]
        return [reachability.text] + relayed + syncplayHeader
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
