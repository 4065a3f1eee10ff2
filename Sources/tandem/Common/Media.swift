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
