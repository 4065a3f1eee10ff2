import ServiceLifecycle
import Tandem

/// Runs a `LocalPeer` as a `Service`: it plays with the group until the session ends for it. A graceful shutdown
/// (SIGINT or SIGTERM, through its `ServiceGroup`) makes it leave the session, which ends the run.
package struct PeerService: Service {
    package let peer: LocalPeer
    /// Runs beside the peer, from the moment the service starts (its group traps signals by then) until the peer
    /// stops, when it is cancelled: a console's input, output and status line.
    package var alongside: @Sendable () async -> Void
    /// Called on a graceful shutdown, before the peer leaves.
    package var willLeave: @Sendable () -> Void

    package init(peer: LocalPeer, alongside: @escaping @Sendable () async -> Void = {},
                 willLeave: @escaping @Sendable () -> Void = {}) {
        self.peer = peer
        self.alongside = alongside
        self.willLeave = willLeave
    }

    package func run() async {
        let peer = self.peer
        let willLeave = self.willLeave
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await alongside() }
            group.addTask {
                // Cancelled (the peer stopped first) rather than shut down: nothing to leave.
                guard (try? await gracefulShutdown()) != nil else { return }
                willLeave()
                await peer.leave()
            }
            await peer.run()
            group.cancelAll()
        }
    }
}

/// Runs a `SessionServer` as a `Service` until a graceful shutdown, which ends every session with `reason`.
package struct SessionServerService: Service {
    package let server: SessionServer
    package var reason: InvalidationReason

    package init(server: SessionServer,
                 reason: InvalidationReason = InvalidationReason(code: .serverShutdown,
                                                                 message: "the server is shutting down")) {
        self.server = server
        self.reason = reason
    }

    package func run() async {
        let server = self.server
        let reason = self.reason
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                guard (try? await gracefulShutdown()) != nil else { return }
                await server.shutdown(reason: reason)
            }
            await server.waitUntilStopped()
            group.cancelAll()
        }
        // The listener closes first; wait until every session has been told and the loops are down.
        await server.shutdown(reason: reason)
    }
}
