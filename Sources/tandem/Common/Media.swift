import Foundation
import Tandem

/// Probes a media file for a command, turning failures into the CLI's one-line errors.
func probeMedia(_ location: String) async throws(CLIError) -> MediaProbe {
    do {
        return try await MediaProbe.probe(location)
    } catch {
        throw CLIError(error)
    }
}

/// Builds a player, turning failures (a sink that does not exist, GStreamer missing) into one-line errors.
func makePlayer(_ configuration: GStreamerPlayer.Configuration, localTimeModel: ClockMapping = .identity) throws(CLIError) -> GStreamerPlayer {
    do {
        return try GStreamerPlayer(configuration: configuration, localTimeModel: localTimeModel)
    } catch {
        throw CLIError(error)
    }
}
