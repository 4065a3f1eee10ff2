import ArgumentParser
import Foundation
import Tandem
import TandemPeer

/// `tandem join [INVITE] [FILE]`: joins a session with one's own copy of the media.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a watch-together session with your own copy of the media.",
        discussion: """
            Connects with the invite the host printed, shows what is being shared, and plays FILE in step with \
            everyone. Without FILE, a file in --media-dir (default: the current directory) with the host's file \
            name is used; without a usable file, Tandem says where to get one (the host's --fallback-url) and exits. \
            Each later item of the host's queue is looked for there by its file name and checked by its content \
            fingerprint (a different file plays, with a warning); a missing one plays from its fallback URL when \
            the host gave one.

            A host started with --share-tracks proposes its audio and subtitle tracks: you are told, and they play \
            here (matched by language when your file numbers its tracks differently) unless you chose your own \
            with --audio-track, --sub-track or --sub; your keys still change them. The video window (on an X \
            display) is titled with the activity's title; f switches it to full screen.

            The invite holds the session's secret. Keep it off the command line, where other users of this machine \
            can read it: give it with --invite-file FILE, as - to read it from the first line of standard input \
            (later lines are commands), or in the TANDEM_INVITE environment variable, e.g. \
            `tandem join --invite-file invite.txt movie.webm`.

            `tandem join syncplay://HOST[:PORT]/ROOM FILE` joins a Syncplay room instead (port 8999 by default; \
            --room-password for a server with a password): the room's pauses, plays and seeks apply here, and yours \
            reach the room; its users' arrivals and chat appear as notices and chat lines.

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
        "Where to find the session's items by the host's file names (default: the current directory).",
        valueName: "DIR"))
    var mediaDir: String?

    @Option(name: .customLong("trust-roots"), help: ArgumentHelp(
        "PEM file of CA certificates to verify a TLS server against, when the invite carries no pin.",
        valueName: "FILE"))
    var trustRoots: String?

    @Option(name: .customLong("preview-dir"), help: ArgumentHelp(
        "Where to save the host's preview image when it offers one (default: the system's temporary directory).",
        valueName: "DIR"))
    var previewDir: String?

    @Option(name: .customLong("room-password"), help: ArgumentHelp(
        "With syncplay://HOST/ROOM: the Syncplay server's password, when it has one.", valueName: "PASSWORD"))
    var roomPassword: String?

    @OptionGroup(title: "Participant")
    var peer: PeerOptions

    func run() async throws {
        CLILogging.bootstrap(verbose: peer.verbose)
        try await reportingErrors {
            if let invite, SyncplayAddress.looksLikeSyncplay(invite) { return try await joinSyncplay(invite) }
            let (source, file) = try Self.inviteSource(argument: invite, file: file, inviteFile: inviteFile,
                                                       environment: ProcessInfo.processInfo.environment["TANDEM_INVITE"])
            let text: String
            do { text = try source.read() } catch { throw CLIError(error) }
            let parsed: Invite
            do { parsed = try Invite(parsing: text) } catch let error as InviteError { throw CLIError(error) }
            var options = peer.applying(to: TandemClient.Options())
            options.trustRootsPath = trustRoots
            let connection: TandemClientConnection
            // Enter without taking part: the header shows the activity and who is there; the file is checked; then
            // the peer joins and the timeline, notices and journal start to flow.
            options.waitsToJoin = true
            options.lazyAttachments = true
            do {
                connection = try await TandemClient.connect(invite: parsed, name: peer.displayName, options: options)
            } catch {
                throw CLIError(error)
            }
            let activity = connection.welcome.activity.flatMap {
                try? JSONDecoder().decode(MediaActivity.self, from: $0.payload)
            }
            let mode = PeerConsole.mode(json: peer.json)
            let header = MediaActivity.joinHeader(welcome: connection.welcome, me: connection.localParticipantID)

            // The file: the one given, or the host's file name here.
            let directory = mediaDir ?? FileManager.default.currentDirectoryPath
            let path = file ?? activity.map { activity in
                mediaDir.map { URL(fileURLWithPath: $0).appendingPathComponent(activity.fileName).path } ?? activity.fileName
            }
            let probe: MediaProbe
            do {
                guard let path else {
                    throw CLIError(.badMedia, "no media file given and the session does not name one — add your copy: tandem join INVITE FILE")
                }
                probe = try await probeMedia(path)
            } catch {
                await connection.close()
                if mode != .scripted(json: true) { for line in header { printError(line) } }
                throw CLIError(.badMedia, MediaActivity.whereToGet(activity, envelope: connection.welcome.activity, problem: CLIError(error).description, given: file))
            }
            let player: GStreamerPlayer
            let title = activity.map { $0.metadata.title ?? $0.fileName } ?? connection.welcome.activity?.metadata.title
            do { player = try peer.makePeerPlayer(title: title) } catch {
                await connection.close()
                throw error
            }
            let participant = LocalPeer(name: peer.displayName, player: player, connection: connection, file: path!,
                                        media: QueueMedia(directory: directory))
            // Subscribed before joining: a track proposal the host sends this newcomer at once is not missed.
            let proposals = participant.trackProposals()
            do { try await connection.send(.takePart) } catch {
                await connection.close()
                throw CLIError(.unreachable, "the connection closed while joining: \(error) — join again with the same invite")
            }
            let previewDirectory = previewDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? FileManager.default.temporaryDirectory
            let warnings = activity.flatMap { $0.difference(from: probe) }
                .map { ["\($0) — you may not be watching the same thing"] } ?? []
            try await PeerConsole(mode: mode).run(participant, previewDirectory: previewDirectory, header: header,
                                                  warnings: warnings, tracks: TrackSharing(options: peer),
                                                  proposals: proposals)
        }
    }

    /// Sorts the positional arguments into the invite's source and the media file (see `InviteSource.sort`).
    static func inviteSource(argument: String?, file: String?, inviteFile: String?,
                             environment: String?) throws(CLIError) -> (source: InviteSource, file: String?) {
        do { return try InviteSource.sort(argument: argument, file: file, inviteFile: inviteFile, environment: environment) } catch {
            throw CLIError(error)
        }
    }
}
