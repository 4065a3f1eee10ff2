import Logging
import ServiceLifecycle
import Tandem
import Testing
import TandemPeer

@Suite("Services")
struct ServiceTests {
    @Test("a graceful shutdown of its group ends a session server's sessions with the service's reason")
    func serverShutdown() async throws {
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: ServerConfiguration(),
                                                   logger: Logger(label: "test"))
        let invite = try server.createSession(id: "s")
        let connection = try await TandemClient.connect(invite: invite, name: "ann")
        let reason = InvalidationReason(code: .hostLeft, message: "the host left")
        let group = ServiceGroup(configuration: .init(services: [SessionServerService(server: server, reason: reason)],
                                                      logger: Logger(label: "test")))
        async let running: Void = group.run()
        try await Task.sleep(for: .milliseconds(200))
        await group.triggerGracefulShutdown()
        try await running
        for _ in 0..<50 where connection.closedReason == nil { try await Task.sleep(for: .milliseconds(100)) }
        #expect(connection.closedReason?.code == .hostLeft)
        #expect(server.sessionIDs.isEmpty)
    }
}
