import Foundation
import Synchronization
import Tandem
import TandemPeer
import TandemSyncplay
import Testing

/// Syncplay's STARTTLS on Tandem's own Syncplay listeners, in process: offered with the certificate of the server
/// beside them, refused without one. Tandem's Syncplay client plays the Syncplay user.
@Suite("Syncplay clients over STARTTLS, in process", .serialized)
struct SyncplayGuestTLSTests {
    static func connect(_ name: String, port: Int, room: String, password: String, tls: SyncplayTLS?) async throws -> SyncplayConnection {
        try await SyncplayConnection.connect(
            host: "127.0.0.1", port: port, tls: tls,
            configuration: .init(username: name, room: room, passwordMD5: SyncplayClientState.Configuration.passwordHash(password))) {
            SyncplayLocalPlaystate(position: 0, paused: true)
        }
    }

    /// Waits up to 10 s for `stream` to yield something `matches`.
    static func heard<Element: Sendable>(_ stream: AsyncStream<Element>, _ matches: @escaping @Sendable (Element) -> Bool) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await element in stream where matches(element) { return true }
                return false
            }
            group.addTask { try? await Task.sleep(for: .seconds(10)); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    static func welcomed(_ connection: SyncplayConnection, as name: String) async -> Bool {
        await heard(connection.events) { if case .welcomed(name, _, _) = $0 { true } else { false } }
    }

    static func files(_ certificate: SyncplayCertificate) -> ServerTLSFiles {
        ServerTLSFiles(certificateChainPath: certificate.certificate, privateKeyPath: certificate.directory + "/privkey.pem")
    }

    @Test("a relay with a certificate: a client that asks for STARTTLS joins over TLS as a participant, a plain one still joins, an untrusting one is dropped")
    func relayOffersTLS() async throws {
        guard let certificate = try SyncplayCertificate.make() else { return }
        defer { certificate.remove() }
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, tls: Self.files(certificate))
        let invite = try server.createSession()
        let ann = try await TandemClient.connect(invite: invite, name: "ann")
        let messages = ann.serverMessages()
        let guests = try await SyncplayGuests.start(relay: server, host: "127.0.0.1", port: 0)
        let port = guests.listener.port
        let password = SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)

        // bob asks for TLS, checks the relay's certificate (the one its Tandem clients pin) and is admitted.
        let bob = try await Self.connect("bob", port: port, room: invite.session, password: password,
                                         tls: SyncplayTLS(trustRootsPath: certificate.authority))
        #expect(await Self.welcomed(bob, as: "bob"))
        #expect(await Self.heard(messages) { message in
            guard case .participants(let states) = message else { return false }
            return states.contains { $0.participant.name == "bob" && $0.participant.via == "syncplay" && $0.hasJoined }
        })
        // carl does not ask: the clear text is still served.
        let carl = try await Self.connect("carl", port: port, room: invite.session, password: password, tls: nil)
        #expect(await Self.welcomed(carl, as: "carl"))
        #expect(guests.listener.connectionCount == 2)

        // eve trusts only the system's roots: her handshake fails, and the relay drops her connection.
        await #expect {
            _ = try await Self.connect("eve", port: port, room: invite.session, password: password, tls: SyncplayTLS())
        } throws: { SyncplayServerTests.isTLSError($0, containing: "the handshake failed") }
        for _ in 0..<50 where guests.listener.connectionCount != 2 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(guests.listener.connectionCount == 2)

        await carl.close()
        await bob.close()
        await guests.close()
        await ann.close()
        await server.shutdown()
    }

    @Test("a host's listener offers STARTTLS with the embedded server's certificate; without one it answers false and a client that insists is refused")
    func hostListenerWithAndWithoutCertificate() async throws {
        guard let certificate = try SyncplayCertificate.make() else { return }
        defer { certificate.remove() }
        let secure = try await SessionServer.start(host: "127.0.0.1", port: 0, tls: Self.files(certificate))
        let invite = try secure.createSession()
        // As `HostSession` starts it beside its embedded server.
        var configuration = SyncplayListener.Configuration()
        configuration.tls = secure.tlsContextForVerifyingClients
        #expect(!secure.certificateIsSelfSigned && configuration.tls != nil)
        let guests = try await SyncplayGuests.start(host: "127.0.0.1", port: 0, invite: invite, dial: invite, configuration: configuration)
        let bob = try await Self.connect("bob", port: guests.listener.port, room: invite.session, password: invite.secret,
                                         tls: SyncplayTLS(trustRootsPath: certificate.authority))
        #expect(await Self.welcomed(bob, as: "bob"))
        await bob.close()
        await guests.close()
        await secure.shutdown()

        let plain = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let (plainGuests, _) = try await Self.relayRefusingTLS(plain, trustRoots: certificate.authority)
        await plainGuests.close()
        await plain.shutdown()
    }

    /// A relay's Syncplay listener on `server` with a session, where a client that insists on TLS (trusting
    /// `trustRoots`) is refused because none is offered; the listener and the session's Syncplay password.
    static func relayRefusingTLS(_ server: SessionServer, trustRoots: String) async throws -> (SyncplayGuests, (room: String, password: String)) {
        let invite = try server.createSession()
        let guests = try await SyncplayGuests.start(relay: server, host: "127.0.0.1", port: 0)
        let password = SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)
        await #expect {
            _ = try await Self.connect("eve", port: guests.listener.port, room: invite.session, password: password,
                                       tls: SyncplayTLS(trustRootsPath: trustRoots))
        } throws: { SyncplayServerTests.isTLSError($0, containing: "does not offer TLS") }
        return (guests, (invite.session, password))
    }

    @Test("a relay with a self-signed certificate (pinned by Tandem's invites) offers Syncplay clients no STARTTLS: they could not check it, and plain text lets them join")
    func selfSignedCertificateIsNotOffered() async throws {
        guard let certificate = try SyncplayCertificate.make() else { return }
        defer { certificate.remove() }
        let files = ServerTLSFiles(certificateChainPath: certificate.selfSigned, privateKeyPath: certificate.directory + "/privkey.pem")
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, tls: files)
        #expect(server.usesTLS && server.certificateIsSelfSigned && server.tlsContextForVerifyingClients == nil)
        let (guests, session) = try await Self.relayRefusingTLS(server, trustRoots: certificate.selfSigned)
        let carl = try await Self.connect("carl", port: guests.listener.port, room: session.room, password: session.password, tls: nil)
        #expect(await Self.welcomed(carl, as: "carl"))
        await carl.close()
        await guests.close()
        await server.shutdown()
    }
}
