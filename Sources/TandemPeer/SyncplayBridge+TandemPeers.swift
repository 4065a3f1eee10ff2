import Foundation
import Tandem
import TandemSyncplay

/// Tandem peers in one Syncplay room find each other through the room: the first offers its session (the invite in
/// its file's `tandemSession`, which the server passes on to everyone in `List` and in file updates), and a Tandem
/// peer that joins later plays in that session — Tandem's shared clock and timeline among them — instead of
/// following the room on its own by Syncplay's rules. The offering peer's bridge speaks for all of them to the room;
/// the others stay in the room as quiet members (their heartbeats repeat the room's state, their readiness is the
/// offering bridge's, which counts them), so Syncplay users still see everyone.
extension SyncplayBridge {
    /// The Tandem session another member of the room offers, if any: the first by name (so that everyone who looks
    /// picks the same) whose offer is an invite; this peer's own entry is skipped.
    package static func offeredSession(in members: [String: SyncplayListedUser],
                                       except me: String) -> (member: String, invite: Invite)? {
        for name in members.keys.sorted() where name != me {
            guard let text = members[name]?.file?.tandemSession, let invite = try? Invite(parsing: text) else { continue }
            return (name, invite)
        }
        return nil
    }

    /// Offers this bridge's session to the room's Tandem peers: the file again, now carrying `invite`.
    func offer(_ invite: Invite) {
        var offered = file
        offered.tandemSession = invite.description
        room.set(.file(offered))
    }

    /// Stays in the room as a quiet member while this person plays in `member`'s session: the heartbeat repeats the
    /// room's state (so the room is never moved from here: the offering bridge moves it), readiness follows
    /// `member`'s. Nothing else is passed on — `member`'s bridge already shows the room to the session. The bridge's
    /// own session is left. Runs until the room connection ends or the task is cancelled; then closes it.
    func runFollowing(_ member: String, ready: Bool?) async {
        arrival.withLock { $0.quiet() }
        await link.close()
        if let ready { room.setReady(ready) }
        for await event in room.events {
            switch event {
            case .ready(let name, let isReady) where name == member:
                room.setReady(isReady)
            default:
                continue
            }
        }
        await room.close()
    }
}

extension SyncplayBridge.RoomSession {
    /// Joins the room with `join` and runs `console` on the session until it returns. When the session this peer
    /// played in — another member's — ends (its host left, or was lost), the room is looked at again rather than
    /// leaving it: whoever offers a session then is joined, and if nobody does, this peer offers its own. So that the
    /// last session's other members agree on one new host, each waits its turn by name (`turnDelay` apart): the first
    /// offers at once, the others then find its offer. Throws what `join` or `console` throws otherwise.
    package static func stay(turnDelay: Duration = .milliseconds(1500), join: () async throws -> Self,
                             console: (Self) async throws -> Void) async throws {
        while true {
            let room = try await join()
            let bridging = Task { await room.run() }
            defer { bridging.cancel() }
            do {
                try await console(room)
                return
            } catch {
                // Only the session's end or loss: a failure of this peer's own (its player, say) is not met by
                // looking again.
                guard let host = room.following, !Task.isCancelled, let failure = error as? PeerFailure,
                      failure.exit == .sessionEnded || failure.exit == .unreachable else { throw error }
                // The others who played in `host`'s session (bridges are named `syncplay`), in name order.
                let others = await room.peer.status().others.map(\.participant.name)
                let turn = Set(others + [room.peer.name]).subtracting([host, "syncplay"]).sorted().firstIndex(of: room.peer.name) ?? 0
                bridging.cancel()
                await room.bridge.room.close()
                try await Task.sleep(for: turnDelay * turn)
            }
        }
    }
}
