import Foundation
import Testing
import Tandem
import TandemPeer
@testable import TandemBench

/// The host's copy streamed when it is H.264/AAC in MP4 at 1080p, the commonest download (not WebM as the other
/// samples): `media-samples/h264-1080p.mp4`, made by `make samples` (and by `make test` when missing).
@Suite("Streaming an MP4", .serialized)
struct StreamingMP4Tests {
    @Test("a joiner without the file streams a sharing host's 1080p H.264/AAC MP4, fingerprinted as the file, in step")
    func streamsMP4() async throws {
        let file = try #require(try? Samples.path("h264-1080p.mp4"),
                                "media-samples/h264-1080p.mp4 is missing: make samples (or scripts/make-mp4-sample.sh)")
        let probe = try await MediaProbe.probe(file)
        #expect(probe.streams.contains { $0.kind == .video && $0.height == 1080 }, "\(probe.streams)")
        #expect(probe.hasAudio)
        let ensemble = try await Ensemble.start(file: file, title: "mp4", sharesMedia: true)
        let ann = try await ensemble.add(.init(name: "ann"))
        var setup = Ensemble.PeerSetup(name: "bob")
        setup.streams = true
        let bob = try await ensemble.add(setup)
        #expect(await StreamBench.eventually(20) { ann.player.mediaInfo != nil && bob.player.mediaInfo != nil },
                "bob never loaded the host's MP4")
        let uri = bob.player.loadedURI ?? ""
        #expect(uri.hasPrefix("http://127.0.0.1:") && uri.contains("/media/"), "bob loaded \(uri)")
        #expect(bob.player.mediaInfo?.contentID != nil && bob.player.mediaInfo?.contentID == probe.contentID)

        let playAt = SystemMonotonicClock().now.nanoseconds
        await ann.peer.play()
        for _ in 0..<25 {
            try await Task.sleep(for: .milliseconds(200))
            ensemble.collect()
        }
        let showings: [GroundTruth.Showing] = ensemble.withTruth { $0.showings(since: playAt + TimeSpan.seconds(1).nanoseconds) }
        let spreads = showings.map(\.spread).sorted()
        let median = spreads.isEmpty ? Int64.max : spreads[spreads.count / 2]
        #expect(showings.count >= 30, "showings: \(showings.count)")
        #expect(median < 40_000_000, "median skew \(Double(median) / 1e6) ms")
        await ensemble.finish()
    }
}
