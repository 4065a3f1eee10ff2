import ArgumentParser
import Foundation
import Tandem
import TandemPeer

/// Options every participating peer takes (`host`, `join`).
struct PeerOptions: ParsableArguments {
    @Option(help: "The name others see (default: your user name).")
    var name: String?

    @Flag(help: "Render into nothing (no window, no sound): for servers, tests and benchmarks.")
    var headless = false

    @Option(name: .customLong("video-sink"), help: ArgumentHelp(
        "A GStreamer bin description for video output, e.g. 'ximagesink' (picks a display or device).",
        valueName: "DESC"))
    var videoSink: String?

    @Option(name: .customLong("audio-sink"), help: ArgumentHelp(
        "A GStreamer bin description for audio output, e.g. 'pulsesink device=…'.", valueName: "DESC"))
    var audioSink: String?

    @Flag(name: .customLong("no-osd"), help: "No on-screen display over the video (notices stay in the terminal).")
    var noOSD = false

    @Option(name: .customLong("sub"), help: ArgumentHelp(
        "Subtitles from FILE (SubRip .srt, WebVTT .vtt, SSA/ASS), drawn over the video in sync.", valueName: "FILE"))
    var subtitleFile: String?

    @Option(name: .customLong("sub-track"), help: ArgumentHelp(
        "Show subtitle track N (from 1; `tandem probe` lists them; with --sub the file is track 1).", valueName: "N"))
    var subtitleTrack: Int?

    @Option(name: .customLong("audio-track"), help: ArgumentHelp(
        "Play audio track N (from 1; `tandem probe` lists them).", valueName: "N"))
    var audioTrack: Int?

    @Option(help: ArgumentHelp(
        "Shift only your own output by MS milliseconds (positive: later, negative: earlier), e.g. -150 for "
            + "Bluetooth headphones that lag; keys - and + change it in 10 ms steps.", valueName: "MS"))
    var offset: Double?

    @Flag(help: "Print one JSON object per line on standard output for every event (docs/SCRIPTING.md has the schema).")
    var json = false

    @Flag(name: .shortAndLong, help: "Debug logging on standard error.")
    var verbose = false

    @Option(name: .customLong("reconnect-grace"), help: ArgumentHelp(
        "After a lost link (a sleeping laptop, a Wi-Fi drop), keep reconnecting for this long before giving up with exit code 4; 0 gives up at once.",
        valueName: "SECONDS"))
    var reconnectGrace: Double = 30

    @Flag(name: .customLong("no-direct"), help: ArgumentHelp(
        "Do not share your UDP address with the session's other participants for direct paths between peers (others then cannot see it; starts they propose reach you through the server)."))
    var noDirect = false

    func validate() throws {
        if let problem = choices.problem { throw ValidationError(problem) }
    }

    /// What these options choose, for TandemPeer.
    var choices: PlayerChoices {
        var choices = PlayerChoices()
        choices.name = name
        choices.headless = headless
        (choices.videoSink, choices.audioSink, choices.overlay) = (videoSink, audioSink, !noOSD)
        (choices.subtitleFile, choices.audioTrack, choices.subtitleTrack) = (subtitleFile, audioTrack, subtitleTrack)
        choices.offsetMilliseconds = offset
        choices.reconnectGraceSeconds = reconnectGrace
        choices.directPaths = !noDirect
        return choices
    }
}

/// Where a server listens (`host`'s embedded server, `serve`).
struct ListenOptions: ParsableArguments {
    @Option(help: "The TCP port to listen on.")
    var port: Int = Invite.defaultPort

    @Option(help: ArgumentHelp("The address to listen on (0.0.0.0: every IPv4 interface; 127.0.0.1: this machine only).",
                               valueName: "ADDR"))
    var bind: String = "0.0.0.0"

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain: the link is TLS (and Syncplay clients that ask get STARTTLS).", valueName: "FILE"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key for --tls-cert.", valueName: "FILE"))
    var tlsKey: String?

    @Flag(help: ArgumentHelp("Also serve the browser page on the same port: browsers join with the printed link (the secret stays in its #fragment). The page needs https (--tls-cert) or a loopback address for WebCrypto."))
    var web = false

    /// The server's configuration of the browser page: on with --web.
    var webConfiguration: WebConfiguration? { web ? WebConfiguration() : nil }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535 (0 picks a free one)") }
        switch (tlsCert, tlsKey) {
        case (nil, nil): break
        case (.some(let cert), .some(let key)):
            for (flag, path) in [("--tls-cert", cert), ("--tls-key", key)] where !FileManager.default.isReadableFile(atPath: path) {
                throw ValidationError("\(flag): cannot read \(path)")
            }
        default:
            throw ValidationError("--tls-cert and --tls-key go together")
        }
    }

    var tls: ServerTLSFiles? {
        guard let tlsCert, let tlsKey else { return nil }
        return ServerTLSFiles(certificateChainPath: tlsCert, privateKeyPath: tlsKey)
    }
}
