import Foundation
import Tandem
import TandemBench
import TandemSyncplay
import Testing

/// `tandem serve --syncplay-port`: a real Syncplay client with mpv joins a session on a standalone relay, which
/// never has the session's secret, with the Syncplay password derived from the handshake key.
@Suite("Syncplay clients on a relay", .serialized)
struct SyncplayRelayProcessTests {
    static let sample = TandemBinary.sample("countdown.webm")

    @Test("a syncplay client joins a TLS relay's session over STARTTLS with the derived password: a participant via syncplay; pause, play and seek cross both ways; chat is said not to; a wrong password or an untrusted certificate is refused; the host's own listener (no certificate) takes the same password in the clear")
    func syncplayClientOnRelay() async throws {
        // A relay under TLS: its own loopback connections for Syncplay clients go through TLS too, pinned.
        let certificate = try #require(try SyncplayCertificate.make())
        defer { certificate.remove() }
        let relay = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0", "--syncplay-port", "0",
                                       "--tls-cert", certificate.certificate, "--tls-key", certificate.directory + "/privkey.pem"])
        defer { relay.stop() }
        #expect(await relay.wait(for: 15) { $0.stdout.contains("Syncplay users join sessions here") }, "\(relay.stderr)")
        let lines = relay.stdout.split(separator: "\n")
        let address = try #require(lines.first { $0.contains("--server '") }.map { String($0.split(separator: "'")[1]) })
        let announced = try #require(lines.first { $0.contains("Syncplay users join sessions here") })
        let port = try #require(announced.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }
            .flatMap { Int($0.dropFirst("127.0.0.1:".count)) }, "\(announced)")

        // The host also runs its own Syncplay listener beside the relay's (the same room and password work there).
        let hostPort = Int.random(in: 40_000..<50_000)
        let host = try TandemProcess(["host", Self.sample, "--headless", "--json", "--server", address, "--name", "ann",
                                      "--bind", "127.0.0.1", "--syncplay-port", "\(hostPort)"])
        defer { host.stop() }
        let invite = try Invite(parsing: try #require(await host.event("invite", within: 30)?["invite"]?.string, "\(host.stderr)"))
        #expect(invite.tls && address.hasPrefix("tandems://"))
        let password = SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)

        // A client that does not trust the relay's certificate is told so, and goes no further.
        let wary = try SyncplayClientProcess(port: port, room: invite.session, password: password, name: "dave", file: Self.sample)
        #expect(await wary.waitFor(30) { $0.contains("invalid security certificate") }, "\(wary.text.suffix(800))")
        wary.stop()

        // The relay never sees the secret, so the secret is a wrong password there; so is a guess.
        for wrong in [invite.secret, "guess"] {
            let intruder = try SyncplayClientProcess(port: port, room: invite.session, password: wrong, name: "eve", file: Self.sample,
                                                     trustDirectory: certificate.roots)
            #expect(await intruder.waitFor(30) { $0.contains("wrong room or password") }, "\(intruder.text.suffix(800))")
            intruder.stop()
        }

        // bob trusts it (not through the system's store): STARTTLS, then the password over TLS.
        let bob = try SyncplayClientProcess(port: port, room: invite.session, password: password, name: "bob", file: Self.sample,
                                            trustDirectory: certificate.roots)
        defer { bob.stop() }
        #expect(await bob.waitFor(30) { $0.contains("Successfully connected") }, "\(bob.text.suffix(800))")
        #expect(bob.text.contains("Secure connection established"), "\(bob.text.suffix(800))")
        // Told once what does not cross.
        #expect(bob.text.contains("chat does not"), "\(bob.text.suffix(800))")
        #expect(await host.wait(for: 30) { SyncplayGuestProcessTests.participant($0, "bob")?["readiness"]?["state"]?.string == "ready" },
                "\(host.events("participants").last.map { "\($0)" } ?? "none") — bob: \(bob.text.suffix(800))")
        let bobID = try #require(SyncplayGuestProcessTests.participant(host, "bob")?["id"]?.string)
        #expect(SyncplayGuestProcessTests.participant(host, "bob")?["via"]?.string == "syncplay")

        await SyncplayGuestProcessTests.hostCommandsReach(bob, from: host)

        // bob plays and pauses from his client: the session follows, each change his.
        try await SyncplayGuestProcessTests.clientToggles(bob, host: host, bobID: bobID, to: "playing")
        try await SyncplayGuestProcessTests.clientToggles(bob, host: host, bobID: bobID, to: "paused")

        // Chat does not cross: bob's client says the server does not offer it, and nothing reaches the host.
        let mark = bob.text.count
        bob.send("ch popcorn?")
        #expect(await bob.waitFor(10, after: mark) { $0.contains("chat feature is not supported") }, "\(bob.text.suffix(600))")
        #expect(await host.event("chat", within: 2) == nil)

        // carl joins through the host's own listener with the same password: with chat, as on any host.
        let carl = try SyncplayClientProcess(port: hostPort, room: invite.session, password: password, name: "carl", file: Self.sample)
        defer { carl.stop() }
        #expect(await host.wait(for: 30) { SyncplayGuestProcessTests.participant($0, "carl")?["via"]?.string == "syncplay" },
                "carl: \(carl.text.suffix(800))")
        #expect(!carl.text.contains("chat does not"))
        // That host has no certificate (the relay has): carl is told so and goes on in the clear.
        #expect(carl.text.contains("This server does not support TLS"), "carl: \(carl.text.suffix(800))")
        carl.stop()

        bob.stop()
        #expect(await host.wait(for: 30) { SyncplayGuestProcessTests.participant($0, "bob") == nil })
        host.send("leave")
        #expect(await host.exitCode(within: 20) == 0, "\(host.stderr)")
    }
}
