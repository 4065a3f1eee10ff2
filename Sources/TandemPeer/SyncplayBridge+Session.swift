import Foundation
import Tandem
import TandemSyncplay

extension SyncplayBridge {
    /// What `tandem join syncplay://…` runs: a session with this person's player in it and the bridge to the room
    /// as its other participant — or, when another Tandem peer in the room offers its session, that session, with
    /// this bridge a quiet member of the room (`SyncplayBridge+TandemPeers.swift`).
    package struct RoomSession: Sendable {
        package let peer: LocalPeer
        /// This peer's own session (nil while it plays in another member's).
        package let server: SessionServer?
        package let bridge: SyncplayBridge
        /// Whose session this peer plays in, when not its own, and whether the room last heard that member was ready.
        package let following: String?
        let followedReady: Bool?
        /// The address its own session is offered at to the room's other Tandem peers (nil when not offered).
        package let offered: Invite?

        /// Runs the bridge until the room or the session ends; ending its own session says why.
        package func run() async {
            guard let server else {
                await bridge.runFollowing(following ?? "", ready: followedReady)
                return
            }
            await bridge.run()
            let why = bridge.room.endReason ?? "it closed"
            await server.shutdown(reason: InvalidationReason(code: .connectionLost, message: "the Syncplay room was lost: \(why)"))
        }

        /// The header `join` prints for a room.
        package func header(_ address: SyncplayAddress, as name: String, file: String) -> [String] {
            var lines = ["Joining Syncplay room \(address.room) on \(address.host):\(address.port) as \(name), playing "
                + URL(fileURLWithPath: file).lastPathComponent,
                "Room members follow Syncplay's rules (a pause, play or seek by anyone applies to all; drift under 4 s is left alone)"]
            if let following {
                lines.append("Playing in \(following)'s Tandem session: the room's Tandem peers keep Tandem's precision among themselves")
            } else if let offered {
                lines.append("Offering this Tandem session to the room's other Tandem peers at \(offered.host):\(offered.port)")
            }
            return lines
        }
    }

    /// The loopback session's rules: the bridge may edit the queue (the room's playlist becomes it), which holds
    /// as many entries as a Syncplay playlist.
    package static var sessionConfiguration: ServerConfiguration {
        var authority = AuthorityConfiguration()
        authority.everyoneMayChangeActivity = true
        authority.queue.maxEntries = SyncplayPlaylistSync.maxEntries
        authority.queue.maxBytes = 512 * 1024
        return ServerConfiguration(authority: authority)
    }

    /// Starts a session for `file`, connects the bridge to the room, and joins the session as `name` with `player`
    /// (as its host: leaving ends it). With `findTandemPeers`, a session another member of the room offers is joined
    /// instead (not as host) when it answers, and otherwise this one is offered: it then listens on the address
    /// this machine reaches the Syncplay server from, which the room is told; without, it listens on 127.0.0.1 only.
    /// Throws what went wrong, with everything started stopped again. Over TLS (`syncplays://`) the server's
    /// certificate is checked against `trustRoots` (default: the system's). The room's playlist entries are looked
    /// for in `file`'s directory, then in `mediaDirectories`.
    package static func joinRoom(_ address: SyncplayAddress, password: String?, name: String, file: String,
                                 probe: MediaProbe, player: GStreamerPlayer, options: TandemClient.Options,
                                 mediaDirectories: [String] = [], trustRoots: String? = nil,
                                 findTandemPeers: Bool = true) async throws -> RoomSession {
        let fileName = URL(fileURLWithPath: file).lastPathComponent
        let directories = MediaDirectories(besides: file, mediaDirectories: mediaDirectories)
        let activity = MediaActivity(probe: probe, path: file, title: nil, subtitle: nil, type: nil, fallbackURL: nil)
        let host = findTandemPeers ? localAddress(toward: address.host, port: address.port) ?? "127.0.0.1" : "127.0.0.1"
        let server = try await SessionServer.start(host: host, port: 0, configuration: sessionConfiguration)
        do {
            let invite = try server.createSession(activity: try activity.envelope)
            let bridge = try await SyncplayBridge.connect(
                room: address, passwordMD5: password.map(SyncplayClientState.Configuration.passwordHash), name: name,
                invite: invite, probe: probe, fileName: fileName, directories: directories, trustRoots: trustRoots)
            do {
                let media = QueueMedia(directories: directories)
                if findTandemPeers, let members = await bridge.room.listing(within: .seconds(5)),
                   let (member, offer) = offeredSession(in: members, except: bridge.room.username),
                   let peer = try? await LocalPeer.connect(invite: offer, name: name, file: file, media: media,
                                                           player: player, options: options) {
                    await server.shutdown()
                    return RoomSession(peer: peer, server: nil, bridge: bridge, following: member,
                                       followedReady: members[member]?.isReady, offered: nil)
                }
                if findTandemPeers { bridge.offer(invite) }
                var options = options
                options.asHost = true
                let peer = try await LocalPeer.connect(invite: invite, name: name, file: file, media: media,
                                                       player: player, options: options)
                return RoomSession(peer: peer, server: server, bridge: bridge, following: nil, followedReady: nil,
                                   offered: findTandemPeers ? invite : nil)
            } catch {
                await bridge.room.close()
                throw error
            }
        } catch {
            await server.shutdown()
            throw error
        }
    }
}
