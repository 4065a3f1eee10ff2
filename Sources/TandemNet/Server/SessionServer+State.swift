import TandemCrypto
import Foundation
import Logging
import NIOCore
import TandemCore

// Sessions that outlive the process (`ServerConfiguration.stateStore`, `tandem serve --state-dir`).
extension SessionServer {
    /// Hosts again the sessions an earlier run kept: each continues from its snapshot, every member that was
    /// connected counted as disconnected within its grace period, so peers reconnect as themselves. Called once,
    /// before the first connection is served. A session that cannot be restored (ended, refused by a bound) is
    /// forgotten.
    func restoreSessions() async throws(SessionServerError) {
        guard let store = configuration.stateStore else { return }
        let kept: [StoredSession]
        do {
            kept = try store.storedSessions()
        } catch {
            throw .state(error.description)
        }
        var spoolNames: Set<String> = []
        var restored: [(HostedSession, StoredSession)] = []
        for stored in kept {
            if stored.authority?.hasEnded == true || stored.authority?.format != AuthoritySnapshot.currentFormat {
                try? store.forget(session: stored.id)
                continue
            }
            do {
                let session = try createSession(id: stored.id, key: SymmetricKey(data: stored.key),
                                                creator: stored.creator, restoring: stored)
                restored.append((session, stored))
                if let name = stored.spoolName { spoolNames.insert(name) }
            } catch {
                logger.error("cannot restore a session; it is dropped", metadata: ["session": "\(stored.id)",
                                                                                  "error": "\(error)"])
                try? store.forget(session: stored.id)
            }
        }
        spool?.removeUnused(keeping: spoolNames)
        for (session, stored) in restored {
            try? await session.loop.submit { session.resumeAfterRestart(accounted: stored.accounted) }.get()
            if session.hasBeenJoined { continue }
            // Nobody had joined yet: it expires as a freshly created one would.
            let logger = self.logger
            session.loop.scheduleTask(in: TimeAmount(configuration.unjoinedSessionLifetime)) { [weak session] in
                guard let session, session.expireIfUnjoined() else { return }
                logger.info("session expired: nobody joined", metadata: ["session": "\(session.id)"])
            }
        }
        if !kept.isEmpty {
            logger.info("sessions restored", metadata: ["restored": "\(restored.count)", "kept": "\(kept.count)"])
        }
    }
}
