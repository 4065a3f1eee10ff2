import Foundation
import Testing
import Tandem
import TandemPeer
@testable import TandemBench

/// A joiner streaming the host's copy through a link that becomes slower than the media's bitrate: its buffer
/// runs dry, the group waits for it (the others stop, they do not play on and drift away) and everyone starts
/// again together. Real players on fakesinks, the real server, the link in this process (`ThrottledLink`); judged
/// from the render probes on the true clock.
@Suite("Streaming through a slow link", .serialized)
struct ThrottledStreamTests {
    /// A gap in rendering of more than this is a stop (frames come every 40 ms or so).
    static let gap = TimeSpan.milliseconds(500).nanoseconds

    static func gaps(in frames: [GroundTruth.Frame]) -> [(from: GroundTruth.Frame, to: GroundTruth.Frame)] {
        zip(frames, frames.dropFirst()).filter { $1.time - $0.time > gap }.map { ($0, $1) }
    }

    @Test("a joiner rebuffering behind a link slower than the bitrate makes the group wait; all resume together")
    func groupWaitsForRebuffer() async throws {
        let file = try Samples.path("countdown.webm")
        let length = try #require(try await MediaProbe.probe(file).duration)
        let size = try #require((try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value)
        let mediaRate = Int(Double(size) / length.seconds)
        let ensemble = try await Ensemble.start(file: file, title: "slow link", sharesMedia: true)
        // Fast enough to load and start (3×), then slower than the bitrate.
        let link = try ThrottledLink(upstream: ensemble.invite.port, bytesPerSecond: 3 * mediaRate, delay: .milliseconds(50))
        defer { link.close() }
        let ann = try await ensemble.add(.init(name: "ann"))
        var setup = Ensemble.PeerSetup(name: "bob")
        setup.streams = true
        setup.port = link.port
        let bob = try await ensemble.add(setup)
        #expect(await StreamBench.eventually(20) { bob.player.mediaInfo != nil && ann.player.mediaInfo != nil },
                "bob never loaded the host's copy through the link")
        let playAt = SystemMonotonicClock().now.nanoseconds
        await ann.peer.play()
        // Once bob plays, the link drops to 0.4 times the bitrate for a while: what he fetched ahead runs out.
        let started = await StreamBench.eventually(10) {
            ensemble.collect()
            return ensemble.withTruth { $0.lastFrame(of: bob.index) != nil }
        }
        #expect(started, "bob never started playing")
        link.setBytesPerSecond(mediaRate * 2 / 5)
        for tick in 0..<(22 * 5) {
            // For 8 s: a buffer fetching slower than it plays is never judged able to play through, so the wait
            // ends when the link is fast again.
            if tick == 8 * 5 { link.setBytesPerSecond(3 * mediaRate) }
            try await Task.sleep(for: .milliseconds(200))
            ensemble.collect()
        }
        await ensemble.finish()

        let (annFrames, bobFrames) = ensemble.withTruth { truth in
            (truth.frames[ann.index].filter { $0.time >= playAt }, truth.frames[bob.index].filter { $0.time >= playAt })
        }
        #expect(!bobFrames.isEmpty, "bob rendered nothing")
        // Gaps shorter than the stall detection's reach (the sinks starved for `StallWatch.starvedLag`, then a
        // round trip through the server) end before the group can hear of them: a hiccup, not a wait. The waits
        // judged here are the ones the group must take part in.
        let stalls = Self.gaps(in: bobFrames).filter { $0.to.time - $0.from.time >= TimeSpan.seconds(2).nanoseconds }
        // bob renders again before the run ends. (He used to sit out the rest of the run now and then: each prepare
        // that waited on the slow link counted as a preroll, and his joins after a missed start were planned that
        // many seconds ahead, once 30 s.)
        let stuckToTheEnd = (annFrames.last?.time ?? 0) - (bobFrames.last?.time ?? 0) > TimeSpan.seconds(2).nanoseconds
        let stuck = "bob stopped at \(Double(bobFrames.last?.item ?? 0) / 1e9) s and never rendered again; "
            + "ann reached \(Double(annFrames.last?.item ?? 0) / 1e9) s"
        #expect(!stuckToTheEnd, Comment(rawValue: stuck))
        // What a start must allow for bob is a preroll in what he has fetched, not the waits on the link.
        #expect(bob.player.prerollEstimate < .seconds(1), "bob's preroll estimate: \(bob.player.prerollEstimate)")
        #expect(!stalls.isEmpty,
                "bob never ran dry at 0.4 times the bitrate (\(bobFrames.count) frames, ann \(annFrames.count))")
        var report: [String] = []
        for stall in stalls {
            // While bob waits for bytes, ann stops too: she renders a little past where bob stopped (until his
            // sinks have starved for `StallWatch.starvedLag`, or his download buffer says so, and the stall
            // reaches her through the server), not on into the wait. Judged over the wait's first 3 s: later in a
            // long wait the group may resume when his buffer says it can play through and stop again when it
            // cannot (the report shows it).
            let annDuring = annFrames.filter { $0.time > stall.from.time && $0.time < stall.to.time }
            let annAhead = (annDuring.map(\.item).max() ?? stall.from.item) - stall.from.item
            let annEarly = annDuring.filter { $0.time < stall.from.time + TimeSpan.seconds(3).nanoseconds }
            let annStoppedAfter = (annEarly.map(\.item).max() ?? stall.from.item) - stall.from.item
            let waited = stall.to.time - stall.from.time
            #expect(annStoppedAfter < TimeSpan.milliseconds(1500).nanoseconds,
                    "ann played \(Double(annStoppedAfter) / 1e9) s on after bob ran dry (he waited \(Double(waited) / 1e9) s)")
            // And they play together again: what both render in the next 4 s, at nearly the same true time. (A wait
            // that ends while the link is still slow ends with bob joining the group's restart on his own a moment
            // later — the restart reaches him late behind his own download — and he may run dry again soon.)
            let resumed = ensemble.withTruth { truth in
                truth.showings(peers: [ann.index, bob.index], window: TimeSpan.milliseconds(500).nanoseconds,
                               since: stall.to.time - TimeSpan.milliseconds(100).nanoseconds)
                    .filter { $0.median <= stall.to.time + TimeSpan.seconds(4).nanoseconds }
            }
            let spreads = resumed.map(\.spread).sorted()
            let median = spreads.isEmpty ? Int64.max : spreads[spreads.count / 2]
            // Unless bob ran dry again at once, or the run ended, there is something to compare.
            if stall.to.time + TimeSpan.seconds(2).nanoseconds < bobFrames.last!.time, bobFrames.filter({ $0.time > stall.to.time }).count > 30 {
                #expect(resumed.count >= 10 && median < 40_000_000,
                        "after a wait of \(Double(waited) / 1e9) s: \(resumed.count) frames together, median skew \(Double(median) / 1e6) ms")
            }
            report.append(String(format: "waited %.2f s at %.1f s, ann stopped %.2f s on (%.2f s on during the wait), then %d frames, median skew %.2f ms",
                                 Double(waited) / 1e9, Double(stall.from.item) / 1e9, Double(annStoppedAfter) / 1e9, Double(annAhead) / 1e9,
                                 resumed.count, Double(median) / 1e6))
        }
        // Not drifting apart: at the end both render the same part of the item.
        if let annLast = annFrames.last, let bobLast = bobFrames.last, !stuckToTheEnd {
            #expect(abs(annLast.item - bobLast.item) < TimeSpan.milliseconds(500).nanoseconds,
                    "ann ended at \(Double(annLast.item) / 1e9) s, bob at \(Double(bobLast.item) / 1e9) s")
        }
        func span(_ frames: [GroundTruth.Frame]) -> String {
            guard let first = frames.first, let last = frames.last else { return "none" }
            return String(format: "%d frames, items %.2f–%.2f s, %.2f–%.2f s after play", frames.count, Double(first.item) / 1e9,
                          Double(last.item) / 1e9, Double(first.time - playAt) / 1e9, Double(last.time - playAt) / 1e9)
        }
        print("slow link: \(report.joined(separator: "; ")); fetched \(link.bytesFetched) bytes; ann \(span(annFrames)); bob \(span(bobFrames))")
    }
}
