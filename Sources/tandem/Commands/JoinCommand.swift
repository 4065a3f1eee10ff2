import ArgumentParser
import Foundation
import Tandem
import TandemPeer
import TandemBench

/// `tandem join [INVITE] [FILE]`: joins a session with one's own copy of the media.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a watch-together session with your own copy of the media.",
        discussion: """
            Connects with the invite the host printed, shows what is being shared, and plays FILE in step with \
            everyone. Without FILE, a file in --media-dir (default: the current directory) with the host's file \
            name is used; without a usable file, the host's copy streams when the host shares it (--share-media; \
            --stream streams it even when you have one), and otherwise Tandem says where to get one (the host's \
            --fallback-url) and exits. Each later item of the host's queue is looked for there by its file name and \
            checked by its content fingerprint (a different file plays, with a warning); a missing one streams from \
            the host when it shares it, else plays from its fallback URL when the host gave one.

            A host started with --share-tracks proposes its audio and subtitle tracks: you are told, and they play \
            here (matched by language when your file numbers its tracks differently) unless you chose your own \
            with --audio-track, --sub-track or --sub; your keys still change them. The video window (on an X \
            display) is titled with the activity's title; f switches it to full screen.

            The invite holds the session's secret. Keep it off the command line, where other users of this machine \
            can read it: give it with --invite-file FILE, as - to read it from the first line of standard input \
            (later lines are commands), or in the TANDEM_INVITE environment variable, e.g. \
            `tandem join --invite-file invite.txt movie.webm`.

            `tandem join syncplay://HOST[:PORT]/ROOM FILE` joins a Syncplay room instead (port 8999 by default; \
            --room-password-file FILE or TANDEM_ROOM_PASSWORD for a server with a password; syncplays:// insists \
            on TLS, checked against --trust-roots or \
            the system's certificates): the room's pauses, plays and seeks apply here, and yours \
            reach the room; its users' arrivals and chat appear as notices and chat lines. The room's shared playlist \
            becomes the queue (its entries found by name in FILE's directory and each --media-dir), and your queue \
            changes reach the room.

            \(UserCommand.keyHelp)

            \(UserCommand.lineHelp)

            \(TandemExit.documentation)
            """
    )

    @Argument(help: ArgumentHelp(
        "The invite the host printed (tandem://HOST:PORT/SESSION#SECRET, or tandems:// for TLS), or - to read it from standard input. Omit it to use --invite-file or $TANDEM_INVITE; an invite given here is visible to other users of this machine.",
        valueName: "invite"))
    var invite: String?

    @Argument(help: "Your copy of the media (default: the host's file name in the current directory).")
    var file: String?

    @Option(name: .customLong("invite-file"), help: ArgumentHelp(
        "Read the invite from FILE (its first line) instead of the command line.", valueName: "FILE"))
    var inviteFile: String?

    @Option(name: .customLong("media-dir"), help: ArgumentHelp(
        "Where to find the session's items by the host's file names (default: the current directory). With syncplay://, where to look for the room's playlist entries besides FILE's directory (repeatable).",
        valueName: "DIR"))
    var mediaDir: [String] = []

    @Option(name: .customLong("trust-roots"), help: ArgumentHelp(
        "PEM file of CA certificates to verify a TLS server against (a tandems:// invite without a pin, or syncplays://).",
        valueName: "FILE"))
    var trustRoots: String?

    @Option(name: .customLong("preview-dir"), help: ArgumentHelp(
        "Where to save the host's preview image when it offers one (default: the system's temporary directory).",
        valueName: "DIR"))
    var previewDir: String?

    @Option(name: .customLong("room-password"), help: ArgumentHelp(
        "With syncplay://HOST/ROOM: the Syncplay server's password, when it has one (visible to other users of this machine: prefer --room-password-file or $TANDEM_ROOM_PASSWORD).",
        valueName: "PASSWORD"))
    var roomPassword: String?

    @Option(name: .customLong("room-password-file"), help: ArgumentHelp(
        "With syncplay://HOST/ROOM: read the Syncplay server's password from FILE (its first line); without it or --room-password, $TANDEM_ROOM_PASSWORD is used.",
        valueName: "FILE"))
    var roomPasswordFile: String?

    @Flag(name: .customLong("stream"), help: "Play the host's copy over the session port even when you have your own (the host shares it with --share-media).")
    var stream = false

    @Flag(name: .customLong("syncplay-only"), help: "With syncplay://: follow the room by Syncplay's rules alone — neither offer this session to the room's other Tandem peers nor join one they offer (nothing listens beyond 127.0.0.1).")
    var syncplayOnly = false

    @OptionGroup(title: "Participant")
    var peer: PeerOptions

    func run() async throws {
        CLILogging.bootstrap(verbose: peer.verbose)
        try await reportingErrors {
            if let invite, SyncplayAddress.looksLikeSyncplay(invite) { return try await joinSyncplay(invite) }
            guard !stream || file == nil else { throw PeerFailure(.usage, "--stream plays the host's copy: give no FILE with it") }
            guard mediaDir.count <= 1 else { throw PeerFailure(.usage, "give one --media-dir to join a session (several are for syncplay:// rooms)") }
            let mediaDir = mediaDir.first
            let (source, file) = try Self.inviteSource(argument: invite, file: file, inviteFile: inviteFile,
                                                       environment: ProcessInfo.processInfo.environment["TANDEM_INVITE"])
            let exposed = CommandLineSecrets.warnings(invite: source)
            warnAboutCommandLine(exposed)
            let text = try source.read()
            let parsed: Invite
            do { parsed = try Invite(parsing: text) } catch let error as InviteError { throw PeerFailure(error) }
            var options = peer.choices.clientOptions
            options.trustRootsPath = trustRoots
            do { options = try BenchLink.applying(to: options) } catch { throw PeerFailure(.usage, "\(error)") }
            // Enter without taking part: the header shows the activity and who is there; the file is checked; then
            // the peer joins and the timeline, notices and journal start to flow.
            let joining: JoiningPeer
            do { joining = try await .enter(invite: parsed, name: peer.choices.displayName, options: options) } catch {
                throw PeerFailure(error)
            }
            let mode = PeerConsole.mode(json: peer.json)
            let media: (path: String, probe: MediaProbe?)
            do { media = try await joining.media(file: file, mediaDirectory: mediaDir, stream: stream) } catch {
                if mode != .scripted(json: true) { for line in joining.header { printError(line) } }
                throw error
            }
            let player: GStreamerPlayer
            do { player = try peer.choices.makePlayer(title: joining.title) } catch {
                await joining.connection.close()
                throw error
            }
            let (participant, proposals) = try await joining.takePart(name: peer.choices.displayName, player: player,
                                                                      path: media.path, mediaDirectory: mediaDir,
                                                                      stream: stream)
            let previewDirectory = previewDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? FileManager.default.temporaryDirectory
            try await PeerConsole(mode: mode).run(participant, previewDirectory: previewDirectory, header: joining.header,
                                                  warnings: (peer.json ? exposed : []) + joining.warnings(for: media.probe),
                                                  tracks: peer.choices.trackSharing(), proposals: proposals)
        }
    }

    /// Sorts the positional arguments into the invite's source and the media file (see `InviteSource.sort`).
    static func inviteSource(argument: String?, file: String?, inviteFile: String?,
                             environment: String?) throws(PeerFailure) -> (source: InviteSource, file: String?) {
        try InviteSource.sort(argument: argument, file: file, inviteFile: inviteFile, environment: environment)
    }
}
