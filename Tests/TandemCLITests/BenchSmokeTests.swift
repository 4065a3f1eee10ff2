import Foundation
import Testing

/// Short runs of the benchmarks with loose bounds, so they cannot rot. The figures themselves come from the
/// published runs (docs/BENCHMARKS.md), never from tests on a busy machine.
@Suite("Benchmark smoke runs", .serialized)
struct BenchSmokeTests {
    @Test("bench sync: a few seconds with three peers on a simulated LAN writes a report, JSON and a plot")
    func sync() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("sync.json").path
        let plot = directory.appendingPathComponent("sync.svg").path
        let bench = try TandemProcess(["bench", "sync", "--peers", "3", "--link", "lan", "--duration", "7",
                                       "--policy", "tandem", "syncplay-rules", "--json", json, "--plot", plot])
        #expect(await bench.exitCode(within: 120) == 0, "\(bench.stderr)")
        #expect(bench.stdout.contains("render skew"))
        #expect(bench.stdout.contains("side by side"))
        let reports = try #require(try JSONDecoder().decode(JSON.self, from: Data(contentsOf: URL(fileURLWithPath: json))).array)
        #expect(reports.count == 2)
        let tandem = try #require(reports.first)
        // Loose: peers render within 20 ms of each other at p99 (the benchmark's own figures are far tighter).
        let p99 = try #require(tandem["skew"]?["p99"]?.number)
        #expect(p99 < 20, "skew p99 \(p99) ms")
        #expect((tandem["skew"]?["count"]?.number ?? 0) > 50)
        #expect(tandem["clockError"]?["p99"]?.number.map { $0 < 5 } == true)
        #expect(tandem["commands"]?.array?.isEmpty == false)
        let svg = try String(contentsOfFile: plot.replacingOccurrences(of: ".svg", with: "-tandem.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("polyline"))
    }

    @Test("bench relay: a small load relays every message")
    func relay() async throws {
        let bench = try TandemProcess(["bench", "relay", "--participants", "12", "--per-session", "4", "--rate", "10",
                                       "--duration", "2", "--settle", "0"])
        #expect(await bench.exitCode(within: 60) == 0, "\(bench.stderr)")
        #expect(bench.stdout.contains("lost 0"), "\(bench.stdout)")
        // The load comes from a process of its own, which reports its CPU; the server's CPU per delivery and
        // descriptors are read from /proc.
        #expect(bench.stdout.contains("load generator (own process, own core): CPU"), "\(bench.stdout)")
        #expect(bench.stdout.contains("µs of server CPU per delivery"), "\(bench.stdout)")
        #expect(bench.stdout.firstMatch(of: /server: \d+ fds/) != nil, "\(bench.stdout)")
        #expect(bench.stdout.firstMatch(of: /server memory: -?\d+\.\d KB more per participant/) != nil, "\(bench.stdout)")
    }

    @Test("bench relay --floor: the same load through the bare relay relays every message and says what it is")
    func relayFloor() async throws {
        let bench = try TandemProcess(["bench", "relay", "--floor", "--participants", "12", "--per-session", "4",
                                       "--rate", "10", "--duration", "2"])
        #expect(await bench.exitCode(within: 60) == 0, "\(bench.stderr)")
        #expect(bench.stdout.contains("bare relay (the floor: system calls only): 12/12 participants"), "\(bench.stdout)")
        #expect(bench.stdout.contains("lost 0"), "\(bench.stdout)")
        let delivered = try #require(bench.stdout.firstMatch(of: /sent (\d+), delivered (\d+)\/(\d+)/), "\(bench.stdout)")
        #expect(Int(delivered.1) ?? 0 >= 12 * 15, "\(bench.stdout)")
        #expect(delivered.2 == delivered.3 && Int(delivered.2) == 3 * (Int(delivered.1) ?? 0), "\(bench.stdout)")
        #expect(bench.stdout.contains("µs of server CPU per delivery"), "\(bench.stdout)")
        #expect(bench.stdout.contains("reproduce: tandem bench relay --participants 12 --per-session 4 --rate 10 --duration 2 --floor"))
    }

    @Test("bench soak: a few seconds of churn lose nothing and leave no file descriptor behind")
    func soak() async throws {
        let bench = try TandemProcess(["bench", "soak", "--duration", "5", "--stable", "3", "--churners", "4",
                                       "--rate", "20"])
        #expect(await bench.exitCode(within: 90) == 0, "\(bench.stdout)\n\(bench.stderr)")
        #expect(bench.stdout.contains("lost 0"), "\(bench.stdout)")
        #expect(bench.stdout.contains("duplicated 0, reordered 0"), "\(bench.stdout)")
        // Memory is judged over minutes (`make soak`), not in five seconds; descriptors must be back at once.
        let fds = try #require(bench.stdout.firstMatch(of: /fds (\d+) before clients, (\d+) after/), "\(bench.stdout)")
        #expect(fds.1 == fds.2, "\(bench.stdout)")
    }

    @Test("demo: SIGINT stops the script early, the session ends and the report covers what happened until then")
    func demoInterrupted() async throws {
        let demo = try TandemProcess(["demo"])
        defer { demo.stop() }
        // Past ann's play (1 s) and bob's slow load (2.5 s): there is something to report.
        #expect(await demo.wait(for: 60) { $0.stdout.contains("ann presses play") })
        try await Task.sleep(for: .seconds(4))
        demo.signal(SIGINT)
        #expect(await demo.exitCode(within: 30) == 0, "\(demo.stdout)\n\(demo.stderr)")
        #expect(demo.stdout.contains("interrupted — ann ends the session"), "\(demo.stdout)")
        #expect(demo.stdout.contains("Interrupted after"), "\(demo.stdout)")
        #expect(demo.stdout.contains("Command latency"), "\(demo.stdout)")
        #expect(demo.stdout.contains("play (waits for bob)"), "\(demo.stdout)")
        // Interrupted before dave's turn: no late joiner, and no step of the script after the signal.
        #expect(!demo.stdout.contains("dave joins late"), "\(demo.stdout)")
        #expect(!demo.stdout.contains("Late joiner"), "\(demo.stdout)")
    }

    @Test("bench clock prints the clock-sync figures")
    func clock() async throws {
        let bench = try TandemProcess(["bench", "clock", "--duration", "35", "--runs", "1"])
        #expect(await bench.exitCode(within: 60) == 0)
        for link in ["lan", "wan", "harsh", "asymmetric"] { #expect(bench.stdout.contains(link)) }
    }

    @Test("bench clock --transfer measures a real peer with TCP-only and UDP clock probes while attachments flow")
    func clockTransfer() async throws {
        let bench = try TandemProcess(["bench", "clock", "--transfer", "--duration", "2", "--attachment-mb", "4"])
        #expect(await bench.exitCode(within: 90) == 0, "\(bench.stderr)")
        let rows = bench.stdout.split(separator: "\n").filter { $0.hasPrefix("tcp ") || $0.hasPrefix("udp ") }
        #expect(rows.count == 2, "\(bench.stdout)")
        #expect(bench.stdout.contains("reproduce: tandem bench clock --transfer"))
    }
}
