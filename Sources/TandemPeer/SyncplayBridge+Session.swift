import Foundation
import Tandem
import TandemSyncplay

extension SyncplayBridge {
    /// What `tandem join syncplay://…` runs: a session on loopback with this person's player in it, and the bridge
    /// to the room as its other participant.
    package struct RoomSession: Sendable {
        package let peer: LocalPeer
        package let server: SessionServer
        package let bridge: SyncplayBridge
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

    /// Starts a session on 127.0.0.1 for `file`, connects the bridge to the room, and joins the session as `name`
    /// with `player` (as its host: leaving ends it). Throws what went wrong, with everything started stopped again.
    /// Over TLS (`syncplays://`) the server's certificate is checked against `trustRoots` (default: the system's).
    /// The room's playlist entries are looked for in `file`'s directory, then in `mediaDirectories`.
    package static func joinRoom(_ address: SyncplayAddress, password: String?, name: String, file: String,
                                 probe: MediaProbe, player: GStreamerPlayer, options: TandemClient.Options,
                                 mediaDirectories: [String] = [], trustRoots: String? = nil) async throws -> RoomSession {
        let fileName = URL(fileURLWithPath: file).lastPathComponent
        let directories = MediaDirectories(besides: file, mediaDirectories: mediaDirectories)
        let activity = MediaActivity(probe: probe, path: file, title: nil, subtitle: nil, type: nil, fallbackURL: nil)
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: sessionConfiguration)
        do {
            let invite = try server.createSession(activity: try activity.envelope)
            let bridge = try await SyncplayBridge.connect(
                room: address, passwordMD5: password.map(SyncplayClientState.Configuration.passwordHash), name: name,
                invite: invite, probe: probe, fileName: fileName, directories: directories, trustRoots: trustRoots)
            var options = options
            options.asHost = true
            do {
                let peer = try await LocalPeer.connect(invite: invite, name: name, file: file,
                                                       media: QueueMedia(directories: directories), player: player,
                                                       options: options)
                return RoomSession(peer: peer, server: server, bridge: bridge)
            } catch {
                await bridge.room.close()
                throw error
            }
        } catch {
            await server.shutdown()
            throw error
        }
    }

    /// The header `join` prints for a room.
    package static func header(_ address: SyncplayAddress, as name: String, file: String) -> [String] {
        ["Joining Syncplay room \(address.room) on \(address.host):\(address.port) as \(name), playing "
            + URL(fileURLWithPath: file).lastPathComponent,
         "Room members follow Syncplay's rules (a pause, play or seek by anyone applies to all; drift under 4 s is left alone)"]
    }
}
