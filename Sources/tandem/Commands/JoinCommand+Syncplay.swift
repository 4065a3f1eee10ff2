import Foundation
import Tandem
import TandemPeer
import TandemSyncplay

extension JoinCommand {
    /// `tandem join syncplay://HOST[:PORT]/ROOM FILE`: this player in a Syncplay room, through a local session.
    func joinSyncplay(_ text: String) async throws {
        let address = try SyncplayAddress(parsing: text)
        guard let file else { throw PeerFailure(.usage, "give your copy of the media: tandem join \(text) FILE") }
        let passwordSource = try InviteSource.option(
            "--room-password", argument: roomPassword, fileOption: "--room-password-file", file: roomPasswordFile,
            environment: ProcessInfo.processInfo.environment[CommandLineSecrets.roomPasswordVariable])
        let exposed = CommandLineSecrets.warnings(roomPassword: passwordSource)
        warnAboutCommandLine(exposed)
        let password: String?
        do { password = try passwordSource?.read("room password") } catch { throw PeerFailure(.usage, error.description) }
        let probe = try await MediaProbe.probeForPeer(file)
        do {
            // Should the session found in the room end, the room is looked at again (`RoomSession.stay`).
            try await SyncplayBridge.RoomSession.stay {
                try await SyncplayBridge.joinRoom(address, password: password, name: peer.choices.displayName, file: file,
                                                  probe: probe, player: try peer.choices.makePlayer(),
                                                  options: peer.choices.clientOptions, mediaDirectories: mediaDir,
                                                  trustRoots: trustRoots, findTandemPeers: !syncplayOnly)
            } console: { room in
                try await PeerConsole(mode: PeerConsole.mode(json: peer.json))
                    .run(room.peer, header: room.header(address, as: peer.choices.displayName, file: file), server: room.server,
                         warnings: peer.json ? exposed : [])
            }
        } catch let error as SyncplayConnectionError {
            switch error {
            case .tls: throw PeerFailure(.unreachable, "\(error)")
            case .refused: throw PeerFailure(.wrongSecret, "\(error) — check the room password (--room-password-file "
                + "FILE or \(CommandLineSecrets.roomPasswordVariable)) and the name")
            case .unreachable, .closed: break
            }
            throw PeerFailure(.unreachable, "\(error) — check the address (Syncplay's port is 8999 unless the server says otherwise)")
        }
    }
}
