import Foundation
import Testing
@testable import tandem
#if canImport(Glibc)
import Glibc
#endif

/// Real processes stopped with SIGSTOP (a closed laptop lid, a Wi-Fi drop) and resumed: the link is lost, and
/// they reconnect as themselves.
@Suite("Reconnecting across processes", .serialized)
struct ReconnectProcessTests {
    typealias P = SessionProcessTests

    static func participantID(_ process: TandemProcess) -> String? {
        process.events("joined").first?["participant"]?["id"]?.string
    }

    /// Waits until `process` shows a timeline of `generation` satisfying `predicate`.
    static func follows(_ process: TandemProcess, generation: Int?, within timeout: Double,
                        _ predicate: @escaping (JSON) -> Bool) async -> Bool {
        await process.wait(for: timeout) { process in
            guard let last = P.lastTimeline(process), let generation else { return false }
            return last["generation"]?.number == Double(generation) && predicate(last)
        }
    }

    @Test("a joiner stopped for 6 s reconnects as itself, stays, and follows the host's later pause and seek")
    func stoppedJoinerReconnects() async throws {
        let host = try P.host()
        defer { host.stop() }
        let invite = try await P.invite(of: host)
        let bob = try P.join(invite, name: "bob")
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { P.seesReady($0, ["bob"]) }, "bob never ready; host stderr: \(host.stderr)")
        let bobID = try #require(Self.participantID(bob))
        host.send("play")
        #expect(await bob.wait(for: 15) { P.lastTimeline($0)?["state"]?.string == "playing" })

        bob.signal(SIGSTOP)
        try await Task.sleep(for: .seconds(6))
        bob.signal(SIGCONT)
        let reconnected = await bob.event("reconnected", within: 10)
        #expect(reconnected != nil, "no reconnected event; bob stdout: \(bob.stdout.suffix(1500)) stderr: \(bob.stderr)")
        #expect(reconnected?["participant"]?.string == bobID)
        #expect((reconnected?["afterMs"]?.number ?? 0) >= 5_000)
        #expect(bob.events("reconnecting").count == 1)
        #expect(await host.event("notice", within: 5) { $0["text"]?.string == "bob reconnected" } != nil)
        #expect(bob.exitCode == nil)

        // The host's later commands reach bob, with the host's generations.
        host.send("pause")
        #expect(await host.wait(for: 10) { P.lastTimeline($0)?["state"]?.string == "paused" })
        let paused = P.generations(host).last
        #expect(await Self.follows(bob, generation: paused, within: 10) { $0["state"]?.string == "paused" },
                "bob did not follow the pause: \(String(describing: P.lastTimeline(bob)))")
        host.send("seek 5")
        #expect(await host.wait(for: 10) { P.lastTimeline($0)?["anchorItemTime"]?.number == 5 })
        let seeked = P.generations(host).last
        #expect(await Self.follows(bob, generation: seeked, within: 10) { $0["anchorItemTime"]?.number == 5 })
        #expect(bob.exitCode == nil)
        #expect(bob.events("ended").isEmpty)

        bob.send("leave")
        #expect(await bob.exitCode(within: 10) == 0)
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)
    }

    @Test("a stopped host: the joiner and the host's own link reconnect when it resumes")
    func stoppedHostReconnects() async throws {
        let host = try P.host()
        defer { host.stop() }
        let invite = try await P.invite(of: host)
        let bob = try P.join(invite, name: "bob")
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { P.seesReady($0, ["bob"]) }, "bob never ready; host stderr: \(host.stderr)")
        let bobID = try #require(Self.participantID(bob))
        let annID = try #require(Self.participantID(host))

        host.signal(SIGSTOP)
        try await Task.sleep(for: .seconds(5))
        host.signal(SIGCONT)
        let reconnected = await bob.event("reconnected", within: 15)
        #expect(reconnected?["participant"]?.string == bobID,
                "bob did not reconnect; stdout: \(bob.stdout.suffix(1500)) stderr: \(bob.stderr)")
        try await Task.sleep(for: .seconds(3))
        #expect(host.exitCode == nil && bob.exitCode == nil, "host stderr: \(host.stderr) bob stderr: \(bob.stderr)")
        if host.events("reconnecting").isEmpty {
            #expect(host.events("reconnected").isEmpty)
        } else {
            #expect(host.events("reconnected").first?["participant"]?.string == annID)
        }

        // Still one session: a play from bob reaches the host.
        bob.send("play")
        #expect(await host.wait(for: 15) { P.lastTimeline($0)?["state"]?.string == "playing" },
                "host stdout: \(host.stdout.suffix(1500))")
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)
        #expect(await bob.exitCode(within: 10) == 8)
    }

    @Test("when the grace runs out (the host is gone), a joiner exits 4 and says why")
    func graceRunsOut() async throws {
        let host = try P.host()
        defer { host.stop() }
        let invite = try await P.invite(of: host)
        let bob = try TandemProcess(["join", P.sample, "--headless", "--json", "--name", "bob",
                                     "--reconnect-grace", "2"], environment: ["TANDEM_INVITE": invite])
        defer { bob.stop() }
        #expect(await bob.wait(for: 30) { P.seesReady($0, ["ann"]) }, "bob stderr: \(bob.stderr)")
        host.signal(SIGKILL)
        let killedAt = Date()
        let code = await bob.exitCode(within: 15)
        let elapsed = Date().timeIntervalSince(killedAt)
        #expect(code == 4, "bob stderr: \(bob.stderr)")
        #expect(elapsed > 1.5 && elapsed < 10, "exited \(elapsed) s after the host was killed")
        #expect(bob.events("reconnecting").count == 1)
        #expect(bob.events("reconnected").isEmpty)
        #expect(bob.events("ended").first?["code"]?.string == "connectionLost")
        #expect(bob.stderr.contains("could not reconnect within 2 s"), "\(bob.stderr)")
    }

    @Test("--reconnect-grace is documented and validated")
    func reconnectGraceOption() throws {
        for help in [JoinCommand.helpMessage(), HostCommand.helpMessage()] {
            #expect(help.contains("--reconnect-grace"))
        }
        let join = try JoinCommand.parse(["tandem://127.0.0.1:7420/s#x", "--reconnect-grace", "5"])
        #expect(join.peer.reconnectGrace == 5)
        #expect(join.peer.choices.clientOptions.reconnectGracePeriod == 5_000_000_000)
        #expect(try JoinCommand.parse(["tandem://127.0.0.1:7420/s#x"]).peer.reconnectGrace == 30)
        #expect(throws: (any Error).self) { _ = try JoinCommand.parse(["tandem://h/s#x", "--reconnect-grace", "-1"]) }
    }
}
