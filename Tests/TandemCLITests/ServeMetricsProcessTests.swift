import Foundation
import TandemTestHTTP
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `tandem serve --metrics` as an operator runs it: a real process, its printed address, real HTTP requests.
@Suite("tandem serve --metrics: health and metrics of a running relay")
struct ServeMetricsProcessTests {
    @Test("serve --metrics 127.0.0.1:0 prints the bound metrics address, answers /healthz and /metrics, stops on SIGTERM")
    func serveWithMetrics() async throws {
        let server = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0", "--metrics", "127.0.0.1:0"])
        defer { server.stop() }
        #expect(await server.wait(for: 15) { $0.stdout.contains("/healthz") }, "stdout: \(server.stdout) stderr: \(server.stderr)")
        let line = try #require(server.stdout.split(separator: "\n").first { $0.contains("metrics at http://127.0.0.1:") })
        let address = try #require(line.range(of: "metrics at http://127.0.0.1:"))
        let port = try #require(Int(line[address.upperBound...].prefix { $0.isNumber }))
        #expect(port > 0)
        #expect(!server.stdout.contains("warning"), "loopback needs no warning: \(server.stdout)")

        let health = try await HTTPProbe.get("/healthz", port: port)
        #expect(health.status == 200)
        let body = try JSONSerialization.jsonObject(with: Data(health.body.utf8)) as? [String: Any]
        #expect(body?["status"] as? String == "ok")
        #expect(body?["sessions"] as? Int == 0)
        #expect((body?["uptime"] as? Double ?? -1) >= 0)

        let metrics = try await HTTPProbe.get("/metrics", port: port)
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("\ntandem_sessions 0") || metrics.body.hasPrefix("tandem_sessions 0"), "\(metrics.body)")
        #expect(metrics.body.contains("tandem_refusals_total{reason=\"authentication_failed\"} 0"))

        server.signal(SIGTERM)
        #expect(await server.exitCode(within: 10) == 0)
    }

    @Test("serve --metrics with something other than HOST:PORT is bad usage (64), told in words; its help says where it belongs")
    func badMetricsAddress() async throws {
        let process = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0", "--metrics", "9464"])
        #expect(await process.exitCode(within: 20) == 64)
        #expect(process.stderr.contains("--metrics takes HOST:PORT"), "\(process.stderr)")

        let help = try TandemProcess(["serve", "--help"])
        _ = await help.exitCode(within: 20)
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("--metrics <HOST:PORT>"), "\(help.stdout)")
        #expect(words.contains("loopback or a private network"), "\(help.stdout)")
    }
}
