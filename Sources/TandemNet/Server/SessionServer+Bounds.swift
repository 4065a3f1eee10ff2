import Logging
import NIOCore
import TandemCore

/// The server's bounds on who may connect and create: admission of connections, the creation quota, and the
/// log line a refusal leaves.
extension SessionServer {
    /// Why the server could not take one more session now (stopped, or at `maxSessions`), or nil when it could.
    var whyNoRoomForSession: String? {
        if stopped.withLock({ $0 }) || !listener.isActive { return "the server is not running" }
        let count = sessions.withLock { $0.count }
        if count >= configuration.maxSessions { return "the server is full (\(count) of \(configuration.maxSessions) sessions)" }
        return nil
    }

    /// Whether `address` is within its session-creation quota (creations in the last minute).
    func mayCreateSession(from address: String) -> Bool {
        let now = clock.now
        return creations.withLock { creations in
            let recent = (creations[address] ?? []).filter { now - $0 < .seconds(60) }
            creations[address] = recent.isEmpty ? nil : recent
            return recent.count < configuration.sessionCreationsPerMinute
        }
    }

    /// Takes a place for `channel` among the connections of its address and the unauthenticated ones, or nil when
    /// a bound is reached (logged). An idle unauthenticated connection may be closed to make room.
    func admit(_ channel: any Channel, from address: String) -> ConnectionAdmission.Ticket? {
        switch admission.admit(from: address, evict: { [weak self] in
            self?.logRefusal(.unauthenticatedEvicted, address: address,
                             "closed an idle unauthenticated connection to make room for a newer one")
            channel.close(promise: nil)
        }) {
        case .success(let ticket): return ticket
        case .failure(let refusal):
            logRefusal(refusal.counted, address: address, refusal.description)
            return nil
        }
    }

    /// Counts a refusal under `reason` and logs it at info level, at most one line per address per second (later
    /// lines count the ones left out). Never logs a secret, key or token.
    func logRefusal(_ reason: ServerRefusal, address: String, _ what: String) {
        counters.refused(reason)
        let now = clock.now
        let suppressed: Int? = refusals.withLock { refusals in
            if refusals.count > 4_096 { refusals.removeAll() }
            if let state = refusals[address], now - state.lastLogged < .seconds(1) {
                refusals[address]?.suppressed += 1
                return nil
            }
            let skipped = refusals[address]?.suppressed ?? 0
            refusals[address] = RefusalLogState(lastLogged: now, suppressed: 0)
            return skipped
        }
        guard let suppressed else { return }
        var metadata: Logger.Metadata = ["address": "\(address)", "reason": "\(what)"]
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.info("refused", metadata: metadata)
    }
}
