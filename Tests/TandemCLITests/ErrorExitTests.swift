import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Each way a command can fail: one clear line on stderr, no stack trace, the documented exit code.
@Suite("Errors and exit codes", .serialized)
struct ErrorExitTests {
    static let sample = TandemBinary.sample("countdown.webm")

    /// Runs `tandem` to completion and returns (exit code, stderr).
    static func run(_ arguments: [String], environment: [String: String] = [:],
                    timeout: Double = 30) async throws -> (Int32?, String) {
        let process = try TandemProcess(arguments, environment: environment)
        let code = await process.exitCode(within: timeout)
        return (code, process.stderr)
    }

    static func expectOneClearLine(_ stderr: String, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = stderr.split(separator: "\n").filter { !$0.contains(" warning ") && !$0.contains(" info ") }
        #expect(lines.count == 1, "expected one line, got: \(stderr)", sourceLocation: sourceLocation)
        #expect(lines.first?.hasPrefix("tandem: ") == true, "\(stderr)", sourceLocation: sourceLocation)
        for word in words {
            #expect(stderr.lowercased().contains(word.lowercased()), "'\(word)' missing in: \(stderr)", sourceLocation: sourceLocation)
        }
        #expect(!stderr.contains("Fatal error") && !stderr.contains("Stack dump"), sourceLocation: sourceLocation)
    }

    @Test("a missing file: 3") func missingFile() async throws {
        let (code, stderr) = try await Self.run(["host", "/nonexistent/movie.webm", "--headless", "--bind", "127.0.0.1", "--port", "0"])
        #expect(code == 3)
        Self.expectOneClearLine(stderr, mentioning: ["no such file", "/nonexistent/movie.webm"])
    }

    @Test("a file that is not media: 3") func notMedia() async throws {
        let (code, stderr) = try await Self.run(["host", TandemBinary.sample("not-media.webm"), "--headless", "--port", "0"])
        #expect(code == 3)
        Self.expectOneClearLine(stderr, mentioning: ["not-media.webm"])
    }

    @Test("a malformed invite: 6") func malformedInvite() async throws {
        let (code, stderr) = try await Self.run(["join", "movie-night", Self.sample, "--headless"])
        #expect(code == 6)
        Self.expectOneClearLine(stderr, mentioning: ["invite", "tandem://"])
        let (code2, stderr2) = try await Self.run(["join", "tandem://127.0.0.1:7420/movie", Self.sample, "--headless"])
        #expect(code2 == 6)
        Self.expectOneClearLine(stderr2, mentioning: ["secret"])
    }

    @Test("an unreachable server: 4") func unreachable() async throws {
        let (code, stderr) = try await Self.run(["join", Self.sample, "--headless"],
                                                environment: ["TANDEM_INVITE": "tandem://127.0.0.1:1/movie#secret"])
        #expect(code == 4)
        Self.expectOneClearLine(stderr, mentioning: ["cannot reach", "127.0.0.1:1"])
    }

    @Test("a wrong secret: 5; a session that has ended: 8; a port in use: 9")
    func wrongSecretEndedAndPortInUse() async throws {
        let host = try SessionProcessTests.host()
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let hash = try #require(invite.firstIndex(of: "#"))
        let (code, stderr) = try await Self.run(["join", Self.sample, "--headless"],
                                                environment: ["TANDEM_INVITE": String(invite[..<hash]) + "#not-the-secret"])
        #expect(code == 5)
        Self.expectOneClearLine(stderr, mentioning: ["secret", "fresh invite"])

        let port = try #require(URLComponents(string: invite)?.port)
        let (code9, stderr9) = try await Self.run(["host", Self.sample, "--headless", "--bind", "127.0.0.1", "--port", "\(port)"])
        #expect(code9 == 9)
        Self.expectOneClearLine(stderr9, mentioning: ["port \(port)", "in use", "--port"])

        host.send("leave")
        #expect(await host.exitCode(within: 10) == 0)
        // The host's server is gone with it: the invite now reaches nobody.
        let (code4, _) = try await Self.run(["join", Self.sample, "--headless"], environment: ["TANDEM_INVITE": invite])
        #expect(code4 == 4)
    }

    /// A session that no longer exists gets the same answer as a wrong secret (session names cannot be
    /// probed), so the exit code is 5 and the message points at the invite.
    @Test("a session that has ended on a standalone server: 5, like a wrong secret") func sessionEnded() async throws {
        let server = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0"])
        defer { server.stop() }
        #expect(await server.wait(for: 15) { $0.stdout.contains("--server '") })
        let line = try #require(server.stdout.split(separator: "\n").first { $0.contains("--server '") })
        let address = String(line.split(separator: "'")[1])
        let host = try SessionProcessTests.host(["--server", address])
        let invite = try await SessionProcessTests.invite(of: host)
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)
        let (code, stderr) = try await Self.run(["join", Self.sample, "--headless"], environment: ["TANDEM_INVITE": invite])
        #expect(code == 5)
        Self.expectOneClearLine(stderr, mentioning: ["invite"])
    }

    @Test("bad usage: 64, with what to do") func badUsage() async throws {
        let (code, stderr) = try await Self.run(["host"])
        #expect(code == 64)
        #expect(stderr.contains("Missing expected argument '<file>'"))
        let (code2, stderr2) = try await Self.run(["host", Self.sample, "--tls-cert", "/nonexistent.pem"])
        #expect(code2 == 64)
        #expect(stderr2.contains("--tls-cert and --tls-key go together") || stderr2.contains("cannot read"))
        let (code3, stderr3) = try await Self.run(["bench", "sync", "--peers", "99"])
        #expect(code3 == 64)
        #expect(stderr3.contains("--peers must be 2 to 32"))
    }
}

@Suite("Help text")
struct HelpTextTests {
    static func help(_ arguments: [String]) async throws -> String {
        let process = try TandemProcess(arguments + ["--help"])
        _ = await process.exitCode(within: 20)
        return process.stdout
    }

    @Test func topLevelListsEverySubcommandAndTheExitCodes() async throws {
        let text = try await Self.help([])
        for command in ["host", "join", "serve", "demo", "probe", "bench"] { #expect(text.contains("  \(command)"), "\(command)") }
        #expect(text.contains("8 session ended"))
        #expect(text.contains("tandem join INVITE"))
    }

    @Test func hostAndJoinExplainTheirOptions() async throws {
        let host = try await Self.help(["host"])
        for option in ["--title", "--subtitle", "--type", "--fallback-url", "--port", "--bind", "--tls-cert", "--tls-key",
                       "--web", "--server", "--headless", "--video-sink", "--audio-sink", "--json", "--name", "--verbose"] {
            #expect(host.contains(option), "host --help lacks \(option)")
        }
        let join = try await Self.help(["join"])
        #expect(join.contains("<invite>") && join.contains("fallback"))
        let serve = try await Self.help(["serve"])
        #expect(serve.contains("--max-sessions") && serve.contains("--max-participants") && serve.contains("SIGTERM")
                && serve.contains("--web"))
        let bench = try await Self.help(["bench", "sync"])
        for word in ["--peers", "--link", "--policy", "--duration", "--json", "--plot", "syncplay-rules", "jellyfin-rules",
                     "--rate-fallback"] {
            #expect(bench.contains(word), "bench sync --help lacks \(word)")
        }
    }

    @Test func benchRelayExplainsTheFloorAndLinkReports() async throws {
        let relay = try await Self.help(["bench", "relay"])
        for word in ["--floor", "bare relay", "--no-link-reports", "link report", "--instructions", "--ramp", "flagged"] {
            #expect(relay.contains(word), "bench relay --help lacks \(word)")
        }
        // The processes the bench starts are not commands for people.
        let bench = try await Self.help(["bench"])
        #expect(!bench.contains("relay-load") && !bench.contains("relay-floor-serve"), "\(bench)")
    }

    @Test func benchRelayRefusesFloorWithInProcessOrInstructions() async throws {
        for extra in [["--in-process"], ["--instructions"]] {
            let process = try TandemProcess(["bench", "relay", "--floor"] + extra)
            #expect(await process.exitCode(within: 20) == 64)
            #expect(process.stderr.contains("--floor"), "\(process.stderr)")
        }
    }
}
