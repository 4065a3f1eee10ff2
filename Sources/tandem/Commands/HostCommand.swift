import ArgumentParser
import Foundation
import Logging
import Tandem
import TandemPeer

/// `tandem host FILE…`: starts a session on FILE (a queue of them), prints its invite and takes part as the first
/// participant.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Start a watch-together session on FILE (or a queue of files), print its invite, and take part.",
        discussion: """
            Runs a session server inside this process (or uses a standalone one given with --server), creates a \
            session for FILE and prints an invite (and with --invite-file writes it to a file only you can read). \
            Friends join with `tandem join --invite-file INVITE-FILE THEIR-COPY`. Nobody starts \
            until everyone's player has loaded; space (or `play` on stdin) starts the group.

            Several files (or --playlist FILE, one path per line, # comments) make a queue: the group moves on \
            together at the end of each item, n/p (or `next`/`prev` on stdin) skip, `jump K` goes to item K, and \
            `queue add PATH`, `queue remove K` and `queue move K TO` edit the queue; joiners find each item \
            by its file name in their --media-dir.

            Audio and subtitle track choices stay personal; with --share-tracks, yours (--audio-track, \
            --sub-track, and the a and s keys) are proposed to everyone, and each joiner plays the same track \
            (by language when their file numbers tracks differently) unless they chose their own on the command \
            line.

            The video window (on an X display) is titled with the activity's title; f switches it to full screen.

            The session ends for everyone when the host leaves.

            \(UserCommand.keyHelp)

            \(UserCommand.lineHelp)

            \(TandemExit.documentation)
            """
    )

    @Argument(help: ArgumentHelp("The media files to play, in order (paths, file://, http:// or https:// URIs).",
                                 valueName: "file"))
    var files: [String] = []

    @Option(help: ArgumentHelp("A playlist: one media path per line (relative to the playlist's directory); blank lines and lines starting with # are skipped. Its items follow FILEs.",
                               valueName: "FILE"))
    var playlist: String?

    @Option(help: "The title others see for the first item (default: the file's title tag, or its name).")
    var title: String?

    @Option(help: "A subtitle others see.")
    var subtitle: String?

    @Option(help: ArgumentHelp("The activity type: \(ActivityType.knownTypes.map(\.rawValue).joined(separator: ", ")) (default: watchTogether for video, listenTogether for audio).",
                               valueName: "TYPE"))
    var type: String?

    @Option(name: .customLong("fallback-url"), help: ArgumentHelp("Where others can get the media if they lack it.",
                                                                  valueName: "URL"))
    var fallbackURL: String?

    @Option(help: ArgumentHelp("A preview image (PNG, JPEG, GIF or WebP, at most 256 KiB) offered to joiners through the session's journal.",
                               valueName: "FILE"))
    var preview: String?

    @OptionGroup(title: "Embedded server")
    var listen: ListenOptions

    @Flag(help: "Do not ask the home router (UPnP-IGD, NAT-PMP) to forward the port (also TANDEM_PORT_MAPPING=off).")
    var noPortMapping = false
    @Option(help: ArgumentHelp("The host name or address put in the invite (default: this machine's first non-loopback IPv4 address, or --bind when it names one).",
                               valueName: "HOST"))
    var advertise: String?

    @Option(help: ArgumentHelp("Host on a standalone server (`tandem serve`) instead: its address tandem://HOST:PORT, or a full invite to reuse (its secret is then visible to other users of this machine: use --server-file or $TANDEM_SERVER).",
                               valueName: "INVITE-OR-URL"))
    var server: String?

    @Option(name: .customLong("server-file"), help: ArgumentHelp(
        "Read --server's value from FILE (its first line), off the command line; without either, $TANDEM_SERVER is used.",
        valueName: "FILE"))
    var serverFile: String?

    @Option(name: .customLong("invite-file"), help: ArgumentHelp(
        "Also write the invite to FILE, readable by you alone (mode 0600), to hand on without a command line.",
        valueName: "FILE"))
    var inviteFile: String?

    @Option(name: .customLong("create-token-file"),
            help: ArgumentHelp("With --server: a file holding the server's creation token (for servers started with --create-token-file).",
                               valueName: "FILE"))
    var createTokenFile: String?

    @Flag(name: .customLong("web-media"), help: ArgumentHelp(
        "With --web: browsers of the session's members may stream the first file from this machine (HTTP range requests), for those without a copy."))
    var webMedia = false

    @Flag(name: .customLong("share-media"), help: ArgumentHelp(
        "Offer every item of the queue to the session's members over the session port (HTTP range requests with tokens from the invite's secret), so that a joiner without a copy streams yours; on a relay (--server), through the relay, sealed, if it runs with --relay-media. Uses your upload: off by default."))
    var shareMedia = false

    @Flag(name: .customLong("share-tracks"), help: """
        Propose your audio and subtitle track choices (--audio-track, --sub-track, and the a and s keys) to \
        everyone: each joiner is told, and plays the same track (matched by language when their file numbers \
        tracks differently) unless they chose their own on the command line. Without it, track choices stay \
        personal.
        """)
    var shareTracks = false

    @Option(name: .customLong("syncplay-port"), help: ArgumentHelp(
        "Also let Syncplay clients (e.g. syncplay with mpv) join on PORT, with the session id as the room and the Syncplay password the header prints (0 picks a free port).",
        valueName: "PORT"))
    var syncplayPort: Int?

    @OptionGroup(title: "Participant")
    var peer: PeerOptions

    /// Where the standalone server's address comes from: --server, --server-file or $TANDEM_SERVER (nil: embedded).
    func serverSource() throws(PeerFailure) -> InviteSource? {
        try InviteSource.option("--server", argument: server, fileOption: "--server-file", file: serverFile,
                                environment: ProcessInfo.processInfo.environment[CommandLineSecrets.serverVariable])
    }

    func validate() throws {
        let server: InviteSource?
        do { server = try serverSource() } catch { throw ValidationError(error.description) }
        if files.isEmpty, playlist == nil {
            throw ValidationError("Missing expected argument '<file>' — give the media to share: one or more files, "
                + "or --playlist FILE")
        }
        if let problem = HostedItems.problem(type: type, fallbackURL: fallbackURL) { throw ValidationError(problem) }
        if createTokenFile != nil, server == nil {
            throw ValidationError("--create-token-file goes with --server (or --server-file, $TANDEM_SERVER: an embedded server needs no token)")
        }
        if let createTokenFile, !FileManager.default.isReadableFile(atPath: createTokenFile) {
            throw ValidationError("--create-token-file: cannot read \(createTokenFile)")
        }
        if webMedia, !listen.web || server != nil {
            throw ValidationError("--web-media goes with --web on the embedded server (not with --server, --server-file or $TANDEM_SERVER)")
        }
        if webMedia, let first = files.first, first.contains("://") || !FileManager.default.isReadableFile(atPath: first) {
            throw ValidationError("--web-media streams a local file: \(first) is not one")
        }
        if let syncplayPort, !(0...65535).contains(syncplayPort) { throw ValidationError("--syncplay-port must be a port number (0 to 65535)") }
        if server != nil, listen.tls != nil {
            throw ValidationError("--tls-cert/--tls-key configure the embedded server; with --server (--server-file, $TANDEM_SERVER) the standalone server has its own")
        }
    }

    func run() async throws {
        CLILogging.bootstrap(verbose: peer.verbose)
        try await reportingErrors {
            let serverSource = try serverSource()
            let exposed = CommandLineSecrets.warnings(server: serverSource)
            warnAboutCommandLine(exposed)
            let previewImage = try PreviewImage.read(option: preview)
            let paths = try files + (playlist.map { try Playlist.read($0) } ?? [])
            let file = paths[0]
            let items = try await HostedItems.make(paths: paths, title: title, subtitle: subtitle,
                                                   type: type.map { ActivityType(rawValue: $0) },
                                                   fallbackURL: fallbackURL.flatMap(URL.init(string:)),
                                                   shared: shareMedia) { try await MediaProbe.probeForPeer($0) }
            let player = try peer.choices.makePlayer(title: items.activity.metadata.title ?? items.activity.fileName)
            let config = serverSource == nil ? try TandemConfiguration.load() : TandemConfiguration()
            let place: HostServer = try serverSource.map {
                .standalone(address: try $0.read("server"), createToken: try createTokenFile.map(CreateToken.read), sharesMedia: shareMedia)
            }
                ?? .embedded(bind: listen.bind, port: listen.port, tls: listen.tls, web: listen.webConfiguration, advertise: advertise,
                             streamsFirstFile: webMedia, portMapping: try .from(noPortMapping: noPortMapping || config.portMapping == false),
                             fallbackRelay: try config.fallbackRelay(), sharesMedia: shareMedia)
            let hosted = try await HostSession.start(items: items, file: file, on: place, name: peer.choices.displayName,
                                                     player: player, options: peer.choices.clientOptions,
                                                     preview: previewImage, inviteFile: inviteFile,
                                                     syncplayPort: syncplayPort, syncplayBind: listen.bind) {
                printError("tandem: warning: \($0)")
            }
            let header = items.header(invite: hosted.invite, paths: paths, web: listen.web) + hosted.headerLines
            // The embedded server runs beside the peer and ends with it ("the host left"); the router's mapping too.
            do {
                try await PeerConsole(mode: PeerConsole.mode(json: peer.json)).run(
                    hosted.participant, header: header, invite: hosted.invite, web: listen.web, syncplay: hosted.syncplayEvent,
                    reachability: hosted.reachability, server: hosted.server, warnings: peer.json ? exposed : [],
                    tracks: peer.choices.trackSharing(share: shareTracks))
            } catch { await hosted.finish(); throw error }
            await hosted.finish()
        }
    }
}
