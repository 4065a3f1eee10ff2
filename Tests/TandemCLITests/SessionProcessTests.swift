import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real `tandem` processes on loopback, headless, driven through stdin and read through `--json`.
@Suite("Watch-together sessions across processes", .serialized)
struct SessionProcessTests {
    static let sample = TandemBinary.sample("countdown.webm")

    static func host(_ extra: [String] = [], name: String = "ann", environment: [String: String] = [:]) throws -> TandemProcess {
        try TandemProcess(["host", sample, "--headless", "--json", "--bind", "127.0.0.1", "--port", "0", "--name", name] + extra,
                          environment: environment)
    }

    static func join(_ invite: String, name: String, file: String = sample) throws -> TandemProcess {
        try TandemProcess(["join", file, "--headless", "--json", "--name", name], environment: ["TANDEM_INVITE": invite])
    }

    static func invite(of host: TandemProcess) async throws -> String {
        let event = await host.event("invite", within: 30)
        return try #require(event?["invite"]?.string, "no invite; stderr: \(host.stderr)")
    }

    /// Whether `process` has seen everyone in `names` ready.
    static func seesReady(_ process: TandemProcess, _ names: Set<String>) -> Bool {
        guard let last = process.events("participants").last?["participants"]?.array else { return false }
        let ready = Set(last.filter { $0["readiness"]?["state"]?.string == "ready" }.compactMap { $0["name"]?.string })
        return names.isSubset(of: ready)
    }

    static func lastTimeline(_ process: TandemProcess) -> JSON? { process.events("timeline").last }

    static func generations(_ process: TandemProcess) -> [Int] {
        process.events("timeline").compactMap { $0["generation"]?.number.map { Int($0) } }
    }

    @Test("a host and two joiners: same timeline generations and notices, a late joiner catches up, a killed joiner is seen leaving")
    func hostAndTwoJoiners() async throws {
        let host = try Self.host()
        defer { host.stop() }
        let invite = try await Self.invite(of: host)
        let bob = try Self.join(invite, name: "bob")
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { Self.seesReady($0, ["bob"]) }, "bob never ready; host stderr: \(host.stderr)")
        #expect(await bob.wait(for: 30) { Self.seesReady($0, ["ann"]) })

        // Play, pause from the other side, seek, play: both end on the same generations.
        host.send("play")
        for peer in [host, bob] {
            #expect(await peer.wait(for: 15) { Self.lastTimeline($0)?["state"]?.string == "playing" }, "\(peer.stderr)")
        }
        try await Task.sleep(for: .seconds(2))
        bob.send("pause")
        #expect(await host.wait(for: 10) {
            Self.lastTimeline($0)?["state"]?.string == "paused" && Self.lastTimeline($0)?["originator"] != .null
        })
        host.send("seek 12")
        try await Task.sleep(for: .seconds(1))
        host.send("play")
        for peer in [host, bob] {
            #expect(await peer.wait(for: 15) {
                Self.lastTimeline($0)?["state"]?.string == "playing" && Self.lastTimeline($0)?["anchorItemTime"]?.number == 12
            })
        }
        // While playing, both render where the timeline says (loose bound: this is not the benchmark).
        try await Task.sleep(for: .seconds(2.5))
        for peer in [host, bob] {
            let errors = peer.events("position").suffix(2).compactMap { $0["positionErrorMs"]?.number }
            #expect(!errors.isEmpty && errors.allSatisfy { abs($0) < 30 }, "position errors \(errors)")
            // On loopback the datagram path works: unreliable messages go over UDP.
            #expect(peer.events("position").last?["unreliablePath"]?.string == "udp")
            // The threads that release its frames run real-time (tests run as root here).
            if geteuid() == 0 { #expect(peer.events("position").last?["sinkThreads"]?.string == "realtime") }
            // Each measures how far its picture is from the line (its render probe), and the other sees it.
            let own = peer.events("position").suffix(2).compactMap { $0["renderOffsetMs"]?.number }
            #expect(!own.isEmpty && own.allSatisfy { abs($0) < 30 }, "own render offsets \(own)")
        }
        let seen = bob.events("participants").last?["participants"]?.array?.first { $0["name"]?.string == "ann" }
        #expect(seen?["renderOffsetMs"]?.number.map { abs($0) < 30 } == true, "bob sees ann as \(String(describing: seen))")

        // A late joiner catches up without pausing anyone.
        let carol = try Self.join(invite, name: "carol")
        defer { carol.stop() }
        #expect(await carol.wait(for: 20) { process in
            process.events("position").contains { $0["state"]?.string == "playing" && abs($0["positionErrorMs"]?.number ?? 1e9) < 30 }
        }, "carol never in step; stderr: \(carol.stderr)")
        #expect(Self.lastTimeline(host)?["state"]?.string == "playing")

        // Everyone ends on the same generation; bob saw the generations the host saw from when he joined.
        let hostGenerations = Self.generations(host), bobGenerations = Self.generations(bob)
        #expect(hostGenerations.last == bobGenerations.last)
        #expect(Self.generations(carol).last == hostGenerations.last)
        #expect(Array(hostGenerations.drop { $0 < bobGenerations.first! }) == bobGenerations)
        // …and the same notices from then on.
        let hostNotices = host.events("notice").compactMap { $0["text"]?.string }
        let bobNotices = bob.events("notice").compactMap { $0["text"]?.string }
        let since = try #require(hostNotices.firstIndex(of: "bob joined"))
        #expect(Array(hostNotices[since...].prefix(bobNotices.count)) == bobNotices)

        // A killed joiner is seen leaving within 3 s (plus a little for process scheduling).
        let killedAt = Date().timeIntervalSince1970
        bob.signal(SIGKILL)
        let left = await host.event("notice", within: 30) { $0["kind"]?.string == "left" && ($0["text"]?.string ?? "").contains("bob") }
        // The host stamps each event with its wall clock: measure there, not by when this test got to look.
        let seenAfter = try #require(left?["time"]?.number) - killedAt
        #expect(seenAfter < 4, "the host saw bob leave \(seenAfter) s after he was killed")

        // The host ends the session: carol is told why and exits with "session ended".
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)
        #expect(await carol.exitCode(within: 10) == 8)
        #expect(carol.events("ended").first?["code"]?.string == "ended")
    }

    @Test("serve + host --server + join; a full session refuses with 7; SIGTERM ends every session with the reason")
    func standaloneServer() async throws {
        let server = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0", "--max-participants", "2"])
        defer { server.stop() }
        #expect(await server.wait(for: 15) { $0.stdout.contains("--server '") })
        let line = try #require(server.stdout.split(separator: "\n").first { $0.contains("--server '") })
        let address = String(line.split(separator: "'")[1])

        let host = try Self.host(["--server", address])
        defer { host.stop() }
        let invite = try await Self.invite(of: host)
        #expect(invite.hasPrefix(address))
        let bob = try Self.join(invite, name: "bob")
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { Self.seesReady($0, ["bob"]) })
        host.send("play")
        #expect(await bob.wait(for: 15) { Self.lastTimeline($0)?["state"]?.string == "playing" })

        let carol = try Self.join(invite, name: "carol")
        #expect(await carol.exitCode(within: 20) == 7)
        #expect(carol.stderr.contains("full"))

        #expect(await server.wait(for: 5) { $0.stderr.contains("joined") && $0.stderr.contains("bob") })
        server.signal(SIGTERM)
        #expect(await server.exitCode(within: 10) == 0)
        for peer in [host, bob] {
            #expect(await peer.exitCode(within: 10) == 8)
            #expect(peer.events("ended").first?["reason"]?.string?.contains("shutting down") == true, "\(peer.stdout.suffix(400))")
        }
    }

    @Test("a joiner with a different file is warned; without a file it is told where to get one")
    func differentAndMissingFiles() async throws {
        let host = try Self.host(["--title", "Countdown", "--fallback-url", "https://example.com/countdown.webm"])
        defer { host.stop() }
        let invite = try await Self.invite(of: host)

        let other = try Self.join(invite, name: "bob", file: TandemBinary.sample("short.webm"))
        defer { other.stop() }
        let warning = await other.event("warning", within: 20)
        #expect(warning?["text"]?.string?.contains("25.0 s") == true, "\(other.stdout)")
        other.send("leave")
        #expect(await other.exitCode(within: 10) == 0)

        // No file given, and none with the host's name in the current directory.
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let process = try TandemProcess(["join", "--headless"], environment: ["TANDEM_INVITE": invite], currentDirectory: empty)
        let code = await process.exitCode(within: 20)
        let text = process.stderr
        #expect(code == 3)
        #expect(text.contains("https://example.com/countdown.webm"), "\(text)")
        #expect(text.contains("Countdown"))
    }

    @Test("signals leave gracefully: SIGINT makes a joiner leave (exit 0, `left`, the host sees it go); SIGTERM to the host ends the session for the others (exit 8, hostLeft)")
    func signalsLeaveGracefully() async throws {
        let host = try Self.host()
        defer { host.stop() }
        let invite = try await Self.invite(of: host)
        let bob = try Self.join(invite, name: "bob")
        defer { bob.stop() }
        let carol = try Self.join(invite, name: "carol")
        defer { carol.stop() }
        #expect(await host.wait(for: 30) { Self.seesReady($0, ["bob", "carol"]) }, "host stderr: \(host.stderr)")

        bob.signal(SIGINT)
        #expect(await bob.exitCode(within: 15) == 0, "bob stderr: \(bob.stderr)")
        #expect(bob.events("left").count == 1)
        #expect(bob.events("ended").isEmpty)
        #expect(await host.event("notice", within: 10) {
            $0["kind"]?.string == "left" && ($0["text"]?.string ?? "").contains("bob")
        } != nil, "the host never saw bob leave: \(host.stderr)")

        host.signal(SIGTERM)
        #expect(await host.exitCode(within: 15) == 0, "host stderr: \(host.stderr)")
        #expect(host.events("left").count == 1)
        #expect(await carol.exitCode(within: 15) == 8, "carol stderr: \(carol.stderr)")
        #expect(carol.events("ended").last?["code"]?.string == "hostLeft")
    }

    @Test("chat between two processes: a line on stdin reaches the other as a chat event, cleaned and bounded")
    func chatBetweenProcesses() async throws {
        let host = try Self.host()
        defer { host.stop() }
        let invite = try await Self.invite(of: host)
        let bob = try Self.join(invite, name: "bob")
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { Self.seesReady($0, ["bob"]) }, "host stderr: \(host.stderr)")
        bob.send("chat popcorn \u{1B}[31mready")
        let received = await host.event("chat", within: 15)
        #expect(received?["name"]?.string == "bob", "host stdout: \(host.stdout.suffix(800))")
        #expect(received?["text"]?.string == "popcorn [31mready")
        #expect(received?["participant"]?.string == bob.events("joined").first?["participant"]?["id"]?.string)
        // The sender sees its own line too.
        #expect(await bob.event("chat", within: 5)?["name"]?.string == "bob")
        host.send("chat " + String(repeating: "x", count: 2_000))
        let long = await bob.event("chat", within: 15) { $0["name"]?.string == "ann" }
        #expect(long?["text"]?.string?.count == 500)
    }
}
