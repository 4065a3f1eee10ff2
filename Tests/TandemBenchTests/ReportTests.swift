import Foundation
import Testing
@testable import TandemBench

@Suite("Benchmark reports")
struct ReportTests {
    static func relayResult(participants: Int, p99: Int64, lost: Int = 0, serverMemory: Int64? = nil) -> RelayBenchmark.Result {
        var configuration = RelayBenchmark.Configuration()
        configuration.participants = participants
        configuration.sessions = participants / 4
        return RelayBenchmark.Result(configuration: configuration, joined: participants, connectFailures: [],
                                     sent: 100, expected: 300, received: 300 - lost, p50: 150_000, p99: p99,
                                     max: p99 * 2, residentMemory: 40 << 20, residentMemoryBefore: 30 << 20,
                                     sendFailures: 0, serverResidentMemory: serverMemory, serverPeakMemory: serverMemory,
                                     serverCPUPercent: serverMemory.map { _ in 42 })
    }

    @Test("a relay run says its figures and whether its targets hold")
    func relayDescription() {
        let met = Self.relayResult(participants: 40, p99: 1_500_000)
        #expect(met.meetsTargets)
        #expect(met.description.contains("latency p50 0.150 ms  p99 1.500 ms  max 3.000 ms"))
        #expect(met.description.contains("resident memory 40.0 MB (+10.0 MB) (server and clients in one process)"))
        #expect(met.description.hasSuffix("targets (p99 ≤ 2 ms, no loss, ≤ 100 MB): met"))
        let missed = Self.relayResult(participants: 40, p99: 2_500_000, lost: 3, serverMemory: 20 << 20)
        #expect(!missed.meetsTargets)
        #expect(missed.description.contains("lost 3"))
        #expect(missed.description.contains("server (own process): resident 20.0 MB, peak 20.0 MB, CPU 42 % of a core"))
    }

    @Test("a standalone relay run gives the server's CPU per delivery and descriptors, and flags a saturated generator")
    func relayServerDetail() {
        var result = Self.relayResult(participants: 40, p99: 1_500_000)
        result.serverResidentMemory = 20 * 1_048_576
        result.serverCPUTime = 600_000_000  // 0.6 s over 300 deliveries: 2,000 µs each
        result.serverKernelCPUTime = 450_000_000  // of which 1,500 µs in the kernel
        result.serverFileDescriptors = 52
        result.generatorCPUPercent = 60
        result.sent = 2_000  // 40 participants × 10/s × 5 s: the load was offered in full
        #expect(result.description.contains("server: 52 fds, 2000.00 µs of server CPU per delivery (1500.00 of them in the kernel)"))
        #expect(result.description.contains("load generator (own process, own core): CPU 60 % of its core"))
        #expect(!result.description.contains("SATURATED") && result.meetsTargets)
        result.generatorCPUPercent = 97
        #expect(result.description.contains("CPU 97 % of its core — SATURATED"))
        #expect(!result.meetsTargets, "a saturated generator's run does not count")
        let table = RelayBenchmark.Result.table([result])
        #expect(table.contains("2000.00 (1500.00)") && table.contains("97 % SATURATED"))
        // A generator that could not send what the load asked for (40 × 10/s × 5 s = 2,000; 100 sent).
        result.generatorCPUPercent = 50
        result.sent = 100
        #expect(result.description.contains("the generator sent 100 of the 2000 messages scheduled"))
        #expect(!result.meetsTargets)
    }

    @Test("a generator whose timers fire late is flagged, though its average CPU is low; clock probes above 1/s are named")
    func relayGeneratorLag() {
        var result = Self.relayResult(participants: 40, p99: 1_500_000)
        result.serverResidentMemory = 20 * 1_048_576
        result.generatorCPUPercent = 25
        result.sent = 2_000
        result.generatorLagP99 = 400_000
        result.clockProbesPerParticipantSecond = 1.0
        #expect(result.description.contains("load generator's timers fired late by 0.400 ms at p99"))
        #expect(result.description.contains("clock probes as datagrams during the load: 1.0 per participant a second"))
        #expect(!result.description.contains("busy in bursts") && !result.description.contains("started over"))
        #expect(result.meetsTargets)
        result.generatorLagP99 = 12_000_000
        result.clockProbesPerParticipantSecond = 3.8
        #expect(result.description.contains("fired late by 12.000 ms at p99 — it was busy in bursts"))
        #expect(result.description.contains("3.8 per participant a second (steady state is 1"))
        #expect(!result.meetsTargets, "a lagging generator's latency does not count")
        #expect(RelayBenchmark.Result.table([result]).contains("25 % LAGGED"))
    }

    @Test("relay runs side by side: one row each, under a header and a rule")
    func relayTable() {
        let table = RelayBenchmark.Result.table([Self.relayResult(participants: 40, p99: 1_500_000),
                                                 Self.relayResult(participants: 80, p99: 2_500_000, serverMemory: 20 << 20)])
        let lines = table.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.first == "where it breaks (one server, one core):")
        #expect(lines.count == 5)
        #expect(lines[1].hasPrefix("participants  sessions  msg/s  p50 ms  p99 ms"))
        #expect(lines[3].contains("40/40") && lines[3].hasSuffix("met"))
        #expect(lines[4].contains("80/80") && lines[4].contains("20.0") && lines[4].contains("42 %") && lines[4].hasSuffix("missed"))
    }

    @Test("a soak report's targets: nothing lost, duplicated or reordered, memory and descriptors back")
    func soakReport() {
        var report = Soak.Report()
        report.stable = 4
        report.churners = 6
        report.duration = 60
        report.rssWarm = 10 << 20
        report.rssEnd = 12 << 20
        report.fdsBaseline = 9
        report.fdsEnd = 9
        #expect(report.meetsTargets)
        #expect(report.rendered.contains("(+2.0 MB)"))
        #expect(report.rendered.hasSuffix("met"))
        report.reordered = 1
        #expect(!report.meetsTargets)
        #expect(report.rendered.hasSuffix("NOT met"))
    }

    @Test("files for several policies get the policy in their names")
    func suffixes() {
        #expect(BenchFiles.suffixed("/tmp/out/plot.svg", "tandem") == "/tmp/out/plot-tandem.svg")
        #expect(BenchFiles.suffixed("/tmp/frames", "jellyfin-rules") == "/tmp/frames-jellyfin-rules")
    }
}
