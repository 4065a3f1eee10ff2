import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Tandem
import TandemOps
import TandemPeer
import TandemRelayState
import UnixSignals

/// `tandem serve`: a standalone session server (a relay on a public machine).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a standalone session server that hosts can create sessions on.",
        discussion: """
            Hosts create sessions here with `tandem host FILE --server tandem://THIS-HOST:PORT`; the invite they \
            print names this server. Logs who joins and leaves. SIGINT or SIGTERM shut it down gracefully: every \
            session ends with the reason "the server is shutting down" — unless --state-dir is given: then \
            sessions are kept there (ids, keys, roles, reconnect tokens, activity, queue, timeline, attachments) \
            and continue when the server starts again on the same machine, their peers reconnecting as themselves.

            \(TandemExit.documentation)
            """
    )

    @OptionGroup(title: "Listening")
    var listen: ListenOptions

    @Option(name: .customLong("max-sessions"), help: "Sessions hosted at once.")
    var maxSessions = RelayLimits().sessions

    @Option(name: .customLong("max-participants"), help: "Participants per session.")
    var maxParticipants = RelayLimits().participants

    @Option(name: .customLong("max-unauthenticated"),
            help: "Connections that have not authenticated yet, in all; more are closed at once.")
    var maxUnauthenticated = RelayLimits().unauthenticated

    @Option(name: .customLong("max-unauthenticated-per-address"),
            help: "Connections from one address that have not authenticated yet; more are closed at once.")
    var maxUnauthenticatedPerAddress = RelayLimits().unauthenticatedPerAddress

    @Option(name: .customLong("max-connections-per-address"),
            help: "Connections from one address, joined or not; more are closed at once.")
    var maxConnectionsPerAddress = RelayLimits().connectionsPerAddress

    @Option(name: .customLong("max-sessions-per-address"), help: "Live sessions one address may have created.")
    var maxSessionsPerAddress = RelayLimits().sessionsPerAddress

    @Option(name: .customLong("max-journal-bytes"), help: ArgumentHelp(
        "Attachment bytes held in all sessions (default: an eighth of memory, 64 MiB to 4 GiB); 256 MiB per uploading address.",
        valueName: "BYTES"))
    var maxJournalBytes = RelayLimits().journalBytes

    @Option(name: .customLong("spool-dir"), help: ArgumentHelp(
        "Where attachments are kept instead of memory, in a private directory per server process (default: $TMPDIR/tandem-spool-UID).",
        valueName: "DIR"))
    var spoolDirectory = RelayLimits().spoolDirectory

    @Option(name: .customLong("state-dir"), help: ArgumentHelp(
        "Keep sessions in this private directory (created 0700) so that they survive a restart of the server (a crash, kill -9, an upgrade) on this machine; attachments are spooled under it too, instead of --spool-dir.",
        valueName: "DIR"))
    var stateDirectory: String?

    @Option(name: .customLong("create-token-file"),
            help: ArgumentHelp("A file whose content (trimmed) is a token hosts must present to create sessions (tandem host --server URL --create-token-file FILE).",
                               valueName: "FILE"))
    var createTokenFile: String?

    @Option(name: .customLong("creations-per-minute"), help: "Sessions one address may create per minute.")
    var creationsPerMinute = RelayLimits().creationsPerMinute

    @Option(help: "Event-loop threads; sessions are spread over them, each living on one (default: one per core).")
    var threads = RelayLimits().threads

    @Option(name: .customLong("syncplay-port"), help: ArgumentHelp(
        "Also let Syncplay clients (e.g. syncplay with mpv) join this relay's sessions on PORT, with the session id as the room and the Syncplay password tandem host prints; chat does not cross (0 picks a free port).",
        valueName: "PORT"))
    var syncplayPort: Int?

    @Option(name: .customLong("metrics"), help: ArgumentHelp("Serve GET /healthz and Prometheus GET /metrics over HTTP on HOST:PORT, for the operator only: keep it on loopback or a private network (0 picks a free port).", valueName: "HOST:PORT"))
    var metrics: String?

    @Flag(name: .customLong("relay-media"), help: "Pass the items hosts share (host --share-media) between them and their joiners, sealed end to end (this relay sees sizes only), within --relay-media-rate per session: your bandwidth, off by default.")
    var relayMedia = false
    @Option(name: .customLong("relay-media-rate"), help: ArgumentHelp("With --relay-media: each session's cap, in bytes per second.", valueName: "BYTES"))
    var relayMediaRate = RelayLimits().relayMediaRate

    @Flag(name: .shortAndLong, help: "Debug logging.")
    var verbose = false

    /// The bounds these options set.
    var limits: RelayLimits {
        var limits = RelayLimits()
        (limits.sessions, limits.participants, limits.threads) = (maxSessions, maxParticipants, threads)
        (limits.unauthenticated, limits.unauthenticatedPerAddress) = (maxUnauthenticated, maxUnauthenticatedPerAddress)
        (limits.connectionsPerAddress, limits.sessionsPerAddress) = (maxConnectionsPerAddress, maxSessionsPerAddress)
        (limits.creationsPerMinute, limits.journalBytes, limits.spoolDirectory) = (creationsPerMinute, maxJournalBytes, spoolDirectory)
        (limits.relayMedia, limits.relayMediaRate) = (relayMedia, relayMediaRate)
        return limits
    }

    func validate() throws {
        if let problem = limits.problem { throw ValidationError(problem) }
        if let syncplayPort, !(0...65535).contains(syncplayPort) { throw ValidationError("--syncplay-port must be a port number (0 to 65535)") }
        do { _ = try metrics.map(OperatorAddress.init(parsing:)) } catch { throw ValidationError("\(error)") }
        if let createTokenFile, !FileManager.default.isReadableFile(atPath: createTokenFile) { throw ValidationError("--create-token-file: cannot read \(createTokenFile)") }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: verbose, defaultLevel: .info)
        let logger = Logger(label: "tandem.serve")
        try await reportingErrors {
            var configuration = limits.serverConfiguration
            configuration.web = listen.webConfiguration
            configuration.createToken = try createTokenFile.map(CreateToken.read)
            do { try stateDirectory.map { try configuration.keepState(in: $0) } } catch { throw PeerFailure(.failure, "--state-dir: \(error)") }
            let server = try await SessionServer.start(host: listen.bind, port: listen.port, tls: listen.tls,
                                                       configuration: configuration, logger: Logger(label: "tandem.server"))
            let syncplay = try await SyncplayGuests.start(relay: server, host: listen.bind, askedPort: syncplayPort)
            let operatorListener = try await OperatorListener.start(at: metrics, serving: server)
            let address = advertisedHost(bind: listen.bind)
            // Trapped before "listening on" is said: a SIGTERM right after it still shuts down gracefully.
            let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
            printLine("tandem serve: listening on \(listen.bind):\(server.port)\(server.usesTLS ? " (TLS)" : "")")
            printLine("hosts start sessions here with: tandem host FILE --server '\(server.address(advertising: address))'")
            if listen.web {
                printLine("browsers join at http\(server.usesTLS ? "s" : "")://\(address):\(server.port)/join/SESSION#SECRET "
                    + "(the host's tandem host --web prints the link)")
            }
            for line in (syncplay?.relayHeader(advertising: address) ?? []) + (operatorListener?.announcement ?? []) { printLine(line) }
            let group = ServiceGroup(configuration: .init(
                services: [.init(service: SessionServerService(server: server), successTerminationBehavior: .gracefullyShutdownGroup)], logger: logger))
            let stopper = Task { for await _ in signals { return await group.triggerGracefulShutdown() } }
            var failure: (any Error)?
            do { try await group.run() } catch { failure = error }
            stopper.cancel()
            await syncplay?.close(); await operatorListener?.close()
            if let failure { throw PeerFailure(.failure, "the server stopped: \(failure)") }
        }
    }
}
