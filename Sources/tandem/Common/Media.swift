import Foundation
import Tandem
import TandemPeer

/// Probes a media file for a command, turning failures into the CLI's one-line errors.
func probeMedia(_ location: String) async throws(PeerFailure) -> MediaProbe {
    do {
        return try await MediaProbe.probe(location)
    } catch {
        throw PeerFailure(error)
    }
}

/// Builds a player, turning failures (a sink that does not exist, GStreamer missing) into one-line errors.
func makePlayer(_ configuration: GStreamerPlayer.Configuration, localTimeModel: ClockMapping = .identity) throws(PeerFailure) -> GStreamerPlayer {
    do {
        return try GStreamerPlayer(configuration: configuration, localTimeModel: localTimeModel)
    } catch {
        throw PeerFailure(error)
    }
}
