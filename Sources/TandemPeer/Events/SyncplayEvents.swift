import Foundation

/// `syncplay` (host, after `invite`, with `--syncplay-port` or on a relay): where Syncplay users join this session —
/// the values of the header's `syncplay --host HOST:PORT --room=ROOM --password=PASSWORD FILE` line.
package struct SyncplayJoinEvent: PeerEvent, Equatable {
    package static let name = "syncplay"
    /// The address Syncplay users connect to (the invite's).
    package var host: String
    /// The host's own Syncplay listener; null on a relay (its `tandem serve --syncplay-port`, which the host does not
    /// know).
    @Nullable package var port: Int?
    /// The session id.
    package var room: String
    /// The session's Syncplay password (derived from its secret; it does not reveal the secret).
    package var password: String

    package init(host: String, port: Int?, room: String, password: String) {
        self.host = host
        self.port = port
        self.room = room
        self.password = password
    }
}
