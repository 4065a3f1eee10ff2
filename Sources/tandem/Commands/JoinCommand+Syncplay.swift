import Foundation
import Tandem
import TandemPeer
import TandemSyncplay

extension JoinCommand {
    /// `tandem join syncplay://HOST[:PORT]/ROOM FILE`: this player in a Syncplay room, through a local session.
    func joinSyncplay(_ text: String) async throws {
        let address = try SyncplayAddress(parsing: text)
        guard let file else { throw PeerFailure(.usage, "give your copy of the media: tandem join \(text) FILE") }
        let probe = try await probeMedia(file)
        do {
            // Should the session found in the room end, the room is looked at again (`RoomSession.stay`).
            try await SyncplayBridge.RoomSession.stay {
                try await SyncplayBridge.joinRoom(address, password: roomPassword, name: peer.displayName, file: file,
                                                  probe: probe, player: try peer.makePeerPlayer(),
                                                  options: peer.applying(to: TandemClient.Options()), mediaDirectories: mediaDir,
                                                  trustRoots: trustRoots, findTandemPeers: !syncplayOnly)
            } console: { room in
                try await PeerConsole(mode: PeerConsole.mode(json: peer.json))
                    .run(room.peer, header: room.header(address, as: peer.displayName, file: file), server: room.server)
            }
        } catch let error as SyncplayConnectionError {
            if case .tls = error { throw PeerFailure(.unreachable, "\(error)") }
            throw PeerFailure(.unreachable, "\(error) — check the address (Syncplay's port is 8999 unless the server says otherwise)")
        }
    }
}
