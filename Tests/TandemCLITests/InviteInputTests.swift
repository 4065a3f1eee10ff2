import Foundation
import Testing
import TandemPeer
@testable import tandem
#if canImport(Glibc)
import Glibc
#endif

/// Invites handed over without a command line, which every user of the machine can read in /proc.
@Suite("Invites off the command line", .serialized)
struct InviteInputTests {
    static let sample = TandemBinary.sample("countdown.webm")

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-invite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A process's command line as /proc shows it to everyone.
    static func commandLine(of pid: Int32) -> String {
        let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
        return String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    @Test("the positional arguments, --invite-file and TANDEM_INVITE sort into an invite source and a file")
    func sortingTheArguments() throws {
        typealias J = JoinCommand
        #expect(try J.inviteSource(argument: "tandem://h/s#x", file: "m.webm", inviteFile: nil, environment: nil)
            == (.argument("tandem://h/s#x"), "m.webm"))
        #expect(try J.inviteSource(argument: "-", file: "m.webm", inviteFile: nil, environment: "tandem://h/s#y")
            == (.standardInput, "m.webm"))
        #expect(try J.inviteSource(argument: "m.webm", file: nil, inviteFile: "i.txt", environment: nil)
            == (.file("i.txt"), "m.webm"))
        #expect(try J.inviteSource(argument: nil, file: nil, inviteFile: "i.txt", environment: nil) == (.file("i.txt"), nil))
        #expect(try J.inviteSource(argument: "m.webm", file: nil, inviteFile: nil, environment: "tandem://h/s#y")
            == (.environment("tandem://h/s#y"), "m.webm"))
        // Two positional arguments: the first is the invite, whatever it looks like (a malformed one is reported).
        #expect(try J.inviteSource(argument: "movie-night", file: "m.webm", inviteFile: nil, environment: "tandem://h/s#y")
            == (.argument("movie-night"), "m.webm"))
        // A lone file and no invite anywhere (an empty TANDEM_INVITE counts as none).
        #expect(throws: PeerFailure.self) {
            try J.inviteSource(argument: "m.webm", file: nil, inviteFile: nil, environment: "")
        }
        #expect(throws: PeerFailure.self) {
            try J.inviteSource(argument: "tandem://h/s#x", file: "m.webm", inviteFile: "i.txt", environment: nil)
        }
        do {
            _ = try J.inviteSource(argument: nil, file: nil, inviteFile: nil, environment: nil)
            Issue.record("expected a usage error")
        } catch {
            #expect(error.exit == .usage)
            #expect(error.description.contains("--invite-file") && error.description.contains("TANDEM_INVITE"))
        }
    }

    @Test("host --invite-file writes a 0600 invite file; joiners use it, TANDEM_INVITE and - on stdin, with no secret in /proc")
    func invitesOffTheCommandLine() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("invite.txt").path
        // A file that is already there, readable by all: the invite must not stay readable by all.
        #expect(FileManager.default.createFile(atPath: path, contents: Data("old contents, longer than nothing".utf8),
                                               attributes: [.posixPermissions: 0o644]))
        let host = try SessionProcessTests.host(["--invite-file", path])
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let content = try String(contentsOfFile: path, encoding: .utf8)
        #expect(content == invite + "\n")
        let components = try #require(URLComponents(string: invite))
        #expect(components.scheme == "tandem" && components.port != nil)
        let secret = try #require(components.fragment)
        #expect(secret.count >= 16)

        let common = ["--headless", "--json"]
        let bob = try TandemProcess(["join", "--invite-file", path, Self.sample, "--name", "bob"] + common)
        defer { bob.stop() }
        let carol = try TandemProcess(["join", Self.sample, "--name", "carol"] + common,
                                      environment: ["TANDEM_INVITE": invite])
        defer { carol.stop() }
        let dave = try TandemProcess(["join", "-", Self.sample, "--name", "dave"] + common)
        defer { dave.stop() }
        dave.send(invite)

        #expect(await host.wait(for: 60) { SessionProcessTests.seesReady($0, ["bob", "carol", "dave"]) },
                "not everyone joined; bob: \(bob.stderr) carol: \(carol.stderr) dave: \(dave.stderr)")
        for joiner in [bob, carol, dave] {
            let commandLine = Self.commandLine(of: joiner.pid)
            #expect(commandLine.contains("join"), "no command line read for \(joiner.arguments)")
            #expect(!commandLine.contains(secret), "the secret is on the command line: \(commandLine)")
            // …and nothing warns about it.
            CommandLineSecretTests.expectSilent(joiner)
        }
        // Lines after the invite on stdin are commands.
        dave.send("leave")
        #expect(await dave.exitCode(within: 15) == 0, "\(dave.stderr)")
        #expect(await host.wait(for: 15) { process in
            guard let names = process.events("participants").last?["participants"]?.array?.compactMap({ $0["name"]?.string })
            else { return false }
            return !names.contains("dave") && names.contains("bob")
        })
        host.send("end")
    }

    @Test("join with no invite at all is a usage error; an unreadable invite file is a bad invite")
    func missingInvite() async throws {
        let none = try TandemProcess(["join", Self.sample, "--headless"], environment: ["TANDEM_INVITE": ""])
        #expect(await none.exitCode(within: 30) == 64)
        #expect(none.stderr.contains("--invite-file") && none.stderr.contains("TANDEM_INVITE"), "\(none.stderr)")
        let missing = try TandemProcess(["join", "--invite-file", "/nonexistent/invite.txt", Self.sample, "--headless"])
        #expect(await missing.exitCode(within: 30) == 6)
        #expect(missing.stderr.contains("/nonexistent/invite.txt"), "\(missing.stderr)")
        let empty = try TandemProcess(["join", "-", Self.sample, "--headless"])
        empty.write("")
        empty.closeInput()
        #expect(await empty.exitCode(within: 30) == 6)
        #expect(empty.stderr.contains("standard input"), "\(empty.stderr)")
    }
}
