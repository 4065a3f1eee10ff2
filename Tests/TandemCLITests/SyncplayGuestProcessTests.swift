import Foundation
import Tandem
import TandemBench
import TandemCore
import TandemSyncplay
import Testing

/// `tandem host --syncplay-port`: a real Syncplay client with mpv joins a Tandem session and they follow each other.
@Suite("Syncplay clients in a Tandem session", .serialized)
struct SyncplayGuestProcessTests {
    static let sample = TandemBinary.sample("countdown.webm")

    static func settled(_ process: TandemProcess) -> JSON? {
        process.events("timeline").last { $0["state"]?.string != "waiting" }
    }

    static func participant(_ process: TandemProcess, _ name: String) -> JSON? {
        process.events("participants").last?["participants"]?.array?.first { $0["name"]?.string == name }
    }

    @Test("a syncplay client with mpv joins a host under TLS over STARTTLS with the session id and secret; pause, play, seek and chat cross both ways; its readiness shows")
    func syncplayClientFollowsAndDrives() async throws {
        // The host's embedded server has a certificate: its Syncplay listener offers STARTTLS with it.
        let certificate = try #require(try SyncplayCertificate.make())
        defer { certificate.remove() }
        let port = Int.random(in: 40_000..<50_000)
        let host = try TandemProcess(["host", Self.sample, "--headless", "--json", "--bind", "127.0.0.1", "--port", "0",
                                      "--name", "ann", "--syncplay-port", "\(port)", "--tls-cert", certificate.certificate,
                                      "--tls-key", certificate.directory + "/privkey.pem"])
        defer { host.stop() }
        let invite = try Invite(parsing: try #require(await host.event("invite", within: 30)?["invite"]?.string, "\(host.stderr)"))
        let (session, secret) = (invite.session, invite.secret)
        // With --json the header's Syncplay line is an event: where Syncplay users join, and with what.
        let announced = await host.event("syncplay", within: 5)
        #expect(announced?["host"]?.string == invite.host && announced?["port"]?.number == Double(port)
                && announced?["room"]?.string == session
                && announced?["password"]?.string == SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes),
                "\(host.events.prefix(4))")

        // A wrong password is refused with Syncplay's error, shown by the client.
        let intruder = try SyncplayClientProcess(port: port, room: session, password: "guess", name: "eve", file: Self.sample,
                                                 trustDirectory: certificate.roots)
        defer { intruder.stop() }
        #expect(await intruder.waitFor(30) { $0.contains("wrong room or password") }, "\(intruder.text.suffix(800))")
        intruder.stop()

        let bob = try SyncplayClientProcess(port: port, room: session, password: secret, name: "bob", file: Self.sample,
                                            trustDirectory: certificate.roots)
        defer { bob.stop() }
        #expect(await bob.waitFor(30) { $0.contains("Successfully connected") }, "\(bob.text.suffix(800))")
        #expect(bob.text.contains("Secure connection established"), "\(bob.text.suffix(800))")
        // bob is a participant of the session, ready once his player has the file.
        #expect(await host.wait(for: 30) { Self.participant($0, "bob")?["readiness"]?["state"]?.string == "ready" },
                "\(host.events("participants").last.map { "\($0)" } ?? "none") — bob: \(bob.text.suffix(800))")

        await Self.hostCommandsReach(bob, from: host)
        #expect(await host.wait(for: 10) { Self.settled($0)?["state"]?.string == "paused" })

        // bob plays, seeks and pauses from his client: the session follows, each change his.
        let bobID = try #require(Self.participant(host, "bob")?["id"]?.string)
        #expect(Self.participant(host, "bob")?["via"]?.string == "syncplay")
        try await Self.clientToggles(bob, host: host, bobID: bobID, to: "playing")
        try await Task.sleep(for: .seconds(2))
        bob.send("s 0:30")
        // A seek waits for everyone's preroll, then settles under no one's name: the request is bob's.
        #expect(await host.wait(for: 20) { p in
            p.events("timeline").contains { $0["originator"]?.string == bobID && abs(($0["anchorItemTime"]?.number ?? 0) - 30) < 2 }
                && Self.settled(p)?["state"]?.string == "playing" && abs((Self.settled(p)?["anchorItemTime"]?.number ?? 0) - 30) < 2
        }, "\(host.events("timeline").suffix(3)) — bob: \(bob.text.suffix(600))")
        try await Self.clientToggles(bob, host: host, bobID: bobID, to: "paused")
        let pausedAt = Self.settled(host)?["anchorItemTime"]?.number ?? 0
        #expect(pausedAt > 29 && pausedAt < 39, "paused at \(pausedAt)")

        // Chat crosses: bob's line reaches the host under his name.
        bob.send("ch popcorn?")
        #expect(await host.event("chat", within: 15) { $0["text"]?.string?.contains("popcorn?") == true } != nil)
        // …and the host's reaches bob's client under ann's.
        host.send("chat hello bob")
        #expect(await bob.waitFor(15) { $0.contains("<ann> hello bob") }, "\(bob.text.suffix(600))")

        // bob's Syncplay readiness: off at the start (a suspension others see), on after his toggle.
        #expect(Self.participant(host, "bob")?["suspensions"]?.array?.contains { $0.string == "custom:not ready in Syncplay" } == true,
                "\(Self.participant(host, "bob").map { "\($0)" } ?? "")")
        bob.send("t")
        #expect(await host.wait(for: 15) { Self.participant($0, "bob")?["suspensions"]?.array?.isEmpty == true },
                "\(Self.participant(host, "bob").map { "\($0)" } ?? "")")

        // bob's client stops: he leaves the session.
        bob.stop()
        #expect(await host.wait(for: 30) { Self.participant($0, "bob") == nil }, "\(host.events("participants").last.map { "\($0)" } ?? "")")
        host.send("leave")
        #expect(await host.exitCode(within: 20) == 0, "\(host.stderr)")
    }

    /// The host plays, seeks to 0:20 and pauses: bob's Syncplay client hears each from ann.
    static func hostCommandsReach(_ bob: SyncplayClientProcess, from host: TandemProcess) async {
        for (command, heard) in [("play", ["ann unpaused"]), ("seek 20", ["ann jumped from", "to 00:20"]), ("pause", ["ann paused"])] {
            let mark = bob.text.count
            host.send(command)
            #expect(await bob.waitFor(20, after: mark) { text in heard.allSatisfy { text.contains($0) } },
                    "\(command): \(bob.text.suffix(800))")
        }
    }

    /// bob toggles play and pause from his client (`p`): the session settles `state` under his id.
    static func clientToggles(_ bob: SyncplayClientProcess, host: TandemProcess, bobID: String, to state: String) async throws {
        // A moment between commands, as a person takes: each change is confirmed to the client first.
        try await Task.sleep(for: .seconds(2))
        bob.send("p")
        #expect(await host.wait(for: 20) {
            settled($0)?["state"]?.string == state && settled($0)?["originator"]?.string == bobID
        }, "\(host.events("timeline").suffix(3)) — bob: \(bob.text.suffix(600))")
    }
}
