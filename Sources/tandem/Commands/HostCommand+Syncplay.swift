import Foundation
import Tandem
import TandemPeer

extension HostCommand {
    /// With `--syncplay-port`: a Syncplay listener beside the session, on the embedded server's bind address;
    /// each Syncplay client joins the session through `dial`.
    func startSyncplay(invite: Invite, dial: Invite) async throws -> SyncplayGuests? {
        guard let syncplayPort else { return nil }
        do {
            return try await SyncplayGuests.start(host: listen.bind, port: syncplayPort, invite: invite, dial: dial)
        } catch {
            throw CLIError(.usage, "--syncplay-port \(syncplayPort): cannot listen on \(listen.bind):\(syncplayPort) (\(error)) "
                + "— pick a free port, or 0 for any")
        }
    }

    /// How a Syncplay user joins: its server, the session id as the room, the secret as the password.
    static func syncplayHeader(invite: Invite, port: Int) -> [String] {
        ["Syncplay users join with: syncplay --host \(invite.host.contains(":") ? "[\(invite.host)]" : invite.host):\(port) "
            + "--room \(invite.session) --password='\(invite.secret)' FILE"]
    }
}
