import TandemCrypto
import Foundation
import TandemCore

extension ServerConnectionHandler {
    // MARK: - The connection's datagrams (UDP beside it)

    /// At `accepted`: a channel id and the connection's datagram key, when the server has a UDP socket.
    func issueDatagramTicket(session: HostedSession, serverNonce: Data, clientNonce: Data) {
        guard server.datagrams != nil else { return }
        datagramTicket = (id: DatagramRelay.newChannelID(),
                          key: DatagramKey.derive(sessionKey: session.key, serverNonce: serverNonce,
                                                  clientNonce: clientNonce))
    }

    /// Once joined: the relay takes this connection's datagrams as `participant`'s.
    func registerDatagrams(session: HostedSession, participant: ParticipantID, connection: ServerConnection) {
        guard let ticket = datagramTicket, let datagrams = server.datagrams else { return }
        datagrams.register(channel: ticket.id, key: ticket.key, session: session, participant: participant,
                           connection: connection)
        connection.datagramChannel.store(ticket.id, ordering: .relaxed)
    }

    /// Closing: the relay forgets the channel (safe to call more than once).
    func unregisterDatagrams() {
        if let ticket = datagramTicket { server.datagrams?.unregister(channel: ticket.id) }
    }
}
