import Testing
import Tandem
import TandemPeer
@testable import TandemBench

@Suite("Ensemble", .serialized)
struct EnsembleSmokeTests {
    @Test("two headless peers on an embedded server play together and their sinks' frames reach the ground truth")
    func twoPeersPlay() async throws {
        let ensemble = try await Ensemble.start(file: try Samples.path("countdown.webm"), title: "smoke")
        let ann = try await ensemble.add(.init(name: "ann"))
        _ = try await ensemble.add(.init(name: "bob"))
        try await Task.sleep(for: .seconds(1))
        await ann.peer.play()
        for _ in 0..<30 {
            try await Task.sleep(for: .milliseconds(200))
            ensemble.collect()
            if ensemble.withTruth({ truth in truth.frames.count == 2 && truth.frames.allSatisfy { $0.count >= 20 } }) { break }
        }
        await ensemble.finish()
        let counts = ensemble.withTruth { truth in truth.frames.map(\.count) }
        #expect(counts.count == 2 && counts.allSatisfy { $0 >= 20 }, "frames per peer: \(counts)")
        let showings = ensemble.withTruth { $0.showings() }
        #expect(!showings.isEmpty, "no frame was shown by both peers")
    }
}
