import Foundation
import Testing
import TandemBench
import TandemPeer

@Suite("Relay benchmark")
struct RelayBenchmarkTests {
    @Test("a tiny run relays every message and reports figures")
    func smoke() async throws {
        var configuration = RelayBenchmark.Configuration()
        configuration.participants = 6
        configuration.sessions = 2
        configuration.messagesPerSecond = 20
        configuration.duration = 1
        configuration.settle = 0
        let result = try await RelayBenchmark.run(configuration)
        #expect(result.joined == 6)
        #expect(result.sent >= 6 * 15)
        #expect(result.expected == result.sent * 2)
        #expect(result.lost == 0, "\(result)")
        #expect(result.p50 > 0 && result.p50 <= result.p99 && result.p99 <= result.max)
        #expect(result.residentMemory ?? 1 > 0)
        #expect(result.description.contains("p99"))
    }
}

@Suite("Relay instruction counts")
struct RelayInstructionCountTests {
    @Test("callgrind's total is read from its output; the per-delivery figure is the difference over the difference")
    func totalsAndDifference() throws {
        let path = NSTemporaryDirectory() + "callgrind-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "# callgrind format\nversion: 1\nevents: Ir\nfn=main\n12 345\nsummary: 98765432\ntotals: 98765432\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        #expect(RelayBenchmark.callgrindTotal(atPath: path) == 98_765_432)
        #expect(RelayBenchmark.callgrindTotal(atPath: path + ".missing") == nil)

        var count = RelayBenchmark.InstructionCount(participants: 16, perSession: 4, rates: (2, 6), duration: 8,
                                                    low: (1_000_000, 600), high: (3_400_000, 1_800))
        #expect(count.perDelivery == 2_000)
        #expect(count.description.contains("2000 instructions"))
        count.high = (900_000, 1_800)  // fewer instructions for more deliveries: no figure rather than a wrong one
        #expect(count.perDelivery == nil)
    }
}

@Suite("Syncplay skew benchmark")
struct SyncplaySkewBenchTests {
    @Test("two Tandem peers in a real syncplay-server room: frames rendered by both, skew and settling reported")
    func smoke() async throws {
        let media = try Samples.path("countdown.webm")
        let report = try await SyncplaySkewBench.run(media: media, duration: 10)
        #expect(report.showings > 20, "\(report)")
        // Bounds for a loaded machine: Syncplay's own rules leave up to seconds of drift alone.
        #expect(report.p99 < 1_000_000_000, "\(report)")
        #expect(report.settling.map(\.command) == ["play", "seek", "play again"])
        #expect(report.settling.allSatisfy { $0.seconds != nil }, "\(report)")
        #expect(report.pauseApart != nil, "\(report)")
        #expect(report.description.contains("render skew between the peers (ground truth)"))
    }
}
