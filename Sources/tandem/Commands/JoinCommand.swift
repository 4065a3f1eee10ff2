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

            \(UserCommand.keyHelp)

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

    @OptionGroup(title: "Participant")
    var peer: PeerOptions

    func run() async throws {
        CLILogging.bootstrap(verbose: peer.verbose)
        try await reportingErrors {
            let (source, file) = try Self.inviteSource(argument: invite, file: file, inviteFile: inviteFile,
                                                       environment: ProcessInfo.processInfo.environment["TANDEM_INVITE"])
            let parsed: Invite
            do { parsed = try Invite(parsing: try Self.read(source)) } catch let error as InviteError { throw CLIError(error) }
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
            let host = connection.welcome.participants.first(where: \.isHost)?.participant.name
            var header: [String] = []
            if let activity {
                header.append("Joining \(activity.summary)" + (host.map { " hosted by \($0)" } ?? ""))
            } else if let envelope = connection.welcome.activity {
                header.append("Joining \"\(envelope.metadata.title ?? envelope.itemID)\"" + (host.map { " hosted by \($0)" } ?? ""))
            }
            if let metadata = connection.welcome.activity?.metadata { header += MediaActivity.metadataLines(metadata) }
            let others = connection.welcome.participants.filter { $0.participant.id != connection.localParticipantID }
            header.append("With: " + (others.isEmpty ? "nobody yet" : others.map(\.participant.name).joined(separator: ", ")))

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
            let previewDirectory = previewDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? FileManager.default.temporaryDirectory
            // Made before joining: it listens for the host's track proposals from then on.
            let console = PeerConsole(peer: participant, mode: mode, previewDirectory: previewDirectory,
                                      tracks: TrackSharing(options: peer))
            do { try await connection.send(.takePart) } catch {
                await connection.close()
                throw CLIError(.unreachable, "the connection closed while joining: \(error) — join again with the same invite")
            }
            if let activity, let difference = activity.difference(from: probe) {
                console.warn("\(difference) — you may not be watching the same thing")
            }
            try await console.run(header: header)
        }
    }

    /// Where the invite comes from.
    enum InviteSource: Equatable {
        case argument(String)
        case file(String)
        case standardInput
        case environment(String)
    }

    /// Whether a positional argument is meant as the invite rather than the media file.
    static func looksLikeInvite(_ text: String) -> Bool {
        let lower = text.lowercased()
        return text == "-" || lower.hasPrefix("tandem://") || lower.hasPrefix("tandems://")
    }

    /// Sorts the positional arguments into the invite's source and the media file: a lone positional argument that
    /// does not look like an invite (tandem://, tandems:// or -) is the file.
    static func inviteSource(argument: String?, file: String?, inviteFile: String?,
                             environment: String?) throws(CLIError) -> (source: InviteSource, file: String?) {
        let environment = environment.flatMap { $0.isEmpty ? nil : $0 }
        var argument = argument
        var file = file
        if let lone = argument, file == nil, !looksLikeInvite(lone) {
            file = lone
            argument = nil
        }
        if let inviteFile {
            guard argument == nil else {
                throw CLIError(.usage, "give the invite one way: with --invite-file or as an argument, not both")
            }
            return (.file(inviteFile), file)
        }
        if let argument { return (argument == "-" ? .standardInput : .argument(argument), file) }
        if let environment { return (.environment(environment), file) }
        throw CLIError(.usage, "no invite given — use --invite-file FILE, - to read it from standard input, or the "
            + "TANDEM_INVITE environment variable")
    }

    /// The invite's text from its source (a file's or standard input's first line).
    static func read(_ source: InviteSource) throws(CLIError) -> String {
        switch source {
        case .argument(let text), .environment(let text):
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError(.badInvite, "cannot read the invite file \(path) — check the path and its permissions")
            }
            let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { throw CLIError(.badInvite, "the invite file \(path) is empty") }
            return text
        case .standardInput:
            // Read through the same buffered stdin as the scripted commands that follow it.
            guard let line = readLine(strippingNewline: true), !line.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw CLIError(.badInvite, "no invite on the first line of standard input")
            }
            return line.trimmingCharacters(in: .whitespaces)
        }
    }
}
