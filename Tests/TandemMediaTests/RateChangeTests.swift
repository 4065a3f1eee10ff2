import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// A rate change while playing, on a real headless pipeline, judged by the render probe (ground truth): made in
/// place (GStreamer's instant rate change) the frames keep coming without a gap and, from the anchor on, follow the
/// new line against the clock; where the pipeline cannot, the player says so before anyone asks. Serialized: timing.
@Suite("Rate changes in place", .serialized)
struct RateChangeTests {
    static let frame = TimeSpan.milliseconds(34).nanoseconds   // the samples are 30 fps

    @Test("a rate change in place does not flush: every frame renders, no gap, then on the new line from the anchor")
    func inPlaceChangeFollowsTheNewLine() async throws {
        let player = try Samples.headlessPlayer()
        let info = try await player.load(Samples.countdown)
        #expect(info.changesRateInPlace, "matroskademux handles instant rate changes")
        // Identity calibration: session time is CLOCK_MONOTONIC, the probe's time base.
        let from = TimeSpan.seconds(2).nanoseconds
        let start = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: from), atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        try await sleep(ms: 1_000)
        // The group's new line: 1.5× from 150 ms ahead, continuing the 1× line there.
        let anchor = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(150).nanoseconds
        let anchorItem = from + (anchor - start)
        try await player.play(from: ItemTime(nanoseconds: anchorItem), atSessionTime: SessionInstant(nanoseconds: anchor),
                              rate: 1.5)
        let switched = try #require(player.lastRateSwitch, "the change was not made in place")
        #expect(switched.rate == 1.5)
        #expect(switched.lateness.magnitude < .milliseconds(10), "switched \(switched.lateness.milliseconds) ms off the anchor")
        // The switch's lateness is taken back: the base time moved by the error it would have left.
        if switched.renderError.magnitude > GStreamerPlayer.smallestSwitchCorrection {
            #expect(switched.correction.nanoseconds == -switched.renderError.nanoseconds)
        }
        try await sleep(ms: 1_500)
        _ = try await player.pause()

        let video = player.renderProbe.drain().filter { $0.kind == .video && $0.isExact }.sorted { $0.monotonicTime < $1.monotonicTime }
        let before = video.filter { $0.monotonicTime < anchor - 10_000_000 }
        let after = video.filter { $0.monotonicTime > anchor + 10_000_000 }
        #expect(before.count > 20 && after.count > 30, "\(before.count) frames before, \(after.count) after")
        // No flush: the item times run on frame by frame across the change (none skipped or shown again) and the
        // picture never freezes for longer than a frame.
        let around = video.filter { abs($0.monotonicTime - anchor) < TimeSpan.milliseconds(500).nanoseconds }
        let steps = zip(around, around.dropFirst()).map { ($1.itemTime - $0.itemTime, $1.monotonicTime - $0.monotonicTime) }
        let largestItemStep = steps.map(\.0).max() ?? .max
        let smallestItemStep = steps.map(\.0).min() ?? .min
        let longestHold = steps.map(\.1).max() ?? .max
        #expect(largestItemStep <= Self.frame && smallestItemStep > 0, "item steps \(smallestItemStep)…\(largestItemStep) ns")
        #expect(longestHold < 2 * Self.frame, "a frame stayed \(longestHold / 1_000_000) ms")
        // On the old line before the anchor, on the new one after it.
        func off(_ r: RenderRecord, _ expected: (Int64) -> Int64) -> Double { Double(r.monotonicTime - expected(r.itemTime)) / 1e6 }
        let oldLine = before.map { off($0) { start + ($0 - from) } }
        let newLine = after.map { off($0) { anchor + Int64(Double($0 - anchorItem) / 1.5) } }
        #expect(median(oldLine.map(abs)) < 8, "before: median \(median(oldLine.map(abs))) ms off the 1× line")
        #expect(median(newLine.map(abs)) < 8, "after: median \(median(newLine.map(abs))) ms off the 1.5× line")
        // Frames after the anchor stay near the new line: all but one in twenty within 25 ms (a frame whose thread a
        // busy core woke late lands 25-65 ms off on its own, seen beside the heavy suites; a switch off the line
        // moves every frame after it).
        let far = newLine.filter { abs($0) >= 25 }
        #expect(far.count <= max(1, newLine.count / 20), "after: \(far.count) of \(newLine.count) frames 25 ms or more off: \(far)")
        // The rate itself, over the second after the change: item time per clock time.
        let first = try #require(after.first), last = try #require(after.last)
        let rate = Double(last.itemTime - first.itemTime) / Double(last.monotonicTime - first.monotonicTime)
        #expect(abs(rate - 1.5) < 0.02, "rendered at \(rate)×")
        await player.close()
    }

    /// 20 ms late to 2×; 100 ms late to 1.5× (a stall or a retransmission on a long link: a flush and a join froze the
    /// picture for 230–370 ms there).
    @Test("a rate change handed over after its moment is still made in place, and its frames land on the line",
          arguments: [(20, 2.0), (100, 1.5)] as [(Int64, Double)])
    func aLateChangeIsMadeInPlaceAndCorrected(lateMS: Int64, rate: Double) async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let from = TimeSpan.seconds(2).nanoseconds
        let start = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: from), atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        try await sleep(ms: 1_000)
        // The group's new line began `lateMS` ago (the change reached this peer late).
        let late = TimeSpan(nanoseconds: lateMS * 1_000_000)
        let anchor = player.sessionTimeNow().nanoseconds - late.nanoseconds
        let anchorItem = from + (anchor - start)
        _ = player.renderProbe.drain()
        try await player.play(from: ItemTime(nanoseconds: anchorItem), atSessionTime: SessionInstant(nanoseconds: anchor),
                              rate: rate)
        let switched = try #require(player.lastRateSwitch, "the late change was not made in place")
        #expect(switched.rate == rate && switched.lateness >= late * Int64(3) / Int64(4), "late by \(switched.lateness.milliseconds) ms")
        // Uncorrected, every frame would now show a fraction of the lateness late (a half at 2×, a third at 1.5×):
        // the item ran that long at 1×.
        #expect(switched.correction == TimeSpan(nanoseconds: -switched.renderError.nanoseconds))
        #expect(switched.renderError >= late / Int64(4), "the error left: \(switched.renderError.milliseconds) ms")
        try await sleep(ms: 1_000)
        _ = try await player.pause()
        let after = player.renderProbe.drain().filter {
            $0.kind == .video && $0.isExact && $0.monotonicTime > anchor + TimeSpan.milliseconds(300).nanoseconds
        }
        #expect(after.count > 20, "\(after.count) frames")
        let off: [Double] = after.map { frame in
            let onLine = anchor + Int64(Double(frame.itemTime - anchorItem) / rate)
            return Double(frame.monotonicTime - onLine) / 1e6
        }
        let offMedian = median(off)
        #expect(abs(offMedian) < 4, "median \(offMedian) ms off the \(rate)× line")
        await player.close()
    }

    @Test("a switch made late would leave every later frame a fraction of its lateness off the new line")
    func renderErrorOfALateSwitch() {
        func error(late: Int64, from old: Double, to new: Double) -> Int64 {
            GStreamerPlayer.RateSwitch(rate: new, previousRate: old, intendedRunningTime: .seconds(1),
                                       appliedRunningTime: .seconds(1) + TimeSpan(nanoseconds: late)).renderError.nanoseconds
        }
        // 1× → 1.5×, 600 µs late: the item ran 600 µs at 1× instead of 1.5×, 300 µs behind, shown 200 µs late.
        #expect(error(late: 600_000, from: 1, to: 1.5) == 200_000)
        // 1.5× → 1×, 800 µs late: 400 µs ahead, shown 400 µs early.
        #expect(error(late: 800_000, from: 1.5, to: 1) == -400_000)
        #expect(error(late: -300_000, from: 1, to: 2) == -150_000)
        #expect(error(late: 500_000, from: 1, to: 1) == 0)
    }

    @Test("changes in a row, and one after a flushing start at another rate, land on their lines too")
    func changesInARowAndAfterAFlush() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        func now() -> Int64 { player.sessionTimeNow().nanoseconds }
        /// Switches the playing `line` to `rate` 150 ms from now; returns the new line (session ns, item ns, rate).
        func switchRate(_ line: (Int64, Int64, Double), to rate: Double) async throws -> (Int64, Int64, Double) {
            let anchor = now() + TimeSpan.milliseconds(150).nanoseconds
            let item = line.1 + Int64(Double(anchor - line.0) * line.2)
            try await player.play(from: ItemTime(nanoseconds: item), atSessionTime: SessionInstant(nanoseconds: anchor), rate: rate)
            #expect(player.lastRateSwitch?.rate == rate, "the change to \(rate)× was not made in place")
            return (anchor, item, rate)
        }
        /// The median distance (ms) of the frames rendered from 50 ms after `line`'s anchor to `until` from it.
        func offLine(_ frames: [RenderRecord], _ line: (Int64, Int64, Double), until: Int64) -> Double {
            let mine = frames.filter { $0.monotonicTime > line.0 + 50_000_000 && $0.monotonicTime < until }
            #expect(mine.count > 10)
            return median(mine.map { abs(Double($0.monotonicTime - (line.0 + Int64(Double($0.itemTime - line.1) / line.2)))) / 1e6 })
        }

        var line: (Int64, Int64, Double) = (now() + TimeSpan.milliseconds(300).nanoseconds, TimeSpan.seconds(1).nanoseconds, 1)
        try await player.play(from: ItemTime(nanoseconds: line.1), atSessionTime: SessionInstant(nanoseconds: line.0), rate: 1)
        try await sleep(ms: 700)
        let fast = try await switchRate(line, to: 1.5)
        try await sleep(ms: 700)
        line = try await switchRate(fast, to: 1)
        try await sleep(ms: 700)
        var frames = player.renderProbe.drain().filter { $0.kind == .video && $0.isExact }
        #expect(offLine(frames, fast, until: line.0 - 10_000_000) < 8)
        #expect(offLine(frames, line, until: .max) < 8)

        // A flushing start at 0.75× elsewhere, then in place to 1.25×.
        try await player.prepare(at: .seconds(20), rate: 0.75)
        let slow: (Int64, Int64, Double) = (now() + TimeSpan.milliseconds(200).nanoseconds, TimeSpan.seconds(20).nanoseconds, 0.75)
        try await player.play(from: ItemTime(nanoseconds: slow.1), atSessionTime: SessionInstant(nanoseconds: slow.0), rate: 0.75)
        try await sleep(ms: 700)
        _ = player.renderProbe.drain()
        let last = try await switchRate(slow, to: 1.25)
        try await sleep(ms: 800)
        frames = player.renderProbe.drain().filter { $0.kind == .video && $0.isExact }
        #expect(offLine(frames, last, until: .max) < 8)
        await player.close()
    }

    @Test("where the pipeline cannot change rate in place (oggdemux), or the player is told not to, it says so at load")
    func fallbackIsAnnouncedAtLoad() async throws {
        let opus = try Samples.headlessPlayer()
        #expect(try await opus.load(Samples.countdownOpus).changesRateInPlace == false)
        await opus.close()

        var configuration = GStreamerPlayer.Configuration.headless
        configuration.changesRateInPlace = false
        let off = try GStreamerPlayer(configuration: configuration)
        #expect(try await off.load(Samples.countdown).changesRateInPlace == false)
        // Told to play at another rate while playing, it stops and starts again (a flush): the start it was given is
        // already past once it has prerolled, so it refuses it, as it refuses any start it cannot make. (An anchor
        // 10 ms ahead was once made on a busy machine: a start in the past cannot be.)
        let start = off.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await off.play(from: .seconds(2), atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        try await sleep(ms: 600)
        let anchor = off.sessionTimeNow().nanoseconds - TimeSpan.milliseconds(50).nanoseconds
        await #expect(throws: PlaybackError.self) {
            try await off.play(from: ItemTime(nanoseconds: TimeSpan.seconds(2).nanoseconds + anchor - start),
                               atSessionTime: SessionInstant(nanoseconds: anchor), rate: 1.5)
        }
        #expect(off.lastRateSwitch == nil)
        await off.close()
    }
}
