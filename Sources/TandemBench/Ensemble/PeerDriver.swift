import Tandem
import TandemPeer

/// What drives one peer's engine from the session and takes its person's requests: Tandem's
/// `PlaybackCoordinator` (`LocalPeer`), or a baseline's published rules (`BaselinePeer`, benchmarks only).
package protocol PeerDriver: AnyObject, Sendable {
    var connection: TandemClientConnection { get }
    var engine: any PlaybackEngine { get }
    /// The session as the library's `GroupSession` sees it (participants, notices, leaving, ending).
    var session: GroupSession<MediaActivity> { get }
    /// Plays with the group until the session ends for this peer.
    func run() async
    func play() async
    /// Pauses here at once and asks everyone to stop at this peer's position.
    func pause() async
    func seek(to itemTime: ItemTime) async
    func setRate(_ rate: Double) async
    func leave() async
    func end() async throws
    /// The session time this peer believes it is at local time `local`, nil when it keeps no such estimate.
    func estimatedSessionTime(atLocal local: LocalInstant) async -> SessionInstant?
}

extension LocalPeer: PeerDriver {
    package func play() async { await coordinator.play() }
    package func pause() async { await coordinator.pause() }
    // A benchmark's seeks and rates are inside its item and the default limits; a refusal would show as a missing
    // change in the report.
    package func seek(to itemTime: ItemTime) async { try? await coordinator.seek(to: itemTime) }
    package func setRate(_ rate: Double) async { try? await coordinator.setRate(rate) }
    package func estimatedSessionTime(atLocal local: LocalInstant) async -> SessionInstant? {
        connection.clockMapping()?.sessionTime(atLocal: local)
    }
}
