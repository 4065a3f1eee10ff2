import Foundation
import Testing
import Tandem
import TandemBench
import TandemPeer
import TandemSyncplay

/// Secrets given on the command line still work, but every user of the machine can read them in /proc: each one
/// says so once on stderr (and as a `warning` event with --json), naming the ways that keep it off the command line;
/// those ways say nothing.
@Suite("Secrets on the command line warn", .serialized)
struct CommandLineSecretTests {
    static let sample = TandemBinary.sample("countdown.webm")

    /// The stderr lines that warn about a secret on the command line.
    static func commandLineWarnings(_ process: TandemProcess) -> [Substring] {
        process.stderr.split(separator: "\n").filter { $0.hasPrefix("tandem: warning: ") && $0.contains("on the command line") }
    }

    /// The `warning` events about a secret on the command line.
    static func warningEvents(_ process: TandemProcess) -> [String] {
        process.events("warning").compactMap { $0["text"]?.string }.filter { $0.contains("on the command line") }
    }

    static func expectWarned(_ process: TandemProcess, naming ways: [String], json: Bool = true, secret: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = commandLineWarnings(process)
        #expect(lines.count == 1, "\(process.stderr)", sourceLocation: sourceLocation)
        for way in ways {
            #expect(lines.first?.contains(way) == true, "\(way) is not named: \(lines)", sourceLocation: sourceLocation)
        }
        #expect(!process.stderr.contains(secret), "the warning repeats the secret: \(process.stderr)", sourceLocation: sourceLocation)
        if json {
            #expect(warningEvents(process).map { "tandem: warning: \($0)" } == lines.map(String.init),
                    "\(process.events("warning"))", sourceLocation: sourceLocation)
        } else {
            #expect(!process.stdout.contains("{\""), "\(process.stdout)", sourceLocation: sourceLocation)
        }
    }

    static func expectSilent(_ process: TandemProcess, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(commandLineWarnings(process).isEmpty, "\(process.stderr)", sourceLocation: sourceLocation)
        #expect(warningEvents(process).isEmpty, "\(process.events("warning"))", sourceLocation: sourceLocation)
    }

    @Test("join with the invite as an argument: one stderr line and one warning event naming --invite-file, - and TANDEM_INVITE; it still joins; without --json the line alone")
    func inviteArgument() async throws {
        let host = try SessionProcessTests.host()
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let secret = try #require(URLComponents(string: invite)?.fragment)
        let erin = try TandemProcess(["join", invite, Self.sample, "--headless", "--json", "--name", "erin"])
        defer { erin.stop() }
        let frank = try TandemProcess(["join", invite, Self.sample, "--headless", "--name", "frank"])
        defer { frank.stop() }
        #expect(await host.wait(for: 60) { SessionProcessTests.seesReady($0, ["erin", "frank"]) },
                "erin: \(erin.stderr) frank: \(frank.stderr)")
        Self.expectWarned(erin, naming: ["--invite-file FILE", "as - to read it from standard input", "TANDEM_INVITE", "/proc"],
                          secret: secret)
        Self.expectWarned(frank, naming: ["--invite-file FILE", "TANDEM_INVITE"], json: false, secret: secret)
        Self.expectSilent(host)
        for joiner in [erin, frank] {
            joiner.send("leave")
            #expect(await joiner.exitCode(within: 20) == 0, "\(joiner.stderr)")
        }
        host.send("end")
    }

    @Test("host --server with a full invite warns (stderr and event) and hosts that session; TANDEM_SERVER and --server-file are silent; a host on a relay has a syncplay event with no port; --server with --server-file is refused")
    func serverArgument() async throws {
        let relay = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0"])
        defer { relay.stop() }
        #expect(await relay.wait(for: 15) { $0.stdout.contains("--server '") })
        let line = try #require(relay.stdout.split(separator: "\n").first { $0.contains("--server '") })
        let address = String(line.split(separator: "'")[1])
        func fullInvite() -> (text: String, session: String, secret: String) {
            let fresh = Invite.random(host: "127.0.0.1", port: 1)
            return ("\(address)/\(fresh.session)#\(fresh.secret)", fresh.session, fresh.secret)
        }

        // On the command line: warned, and the session is the one named.
        let named = fullInvite()
        let ann = try SessionProcessTests.host(["--server", named.text])
        defer { ann.stop() }
        #expect(try await SessionProcessTests.invite(of: ann) == named.text)
        Self.expectWarned(ann, naming: ["--server-file FILE", "TANDEM_SERVER", "tandem://HOST:PORT"], secret: named.secret)
        let syncplay = await ann.event("syncplay", within: 5)
        #expect(syncplay?["room"]?.string == named.session && syncplay?["port"] == .null && syncplay?["host"]?.string == "127.0.0.1",
                "\(ann.events.prefix(4))")
        #expect(syncplay?["password"]?.string?.count == SyncplayPassword.length)
        ann.send("end")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")

        // In the environment: the same session, silently.
        let quiet = fullInvite()
        let bob = try SessionProcessTests.host([], name: "bob", environment: ["TANDEM_SERVER": quiet.text])
        defer { bob.stop() }
        #expect(try await SessionProcessTests.invite(of: bob) == quiet.text)
        Self.expectSilent(bob)
        bob.send("end")
        #expect(await bob.exitCode(within: 20) == 0, "\(bob.stderr)")

        // In a file, a bare address: a new session there, silently.
        let directory = try InviteInputTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("server.txt").path
        try (address + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let carol = try SessionProcessTests.host(["--server-file", file], name: "carol")
        defer { carol.stop() }
        #expect(try await SessionProcessTests.invite(of: carol).hasPrefix(address + "/"))
        Self.expectSilent(carol)
        carol.send("end")
        #expect(await carol.exitCode(within: 20) == 0, "\(carol.stderr)")

        let (code, stderr) = try await ErrorExitTests.run(["host", Self.sample, "--server", address, "--server-file", file])
        #expect(code == 64)
        #expect(stderr.contains("--server-file"), "\(stderr)")
    }

    @Test("join syncplay:// --room-password warns (stderr and event) and joins a server with that password; --room-password-file and TANDEM_ROOM_PASSWORD join silently; a wrong one is refused")
    func roomPassword() async throws {
        let password = "popcorn-7"
        let server = try await SyncplayServerProcess(password: password)
        defer { server.stop() }
        let room = "syncplay://127.0.0.1:\(server.port)/films"
        func join(_ name: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> TandemProcess {
            try TandemProcess(["join", room, Self.sample, "--headless", "--json", "--name", name, "--syncplay-only"] + extra,
                              environment: environment)
        }
        let directory = try InviteInputTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("password.txt").path
        try (password + "\n").write(toFile: file, atomically: true, encoding: .utf8)

        let ann = try join("ann", ["--room-password", password])
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")
        // Joined the room itself: the password was taken (a wrong one is refused, below).
        #expect(await ann.event("warning", within: 10) { $0["text"]?.string?.contains("on the command line") == true } != nil)
        Self.expectWarned(ann, naming: ["--room-password-file FILE", "TANDEM_ROOM_PASSWORD"], secret: password)

        for (name, extra, environment) in [("bob", ["--room-password-file", file], [String: String]()),
                                           ("carol", [], ["TANDEM_ROOM_PASSWORD": password])] {
            let peer = try join(name, extra, environment: environment)
            defer { peer.stop() }
            #expect(await ann.event("notice", within: 20) { $0["text"]?.string == "\(name) joined the Syncplay room" } != nil,
                    "\(name): \(peer.stderr)")
            Self.expectSilent(peer)
            peer.send("leave")
            #expect(await peer.exitCode(within: 20) == 0, "\(peer.stderr)")
        }

        let eve = try join("eve", environment: ["TANDEM_ROOM_PASSWORD": "guess"])
        defer { eve.stop() }
        // The server's answer to the hello is waited for: its refusal is eve's error, and she never joined.
        #expect(await eve.exitCode(within: 30) == TandemExit.wrongSecret.rawValue, "\(eve.stderr)")
        #expect(eve.stderr.lowercased().contains("password"), "\(eve.stderr)")
        #expect(eve.events("joined").isEmpty, "\(eve.stdout)")
        Self.expectSilent(eve)
        #expect(!ann.events("notice").contains { $0["text"]?.string == "eve joined the Syncplay room" })

        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
    }
}
