import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Tandem

/// `tandem serve`: a standalone session server (a relay on a public machine).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a standalone session server that hosts can create sessions on.",
        discussion: """
            Hosts create sessions here with `tandem host FILE --server tandem://THIS-HOST:PORT`; the invite they \
            print names this server. Logs who joins and leaves. SIGINT or SIGTERM shut it down gracefully: every \
            session ends with the reason "the server is shutting down".

            \(TandemExit.documentation)
            """
    )

    @OptionGroup(title: "Listening")
    var listen: ListenOptions

    @Option(name: .customLong("max-sessions"), help: "Sessions hosted at once.")
    var maxSessions = 100

    @Option(name: .customLong("max-participants"), help: "Participants per session.")
    var maxParticipants = 32

    @Flag(name: .shortAndLong, help: "Debug logging.")
    var verbose = false

    func validate() throws {
        guard maxSessions >= 1 else { throw ValidationError("--max-sessions must be at least 1") }
        guard maxParticipants >= 2 else { throw ValidationError("--max-participants must be at least 2") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: verbose, defaultLevel: .info)
        let logger = Logger(label: "tandem.serve")
        try await reportingErrors {
            var authority = AuthorityConfiguration()
            authority.maxParticipants = maxParticipants
            var configuration = ServerConfiguration(authority: authority)
            configuration.maxSessions = maxSessions
            configuration.allowsRemoteSessionCreation = true
            let server: SessionServer
            do {
                server = try await SessionServer.start(host: listen.bind, port: listen.port, tls: listen.tls,
                                                       configuration: configuration, logger: Logger(label: "tandem.server"))
            } catch let error as SessionServerError {
                throw CLIError(error)
            }
            let everywhere = listen.bind == "0.0.0.0" || listen.bind == "::"
            let address = everywhere ? primaryIPv4Address() : listen.bind
            var url = "\(server.usesTLS ? "tandems" : "tandem")://\(address):\(server.port)"
            if let pin = server.certificateSHA256 {
                url += "?pin=" + pin.map { String(format: "%02x", $0) }.joined()
            }
            printLine("tandem serve: listening on \(listen.bind):\(server.port)\(server.usesTLS ? " (TLS)" : "")")
            printLine("hosts start sessions here with: tandem host FILE --server '\(url)'")
            let group = ServiceGroup(configuration: .init(
                services: [.init(service: ServerService(server: server), successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
            do {
                try await group.run()
            } catch {
                throw CLIError(.failure, "the server stopped: \(error)")
            }
        }
    }
}

/// Runs a `SessionServer` until a graceful shutdown, which ends every session with a reason.
struct ServerService: Service {
    let server: SessionServer

    func run() async throws {
        await withGracefulShutdownHandler {
            await server.waitUntilStopped()
        } onGracefulShutdown: {
            Task { await server.shutdown() }
        }
        // The listener closes first; wait until every session has been told and the loops are down.
        await server.shutdown()
    }
}
