import Foundation
import Logging
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// `prepareForActivation()` against real servers on loopback: it asks for real and creates nothing.
@Suite("Preparing for activation over loopback", .serialized)
struct PrepareForActivationTests {
    static func relay(_ server: SessionServer, token: String? = nil) -> ActivationServer {
        .relay(host: "127.0.0.1", port: server.port, createToken: token)
    }

    static func reason(_ result: GroupActivityActivationResult) -> String? {
        if case .activationDisabled(let reason) = result { return reason }
        return nil
    }

    @Test("a relay that allows creation: preferred, nothing created, and activation then works")
    func relayAllowsCreation() async throws {
        let server = try await startTestServer(remoteCreation: true)
        defer { Task { await server.shutdown() } }
        #expect(await Self.relay(server).prepareForActivation(options: clientOptions()) == .activationPreferred)
        #expect(await Screening(film: "Ronin").prepareForActivation(on: Self.relay(server), options: clientOptions())
                == .activationPreferred)
        // Nothing was created, no quota was taken, and the probes' connections are gone.
        #expect(server.sessionIDs.isEmpty)
        #expect(await waitUntil(5) { server.connectionCount == 0 })
        let activation = try await Screening(film: "Ronin").activate(on: Self.relay(server), name: "ann", options: clientOptions())
        #expect(server.sessionIDs == [activation.invite.session])
        await activation.session.leave()
    }

    @Test("a closed port, a relay that does not allow creation, a wrong or missing token: disabled, saying why")
    func disabledWithAReason() async throws {
        // A port nobody listens on any more.
        let gone = try await startTestServer(remoteCreation: true)
        let port = gone.port
        await gone.shutdown()
        let closed = await ActivationServer.relay(host: "127.0.0.1", port: port).prepareForActivation(options: clientOptions())
        #expect(Self.reason(closed)?.contains("cannot reach the relay at 127.0.0.1:\(port)") == true, "\(closed)")

        let noCreation = try await startTestServer(remoteCreation: false)
        defer { Task { await noCreation.shutdown() } }
        let refused = await Self.relay(noCreation).prepareForActivation(options: clientOptions())
        #expect(Self.reason(refused)?.contains("does not let clients create sessions") == true, "\(refused)")

        var configuration = ServerConfiguration()
        configuration.allowsRemoteSessionCreation = true
        configuration.createToken = "open sesame"
        var logger = Logger(label: "tandem.test.server")
        logger.logLevel = .critical
        let guarded = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: logger)
        defer { Task { await guarded.shutdown() } }
        for token in ["wrong", nil] {
            let result = await Self.relay(guarded, token: token).prepareForActivation(options: clientOptions())
            #expect(Self.reason(result)?.contains("requires a creation token") == true, "\(result)")
        }
        #expect(await Self.relay(guarded, token: "open sesame").prepareForActivation(options: clientOptions())
                == .activationPreferred)
        #expect(guarded.sessionIDs.isEmpty && noCreation.sessionIDs.isEmpty)
    }

    @Test("a cancelled task gets cancelled, at once, even from a server that never answers")
    func cancellation() async throws {
        // Accepts connections and says nothing.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { silent.close(promise: nil) }
        let relay = ActivationServer.relay(host: "127.0.0.1", port: silent.localAddress!.port!)
        var patient = clientOptions()
        patient.connectTimeout = .seconds(60)
        let options = patient
        let asking = Task { await relay.prepareForActivation(options: options) }
        try await Task.sleep(for: .milliseconds(300))
        let cancelledAt = ContinuousClock.now
        asking.cancel()
        #expect(await asking.value == .cancelled)
        #expect(ContinuousClock.now - cancelledAt < .seconds(5))

        // Cancelled before it starts.
        let server = try await startTestServer(remoteCreation: true)
        defer { Task { await server.shutdown() } }
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Self.relay(server).prepareForActivation(options: clientOptions())
        }
        #expect(await early.value == .cancelled)

        // Without cancelling, the silent server's answer never comes: the connect timeout bounds the wait.
        var hasty = clientOptions()
        hasty.connectTimeout = .milliseconds(500)
        let timedOut = await relay.prepareForActivation(options: hasty)
        #expect(Self.reason(timedOut)?.contains("did not answer in time") == true, "\(timedOut)")
    }

    @Test("an embedded server: preferred while it runs, disabled once it has stopped")
    func embedded() async throws {
        let server = try await startTestServer(maxSessions: 1)
        #expect(await ActivationServer.embedded(server).prepareForActivation() == .activationPreferred)
        _ = try server.createSession()
        let full = await ActivationServer.embedded(server).prepareForActivation()
        #expect(Self.reason(full)?.contains("full (1 of 1 sessions)") == true, "\(full)")
        await server.shutdown()
        let stopped = await ActivationServer.embedded(server).prepareForActivation()
        #expect(Self.reason(stopped) == "the server is not running", "\(stopped)")
    }
}
