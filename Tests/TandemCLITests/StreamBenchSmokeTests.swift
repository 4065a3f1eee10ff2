import Foundation
import Testing

/// A short run of `tandem bench stream` with loose bounds, so that it cannot rot; its figures come from the
/// published runs (docs/BENCHMARKS.md), never from a test on a busy machine.
@Suite("Benchmark smoke runs: stream", .serialized)
struct StreamBenchSmokeTests {
    @Test("bench stream: a few seconds through a 3× link report a first frame, bytes fetched and skew against a local peer")
    func stream() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("stream.json").path
        let bench = try TandemProcess(["bench", "stream", "--factor", "3", "--duration", "8", "--json", json])
        #expect(await bench.exitCode(within: 120) == 0, "\(bench.stdout)\n\(bench.stderr)")
        #expect(bench.stdout.contains("first frame after play: streamer"), "\(bench.stdout)")
        #expect(bench.stdout.contains("reproduce: tandem bench stream --factor 3 --delay 50 --duration 8"), "\(bench.stdout)")
        let runs = try #require(try JSONDecoder().decode(JSON.self, from: Data(contentsOf: URL(fileURLWithPath: json))).array)
        let run = try #require(runs.first)
        #expect(runs.count == 1)
        #expect(run["factor"]?.number == 3)
        // The streamer rendered, some seconds after the play (the link is slow, the machine busy: loose).
        let firstFrame = try #require(run["firstFrame"]?.number, "\(bench.stdout)")
        #expect(firstFrame > 0 && firstFrame < 8, "first frame \(firstFrame) s")
        #expect((run["watched"]?.number ?? 0) > 2, "\(bench.stdout)")
        // What crossed the link is some of the file, and no more than the file a few times over.
        let fetched = try #require(run["bytesFetched"]?.number)
        let size = try #require(run["fileBytes"]?.number)
        #expect(fetched > 50_000 && fetched < 3 * size, "fetched \(fetched) of \(size)")
        // The link's bandwidth is 3× the media's: the file's size over its length, three times.
        let media = try #require(run["mediaBytesPerSecond"]?.number)
        #expect(abs((run["linkBytesPerSecond"]?.number ?? 0) - 3 * media) <= 3, "\(bench.stdout)")
        // Skew in ns, against the host, for the streamer and for the local peer: frames compared, within 50 ms.
        for key in ["skew", "localSkew"] {
            #expect((run[key]?["count"]?.number ?? 0) > 30, "\(key): \(bench.stdout)")
            #expect((run[key]?["p50"]?.number ?? .infinity) < 50_000_000, "\(key): \(bench.stdout)")
        }
    }
}
