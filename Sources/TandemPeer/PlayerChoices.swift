import Foundation
import Tandem

/// What a participant chose for its own player and name (the CLI's participant options, or an app's settings).
public struct PlayerChoices: Sendable {
    /// The name others see; nil: `PlayerChoices.defaultName`.
    public var name: String?
    /// Render into nothing (no window, no sound).
    public var headless = false
    /// GStreamer bin descriptions for the outputs (nil: automatic).
    public var videoSink: String?
    public var audioSink: String?
    public var overlay = true
    public var subtitleFile: String?
    /// Track numbers as people count them, from 1.
    public var audioTrack: Int?
    public var subtitleTrack: Int?
    /// A personal output offset in milliseconds (positive: later).
    public var offsetMilliseconds: Double?
    /// How long to keep reconnecting after a lost link, in seconds (0 to 3600).
    public var reconnectGraceSeconds: Double = 30
    /// Share this peer's UDP endpoint with the session's other participants that share theirs, for direct paths
    /// (`TandemClient.Options.directPaths`).
    public var directPaths = true

    public init() {}

    /// What is wrong with these choices, in the words of the options that set them; nil when nothing is.
    package var problem: String? {
        if let name, name.trimmingCharacters(in: .whitespaces).isEmpty || name.count > 40 {
            return "--name must be 1 to 40 characters"
        }
        if let offset = offsetMilliseconds, !(offset.isFinite && abs(offset) <= 2_000) {
            return "--offset must be -2000 to 2000 milliseconds"
        }
        if let track = audioTrack, track < 1 { return "--audio-track counts from 1" }
        if let track = subtitleTrack, track < 1 { return "--sub-track counts from 1" }
        if let subtitleFile {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: subtitleFile, isDirectory: &isDirectory), !isDirectory.boolValue
            else { return "--sub: no such file: \(subtitleFile) — check the path" }
        }
        if !(reconnectGraceSeconds.isFinite && (0...3600).contains(reconnectGraceSeconds)) {
            return "--reconnect-grace must be 0 to 3600 seconds (0 disables reconnecting)"
        }
        if headless, videoSink != nil || audioSink != nil {
            return "--headless renders into nothing; leave out --video-sink and --audio-sink, or drop --headless"
        }
        return nil
    }

    /// The name shown to others: the chosen one, else the user's name, else the machine's.
    public var displayName: String {
        if let name { return name.trimmingCharacters(in: .whitespaces) }
        let user = ProcessInfo.processInfo.environment["USER"] ?? ""
        guard user.isEmpty || user == "root" else { return user }
        return ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "guest"
    }

    /// The connection options with this participant's reconnect grace period.
    public var clientOptions: TandemClient.Options {
        var options = TandemClient.Options()
        options.reconnectGracePeriod = .seconds(min(max(reconnectGraceSeconds, 0), 3600))
        options.directPaths = directPaths
        return options
    }

    public var playerConfiguration: GStreamerPlayer.Configuration {
        var configuration = GStreamerPlayer.Configuration()
        if headless {
            configuration.videoSink = .headless
            configuration.audioSink = .headless
        } else {
            configuration.videoSink = videoSink.map { .description($0) } ?? .automatic
            configuration.audioSink = audioSink.map { .description($0) } ?? .automatic
        }
        configuration.overlay = overlay
        configuration.subtitleFile = subtitleFile
        configuration.preferredAudioTrack = audioTrack.map { $0 - 1 }
        configuration.preferredSubtitleTrack = subtitleTrack.map { $0 - 1 }
        return configuration
    }

    /// The player these choices describe, with the personal offset applied; its video window is titled `title`.
    package func makePlayer(title: String? = nil) throws(PeerFailure) -> GStreamerPlayer {
        var configuration = playerConfiguration
        configuration.windowTitle = title
        let player = try PeerFailure.making { try GStreamerPlayer(configuration: configuration) }
        if let offsetMilliseconds { player.setOutputOffset(.milliseconds(offsetMilliseconds)) }
        RenderLog.startIfAsked(for: player)
        return player
    }

    /// Track sharing as chosen: a sharing host proposes the kinds it chose; a joiner keeps them.
    package func trackSharing(share: Bool = false) -> TrackSharing {
        var chosen = Set<TrackProposal.Kind>()
        if audioTrack != nil { chosen.insert(.audio) }
        if subtitleTrack != nil || (!share && subtitleFile != nil) { chosen.insert(.subtitle) }
        return TrackSharing(share: share, chosen: chosen)
    }
}

extension MediaProbe {
    /// Probes `location`, a failure in the CLI's one-line words.
    package static func probeForPeer(_ location: String) async throws(PeerFailure) -> MediaProbe {
        try await PeerFailure.making { try await MediaProbe.probe(location) }
    }
}

extension PeerFailure {
    /// Runs `make`, turning a failure (a sink that does not exist, GStreamer missing, a file that cannot be probed)
    /// into the CLI's one-line error.
    package static func making<Value>(_ make: () async throws -> Value) async throws(PeerFailure) -> Value {
        do { return try await make() } catch let failure as PeerFailure { throw failure } catch { throw PeerFailure(error) }
    }

    package static func making<Value>(_ make: () throws -> Value) throws(PeerFailure) -> Value {
        do { return try make() } catch let failure as PeerFailure { throw failure } catch { throw PeerFailure(error) }
    }
}
