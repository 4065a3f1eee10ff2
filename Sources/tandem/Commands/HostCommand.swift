import ArgumentParser
import Foundation
import Logging
import Tandem

/// `tandem host FILE`: starts a session on FILE, prints its invite and takes part as the first participant.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Start a watch-together session on FILE, print its invite, and take part.",
        discussion: """
            Runs a session server inside this process (or uses a standalone one given with --server), creates a \
            session for FILE and prints an invite (and with --invite-file writes it to a file only you can read). \
            Friends join with `tandem join --invite-file INVITE-FILE THEIR-COPY`. Nobody starts \
            until everyone's player has loaded; space (or `play` on stdin) starts the group.

            The session ends for everyone when the host leaves.

            \(TandemExit.documentation)
            """
    )

    @Argument(help: "The media file to play (a path, file://, http:// or https:// URI).")
    var file: String

    @Option(help: "The title others see (default: the file's title tag, or its name).")
    var title: String?

    @Option(help: "A subtitle others see.")
    var subtitle: String?

    @Option(help: ArgumentHelp("The activity type: \(ActivityType.knownTypes.map(\.rawValue).joined(separator: ", ")) (default: watchTogether for video, listenTogether for audio).",
                               valueName: "TYPE"))
    var type: String?

    @Option(name: .customLong("fallback-url"), help: ArgumentHelp("Where others can get the media if they lack it.",
                                                                  valueName: "URL"))
    var fallbackURL: String?

    @OptionGroup(title: "Embedded server")
    var listen: ListenOptions

    @Option(help: ArgumentHelp("The host name or address put in the invite (default: this machine's first non-loopback IPv4 address, or --bind when it names one).",
                               valueName: "HOST"))
    var advertise: String?

    @Option(help: ArgumentHelp("Host on a standalone server (`tandem serve`) instead: its address tandem://HOST:PORT, or a full invite to reuse.",
                               valueName: "INVITE-OR-URL"))
    var server: String?

    @Option(name: .customLong("invite-file"), help: ArgumentHelp(
        "Also write the invite to FILE, readable by you alone (mode 0600), to hand on without a command line.",
        valueName: "FILE"))
    var inviteFile: String?

    @Option(name: .customLong("create-token-file"),
            help: ArgumentHelp("With --server: a file holding the server's creation token (for servers started with --create-token-file).",
                               valueName: "FILE"))
    var createTokenFile: String?

    @OptionGroup(title: "Participant")
    var peer: PeerOptions

    func validate() throws {
        if let type, !type.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) || type.isEmpty {
            throw ValidationError("--type must be a word such as watchTogether or listenTogether")
        }
        if let fallbackURL {
            guard let url = URL(string: fallbackURL), url.scheme != nil else {
                throw ValidationError("--fallback-url must be a full URL, e.g. https://example.com/movie.webm")
            }
        }
        if createTokenFile != nil, server == nil {
            throw ValidationError("--create-token-file goes with --server (an embedded server needs no token)")
        }
        if let createTokenFile, !FileManager.default.isReadableFile(atPath: createTokenFile) {
            throw ValidationError("--create-token-file: cannot read \(createTokenFile)")
        }
        if server != nil, listen.tls != nil {
            throw ValidationError("--tls-cert/--tls-key configure the embedded server; with --server the standalone server has its own")
        }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: peer.verbose)
        try await reportingErrors {
            let probe = try await probeMedia(file)
            let activity = MediaActivity(probe: probe, path: file, title: title, subtitle: subtitle,
                                         type: type.map { ActivityType(rawValue: $0) },
                                         fallbackURL: fallbackURL.flatMap(URL.init(string:)))
            let envelope: ActivityEnvelope
            do { envelope = try activity.envelope } catch { throw CLIError(.failure, "cannot encode the activity: \(error)") }
            let player = try makePlayer(peer.playerConfiguration)

            var options = peer.applying(to: TandemClient.Options())
            options.asHost = true
            let invite: Invite
            let dial: Invite
            var embedded: SessionServer?
            if let server {
                invite = try Self.sessionInvite(onServer: server)
                options.createSession = true
                if let createTokenFile {
                    options.createToken = try readCreateToken(createTokenFile)
                }
                dial = invite
            } else {
                let started: SessionServer
                do {
                    started = try await SessionServer.start(host: listen.bind, port: listen.port, tls: listen.tls,
                                                            configuration: ServerConfiguration(),
                                                            logger: Logger(label: "tandem.server"))
                } catch let error as SessionServerError {
                    throw CLIError(error)
                }
                embedded = started
                let everywhere = listen.bind == "0.0.0.0" || listen.bind == "::"
                let advertised = advertise ?? (everywhere ? primaryIPv4Address() : listen.bind)
                do {
                    invite = try started.createSession(advertisedHost: advertised, activity: envelope)
                } catch let error as SessionServerError {
                    await started.shutdown()
                    throw CLIError(error)
                }
                var local = invite
                local.host = everywhere ? "127.0.0.1" : listen.bind
                dial = local
            }

            let participant: LocalPeer
            do {
                participant = try await LocalPeer.connect(invite: dial, name: peer.displayName, file: file,
                                                          player: player, options: options)
            } catch {
                await embedded?.shutdown()
                throw error
            }
            if server != nil {
                do { try await participant.session.setActivity(activity, itemID: activity.itemID) } catch {
                    await participant.leave()
                    throw CLIError(.failure, "could not set the session's activity: \(error)")
                }
            }
            if let inviteFile {
                do { try Self.writeInvite(invite, to: inviteFile) } catch {
                    await participant.leave()
                    await embedded?.shutdown()
                    throw error
                }
            }
            let console = await PeerConsole(peer: participant, mode: PeerConsole.mode(json: peer.json))
            console.emit("invite", ["invite": .string(invite.description)])
            let header = [
                "Hosting \(activity.summary)",
                "Invite: \(invite)",
                "Others join with: TANDEM_INVITE='\(invite)' tandem join \(activity.fileName)",
            ]
            do {
                try await console.run(header: header)
            } catch {
                await embedded?.shutdown(reason: InvalidationReason(code: .hostLeft, message: "the host left"))
                throw error
            }
            await embedded?.shutdown(reason: InvalidationReason(code: .hostLeft, message: "the host left"))
        }
    }

    /// Writes `invite` and a newline to `path`, which only its owner may read or write (mode 0600, also when the
    /// file existed before).
    static func writeInvite(_ invite: Invite, to path: String) throws(CLIError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CLIError(.failure, "cannot write the invite to \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else {
            throw CLIError(.failure, "cannot make \(path) private: \(String(cString: strerror(errno)))")
        }
        let bytes = Array((invite.description + "\n").utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            guard n > 0 else {
                throw CLIError(.failure, "cannot write the invite to \(path): \(String(cString: strerror(errno)))")
            }
            written += n
        }
    }

    /// The invite for a session on a standalone server: `text` is a full invite (reused as it is) or a server
    /// address `tandem://HOST[:PORT][/SESSION]` (a fresh session name and secret are made up where missing).
    static func sessionInvite(onServer text: String) throws(CLIError) -> Invite {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let invite = try? Invite(parsing: trimmed) { return invite }
        guard var components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
              scheme == "tandem" || scheme == "tandems", !(components.host ?? "").isEmpty else {
            throw CLIError(.badInvite,
                           "--server \"\(text)\" is not a server address — use tandem://HOST:PORT (or tandems:// for TLS)")
        }
        let fresh = Invite.random(host: "localhost", port: Invite.defaultPort)
        if components.path.split(separator: "/").isEmpty { components.path = "/" + fresh.session }
        if (components.fragment ?? "").isEmpty { components.fragment = fresh.secret }
        do {
            return try Invite(parsing: components.string ?? trimmed)
        } catch {
            throw CLIError(.badInvite, "--server: \(error.description)")
        }
    }
}
