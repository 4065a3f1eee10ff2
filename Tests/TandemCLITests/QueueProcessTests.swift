import Foundation
import Testing

/// A shared queue across real `tandem` processes on loopback: a host with two samples, a joiner that finds them in
/// its `--media-dir`.
@Suite("A shared queue across processes", .serialized)
struct QueueProcessTests {
    static let first = TandemBinary.sample("countdown.webm")
    static let second = TandemBinary.sample("short.webm")

    static func queueOf(_ process: TandemProcess) -> JSON? { process.events("queue").last }

    static func playing(_ process: TandemProcess, after generation: Int) -> JSON? {
        process.events("timeline").last { timeline in
            timeline["state"]?.string == "playing" && Int(timeline["generation"]?.number ?? 0) > generation
        }
    }

    /// ann hosting `files`, and bob joining from an empty directory elsewhere: he finds the items in
    /// `--media-dir` (the samples), not in his current directory. The caller stops both and removes `elsewhere`.
    static func hostAndJoiner(_ files: [String]) async throws -> (host: TandemProcess, bob: TandemProcess, elsewhere: URL) {
        let host = try TandemProcess(["host"] + files + ["--headless", "--json", "--bind", "127.0.0.1",
                                                         "--port", "0", "--name", "ann"])
        do {
            let invite = try await SessionProcessTests.invite(of: host)
            let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-queue-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            let bob = try TandemProcess(["join", "--media-dir", TandemBinary.samples.path, "--headless", "--json",
                                         "--name", "bob"], environment: ["TANDEM_INVITE": invite], currentDirectory: elsewhere)
            return (host, bob, elsewhere)
        } catch {
            host.stop()
            throw error
        }
    }

    @Test("host A B; a joiner finds both in --media-dir; `next` makes both load item 2 and start it together")
    func nextAcrossProcesses() async throws {
        let (host, bob, elsewhere) = try await Self.hostAndJoiner([Self.first, Self.second])
        defer { host.stop(); bob.stop(); try? FileManager.default.removeItem(at: elsewhere) }

        // Both see the queue of two, the first playing.
        for peer in [host, bob] {
            #expect(await peer.wait(for: 30) { process in
                guard let queue = Self.queueOf(process) else { return false }
                return queue["items"]?.array?.compactMap { $0["fileName"]?.string } == ["countdown.webm", "short.webm"]
                    && queue["currentIndex"]?.number == 0
            }, "no queue of two; stderr: \(peer.stderr)")
        }
        #expect(await host.wait(for: 30) { SessionProcessTests.seesReady($0, ["bob"]) }, "bob never ready: \(bob.stderr)")
        host.send("play")
        for peer in [host, bob] {
            #expect(await peer.wait(for: 15) { SessionProcessTests.lastTimeline($0)?["state"]?.string == "playing" })
        }
        let before = try #require(SessionProcessTests.generations(host).last)

        // Anyone may move the group along: bob asks for the next item.
        bob.send("next")
        for peer in [host, bob] {
            let item = await peer.event("item", within: 15) { $0["index"]?.number == 2 }
            #expect(item?["count"]?.number == 2, "no item event; stderr: \(peer.stderr)")
            #expect(item?["title"]?.string != nil)
        }
        // Both load short.webm (the host reports bob ready with its duration), and start from 0 on one timeline.
        #expect(await host.wait(for: 30) { process in
            process.events("participants").last?["participants"]?.array?.contains {
                $0["name"]?.string == "bob" && $0["readiness"]?["state"]?.string == "ready"
                    && abs(($0["readiness"]?["duration"]?.number ?? 0) - 25) < 1.5
            } ?? false
        }, "bob did not load item 2; stderr: \(bob.stderr)")
        var starts: [JSON] = []
        for peer in [host, bob] {
            #expect(await peer.wait(for: 30) { Self.playing($0, after: before) != nil }, "\(peer.stderr)")
            if let start = Self.playing(peer, after: before) { starts.append(start) }
        }
        try #require(starts.count == 2)
        #expect(starts[0]["generation"] == starts[1]["generation"])
        #expect(starts[0]["anchorSessionTime"] == starts[1]["anchorSessionTime"])
        #expect(starts[0]["anchorItemTime"]?.number == 0)
        // The group waited for the loads before that start (a waiting generation after the move).
        #expect(host.events("timeline").contains { timeline in
            Int(timeline["generation"]?.number ?? 0) > before && timeline["state"]?.string == "waiting"
        })

        // Playing item 2 in step (loose bound: this is not the benchmark).
        try await Task.sleep(for: .seconds(2.5))
        for peer in [host, bob] {
            let recent = peer.events("position").suffix(2)
            let errors = recent.compactMap { $0["positionErrorMs"]?.number }
            #expect(!errors.isEmpty && errors.allSatisfy { abs($0) < 30 }, "position errors \(errors)")
            #expect(recent.allSatisfy { ($0["position"]?.number ?? 99) < 20 }, "not on item 2: \(Array(recent))")
        }

        // Past the last item: a clear warning, and the session goes on.
        host.send("next")
        let warning = await host.event("warning", within: 10) { ($0["text"]?.string ?? "").contains("last item") }
        #expect(warning != nil, "stdout: \(host.stdout)")
        // `queue` lists it; `prev` goes back for everyone.
        let listed = host.events("queue").count
        host.send("queue")
        #expect(await host.wait(for: 10) { $0.events("queue").count > listed })
        host.send("prev")
        for peer in [host, bob] {
            #expect(await peer.event("item", within: 15) { $0["index"]?.number == 1 } != nil)
        }
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)
        #expect(await bob.exitCode(within: 10) == 8)
    }

    @Test("--playlist: one path a line, # comments and blank lines skipped; an empty playlist is a usage error")
    func playlist() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-playlist-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = directory.appendingPathComponent("list.txt")
        try "# tonight\n\n\(Self.first)\n  \(Self.second)  \n# the end\n".write(to: list, atomically: true, encoding: .utf8)
        let host = try TandemProcess(["host", "--playlist", list.path, "--headless", "--json", "--bind", "127.0.0.1",
                                      "--port", "0", "--name", "ann"])
        defer { host.stop() }
        #expect(await host.wait(for: 30) { process in
            Self.queueOf(process)?["items"]?.array?.compactMap { $0["fileName"]?.string } == ["countdown.webm", "short.webm"]
        }, "stderr: \(host.stderr)")
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)

        let empty = directory.appendingPathComponent("empty.txt")
        try "# nothing\n".write(to: empty, atomically: true, encoding: .utf8)
        let refused = try TandemProcess(["host", "--playlist", empty.path, "--headless", "--bind", "127.0.0.1", "--port", "0"])
        defer { refused.stop() }
        #expect(await refused.exitCode(within: 15) == 64)
        #expect(refused.stderr.contains("names no media"))
    }
}

extension QueueProcessTests {
    @Test("on a terminal: the status line says item k of n; n and p move the group along the queue")
    func keys() async throws {
        let host = try TerminalProcess(["host", Self.first, Self.second, "--headless", "--bind", "127.0.0.1", "--port", "0",
                                        "--name", "ann"])
        #expect(await host.waitForOutput(30) { $0.contains("item 1 of 2") && $0.contains("clock ±") }, "\(host.output)")
        #expect(host.output.contains("n/p next/previous item"))
        host.type("n")
        #expect(await host.waitForOutput(20) { $0.contains("ann went to item 2 of 2") && $0.contains("item 2 of 2 │") },
                "\(host.notices)")
        host.type("n")
        #expect(await host.waitForOutput(10) { $0.contains("already at the last item of the queue") }, "\(host.notices)")
        host.type("p")
        #expect(await host.waitForOutput(20) { $0.contains("ann went to item 1 of 2") }, "\(host.notices)")
        host.type("q")
        #expect(await host.waitForExit(10) == 0)
    }
}
