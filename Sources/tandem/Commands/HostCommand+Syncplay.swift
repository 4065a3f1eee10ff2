import Foundation
import Tandem
import TandemPeer

extension HostCommand {
    /// With `--syncplay-port`: a Syncplay listener beside the session, on the embedded server's bind address;
    /// each Syncplay client joins the session from this machine (the embedded server on its bind address, or
    /// loopback when it listens everywhere; a standalone server at the invite's address).
    func startSyncplay(invite: Invite) async throws -> SyncplayGuests? {
        guard let syncplayPort else { return nil }
        var dial = invite
        if server == nil {
            dial.host = listen.bind == "0.0.0.0" || listen.bind == "::" ? "127.0.0.1" : listen.bind
        }
        do {
            return try await SyncplayGuests.start(host: listen.bind, port: syncplayPort, invite: invite, dial: dial)
        } catch {
            throw PeerFailure(.usage, "--syncplay-port \(syncplayPort): cannot listen on \(listen.bind):\(syncplayPort) (\(error)) "
                + "— pick a free port, or 0 for any")
        }
    }

    /// How a Syncplay user joins: its server, the session id as the room, the secret as the password.
    static func syncplayHeader(invite: Invite, port: Int) -> [String] {
        ["Syncplay users join with: syncplay --host \(invite.host.contains(":") ? "[\(invite.host)]" : invite.host):\(port) "
            + "--room \(invite.session) --password='\(invite.secret)' FILE"]
    }
}
