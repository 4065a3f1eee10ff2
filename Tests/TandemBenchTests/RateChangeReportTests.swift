import Foundation
import Testing
import Tandem
@testable import TandemBench

/// The rate-change figures of `bench sync`, from hand-made ground truth: one peer switching in place, one that
/// freezes for a prepare round before it follows.
@Suite("Benchmark reports: rate changes")
struct RateChangeReportTests {
    static let frame: Int64 = 33_333_333
    static let second: Int64 = 1_000_000_000

    /// 30 fps frames from `from` to `to` (true ns) of a line through (`at`, `item`) at `rate`, skipping the frames
    /// whose render time falls in `frozen`.
    static func frames(from: Int64, to: Int64, at: Int64, item: Int64, rate: Double,
                       frozen: Range<Int64>? = nil) -> [GroundTruth.Frame] {
        var result: [GroundTruth.Frame] = []
        var x = item + Int64((Double(from - at) * rate / Double(frame)).rounded(.up)) * frame
        while true {
            let time = at + Int64(Double(x - item) / rate)
            if time > to { break }
            if time >= from, !(frozen?.contains(time) ?? false) { result.append(GroundTruth.Frame(item: x, time: time)) }
            x += frame
        }
        return result
    }

    static func outcome(freezeSecondPeer: Bool) -> SyncBench.Outcome {
        var truth = GroundTruth()
        let change = 10 * second   // the request; the line goes to 1.5× at 10.1 s
        let anchor = change + 100_000_000
        for peer in 0..<2 {
            _ = truth.addPeer()
            var list = frames(from: 0, to: anchor, at: 0, item: 0, rate: 1)
            let frozen: Range<Int64>? = (freezeSecondPeer && peer == 1) ? (change + 20_000_000)..<(anchor + 200_000_000) : nil
            if let frozen { list.removeAll { frozen.contains($0.time) } }
            list += frames(from: anchor + 1, to: 14 * second, at: anchor, item: anchor, rate: 1.5, frozen: frozen)
            truth.record(peer, frames: list)
        }
        var configuration = SyncBench.Configuration(peers: 2)
        configuration.rateInPlace = !freezeSecondPeer
        let mark = SyncBench.Mark(time: change, label: "rate 1.5×", command: "rate", peer: 0, effect: .rate(1.5),
                                  phase: .rate)
        return SyncBench.Outcome(configuration: configuration, marks: [mark], showings: truth.showings(), truth: truth,
                                 peers: [("a", 0, nil), ("b", 0, nil)], lateJoiners: [], clockErrors: [], started: 0,
                                 ended: 14 * second, cpu: (0, 0), peakMemory: nil, corrections: [:], maxOneWay: 0)
    }

    @Test("a change in place: the new rate within a frame or two of the anchor, nothing held, nothing lost")
    func inPlace() throws {
        let figures = RateChangeFigures.make(Self.outcome(freezeSecondPeer: false), frameInterval: Self.frame)
        let change = try #require(figures.first)
        #expect(figures.count == 1 && change.inPlace)
        #expect(change.framesLost == 0)
        #expect(change.longestHold < 34)
        let toNew = try #require(change.toNewRate)
        #expect(toNew > 95 && toNew < 140, "\(toNew) ms")
        #expect((change.skewAfter.max ?? 1) < 0.001)
        #expect(RateChangeFigures.rendered(figures).contains("rate change (in place)"))
    }

    @Test("a stop and start: the hold, the frames it cost and the later arrival at the new rate are counted")
    func stopAndStart() throws {
        let figures = RateChangeFigures.make(Self.outcome(freezeSecondPeer: true), frameInterval: Self.frame)
        let change = try #require(figures.first)
        #expect(!change.inPlace)
        // About 300 ms without a new frame (from 10.0 s to the first frame after 10.3 s): 9 frames of 1× due.
        #expect(change.longestHold > 290 && change.longestHold < 340, "\(change.longestHold) ms")
        #expect((8...9).contains(change.framesLost), "\(change.framesLost)")
        #expect((change.toNewRate ?? 0) > 300)
        #expect(RateChangeFigures.rendered(figures).contains("stop and start"))
    }
}
