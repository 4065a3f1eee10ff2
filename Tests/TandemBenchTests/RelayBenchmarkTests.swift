import Testing
import TandemBench

@Suite("Relay benchmark")
struct RelayBenchmarkTests {
    @Test("a tiny run relays every message and reports figures")
    func smoke() async throws {
        var configuration = RelayBenchmark.Configuration()
        configuration.participants = 6
        configuration.sessions = 2
        configuration.messagesPerSecond = 20
        configuration.duration = 1
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
