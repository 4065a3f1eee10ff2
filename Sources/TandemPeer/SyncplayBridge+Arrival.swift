import Foundation
import Tandem
import TandemSyncplay

/// Arriving in a room (`SyncplayArrival`): until the session's players have loaded the room's item, the bridge's
/// heartbeats repeat the room's state and the room's changes are only noted; then the session is moved to where the
/// room is, and the heartbeats report it once that has settled. So a peer that joins a paused room, or whose players
/// are still loading an entry of the room's playlist, never tells the room a position nobody here has played.
extension SyncplayBridge {
    /// Moves the session to the room when it is time to arrive (see `SyncplayArrival.sessionSettled`). Called on
    /// whatever may make it time: a settled timeline, the players' readiness, the playlist followed, the room heard.
    func advanceArrival() async {
        guard let current = timeline.value, let mapping = link.clockMapping() else { return }
        if case .waiting = current.status { return }
        let now = clock.now
        let here = Self.playstate(current, mapping: mapping, now: now)
        let busy = playlist.withLock { $0.following || $0.selecting }
        guard let target = arrival.withLock({ $0.sessionSettled(at: here, generation: current.generation, busy: busy, now: now) })
        else { return }
        await request(.seek(itemTime: .seconds(target.position), play: !target.paused), basedOn: current,
                      at: mapping.sessionTime(atLocal: now)) { id in arrivalRequest.withLock { $0 = id } }
    }

    /// The authority refused request `requestID`: when it was the move on arriving, the session reports itself as it is.
    func arrivalRefused(_ requestID: UInt64) {
        let wasArrival = arrivalRequest.withLock { pending in
            defer { if pending == requestID { pending = nil } }
            return pending == requestID
        }
        if wasArrival { arrival.withLock { $0.moveRefused() } }
    }
}
