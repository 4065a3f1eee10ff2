import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// Real playback on the samples, headless. Serialized: timing checks need the (two) cores to themselves.
@Suite("GStreamerPlayer", .serialized)
struct GStreamerPlayerTests {
    let frame = TimeSpan.milliseconds(1000.0 / 30).nanoseconds

    @Test("preroll reports duration, streams and a content fingerprint")
    func prerollReportsMediaInfo() async throws {
        let player = try Samples.headlessPlayer()
        let video = try await player.load(Samples.countdown)
        #expect(abs((video.duration?.nanoseconds ?? 0) - TimeSpan.seconds(40).nanoseconds) < TimeSpan.milliseconds(50).nanoseconds)
        #expect(video.hasVideo && video.hasAudio && video.isSeekable)
        #expect(video.contentID?.count == 64)

        let audio = try await player.load(Samples.countdownOpus)
        #expect(abs((audio.duration?.nanoseconds ?? 0) - TimeSpan.seconds(40).nanoseconds) < TimeSpan.milliseconds(50).nanoseconds)
        #expect(audio.hasAudio && !audio.hasVideo)

        let short = try await player.load("file://" + Samples.short)
        #expect(abs((short.duration?.nanoseconds ?? 0) - TimeSpan.seconds(25).nanoseconds) < TimeSpan.milliseconds(50).nanoseconds)
        #expect(short.contentID != video.contentID)
        #expect(player.currentItemTime()?.nanoseconds == 0)
        await player.close()
    }

    @Test("load reports loading, then ready")
    func loadEvents() async throws {
        let player = try Samples.headlessPlayer()
        let info = try await player.load(Samples.countdownOpus)
        await player.close()
        var seen: [PlaybackEngineEvent] = []
        for await event in player.events { seen.append(event) }
        #expect(seen.first == .loading(progress: 0))
        #expect(seen.contains(.ready(info)))
    }

    @Test("playing advances the position, pausing holds it")
    func playAndPause() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let start = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: TimeSpan.seconds(2).nanoseconds), atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        try await sleep(ms: 900)
        let position = try #require(player.currentItemTime()?.nanoseconds)
        let expected = TimeSpan.seconds(2).nanoseconds + (player.sessionTimeNow().nanoseconds - start)
        #expect(abs(position - expected) < TimeSpan.milliseconds(100).nanoseconds, "position \(position), expected \(expected)")

        let held = try await player.pause().nanoseconds
        #expect(held > TimeSpan.seconds(2).nanoseconds + TimeSpan.milliseconds(300).nanoseconds)
        try await sleep(ms: 300)
        #expect(player.currentItemTime()?.nanoseconds == held)
        let records = player.renderProbe.drain()
        #expect(records.contains { $0.kind == .video } && records.contains { $0.kind == .audio })
        #expect(records.allSatisfy { $0.isExact })
        // Nothing renders while paused.
        try await sleep(ms: 200)
        #expect(player.renderProbe.drain().isEmpty)
        await player.close()
    }

    @Test("an accurate seek lands within one frame")
    func accurateSeek() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let target = TimeSpan.milliseconds(12_345).nanoseconds
        try await player.prepare(at: ItemTime(nanoseconds: target), rate: 1)
        let position = try #require(player.currentItemTime()?.nanoseconds)
        #expect(abs(position - target) <= frame)

        _ = player.renderProbe.drain()
        let start = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(200).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: target), atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        try await sleep(ms: 500)
        _ = try await player.pause()
        let firstVideo = try #require(player.renderProbe.drain().first { $0.kind == .video })
        #expect(abs(firstVideo.itemTime - target) <= frame, "first frame at \(firstVideo.itemTime)")
        await player.close()
    }

    @Test("item X renders at session time T; two players render it together")
    func twoPlayersRenderTogether() async throws {
        let a = try Samples.headlessPlayer()
        let b = try Samples.headlessPlayer()
        _ = try await a.load(Samples.countdown)
        _ = try await b.load(Samples.countdown)
        let x = TimeSpan.seconds(5).nanoseconds
        try await a.prepare(at: ItemTime(nanoseconds: x), rate: 1)
        try await b.prepare(at: ItemTime(nanoseconds: x), rate: 1)
        let t = a.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(400).nanoseconds
        async let playA: Void = a.play(from: ItemTime(nanoseconds: x), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        async let playB: Void = b.play(from: ItemTime(nanoseconds: x), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        _ = try await (playA, playB)
        try await sleep(ms: 1400)
        _ = try await a.pause()
        _ = try await b.pause()

        func videoTimes(_ player: GStreamerPlayer) -> [Int64: Int64] {
            Dictionary(player.renderProbe.drain().filter { $0.kind == .video }.map { ($0.itemTime, $0.monotonicTime) },
                       uniquingKeysWith: { first, _ in first })
        }
        let timesA = videoTimes(a)
        let timesB = videoTimes(b)
        // Identity calibration: session time is CLOCK_MONOTONIC, so X renders at T.
        let firstA = try #require(timesA[timesA.keys.min()!])
        #expect(abs(timesA.keys.min()! - x) <= frame)
        // Near T: the start was made at its time, not missed (a missed one is a preroll or more later). How near is
        // the benchmarks' to say; with the test lanes sharing two cores a sink thread woke 47 ms late once.
        #expect(abs(firstA - t) < TimeSpan.milliseconds(60).nanoseconds, "X rendered \(TimeSpan(nanoseconds: firstA - t).milliseconds) ms from T")

        let common = Set(timesA.keys).intersection(timesB.keys)
        #expect(common.count > 20)
        let gaps = common.map { Double(abs(timesA[$0]! - timesB[$0]!)) / 1e6 }
        #expect(median(gaps) < 8, "median gap \(median(gaps)) ms")
        await a.close()
        await b.close()
    }

    @Test("a calibration step moves rendering by the same amount")
    func calibrationStepMovesRendering() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let x = TimeSpan.seconds(1).nanoseconds
        try await player.prepare(at: ItemTime(nanoseconds: x), rate: 1)
        let t = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: x), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        try await sleep(ms: 800)
        let changedAt = SystemMonotonicClock().now.nanoseconds
        player.setClockMapping(.offset(.milliseconds(200)))
        try await sleep(ms: 900)
        _ = try await player.pause()

        // Lateness of each frame against the original schedule: item x + d was due at monotonic t + d.
        let (before, after) = split(videoLateness(player) { t + $0.itemTime - x }, at: changedAt)
        #expect(before.count > 10 && after.count > 10)
        #expect(abs(median(before)) < 10, "before: \(median(before)) ms")
        // The clock now reads 200 ms later, so everything renders 200 ms earlier.
        #expect(abs(median(after) + 200) < 20, "after: \(median(after)) ms")
        await player.close()
    }

    @Test("a backward clock step arriving while a start is queued still leaves the sinks on the calibrated clock")
    func backwardStepRacingAStart() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let x = TimeSpan.seconds(1).nanoseconds
        player.setClockMapping(.offset(.milliseconds(100)))
        let t = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(500).nanoseconds
        // The start must preroll at x first, so it keeps the player's queue busy; the backward step arrives
        // meanwhile (not yet playing) and must still hold for the sinks once the start has gone through.
        let starting = Task { try await player.play(from: ItemTime(nanoseconds: x), atSessionTime: SessionInstant(nanoseconds: t), rate: 1) }
        try await sleep(ms: 5)
        player.setClockMapping(.offset(.milliseconds(95)))
        try await starting.value
        try await sleep(ms: 1000)
        // A later correction must move rendering: it is applied to whichever clock the sinks wait on.
        let changedAt = SystemMonotonicClock().now.nanoseconds
        player.setClockMapping(.offset(.milliseconds(195)))
        try await sleep(ms: 900)
        _ = try await player.pause()
        // Item x + d was due when the clock read t + d; with the clock at +95 ms that is monotonic t + d − 95 ms.
        let (before, after) = split(videoLateness(player) { t + $0.itemTime - x - TimeSpan.milliseconds(95).nanoseconds },
                                    at: changedAt)
        #expect(before.count > 5 && after.count > 10)
        #expect(abs(median(before)) < 10, "before: \(median(before)) ms")
        #expect(abs(median(after) + 100) < 20, "after: \(median(after)) ms (the sinks missed the correction?)")
        await player.close()
    }

    @Test("a large backward step while paused: the next start still renders on time, the clock reading on")
    func largeBackwardStepWhilePaused() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        player.setClockMapping(.offset(.milliseconds(400)))
        // Half a second back while nothing plays: the GstClock cannot read backwards, so the player keeps it
        // reading on and starts later by that much on it; in session time nothing changes.
        player.setClockMapping(.offset(.milliseconds(-100)))
        #expect(abs(player.pipelineClockNow().nanoseconds - player.sessionTimeNow().nanoseconds) < TimeSpan.milliseconds(1).nanoseconds)
        let t = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(400).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: 0), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        try await sleep(ms: 1000)
        _ = try await player.pause()
        // Item d was due when session time read t + d, that is monotonic t + d + 100 ms.
        let lateness = videoLateness(player) { t + $0.itemTime + TimeSpan.milliseconds(100).nanoseconds }.map(\.ms)
        #expect(lateness.count > 10)
        #expect(abs(median(lateness)) < 10, "median lateness \(median(lateness)) ms")
        await player.close()
    }

    @Test("a small calibration change is slewed, not stepped")
    func smallChangeSlews() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let t = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: 0), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        try await sleep(ms: 500)
        let before = player.sessionTimeNow().nanoseconds - SystemMonotonicClock().now.nanoseconds
        player.setClockMapping(.offset(.milliseconds(10)))
        // Right after the change the clock still reads (almost) what it read before: no step.
        let justAfter = player.sessionTimeNow().nanoseconds - SystemMonotonicClock().now.nanoseconds
        #expect(abs(justAfter - before) < TimeSpan.milliseconds(2).nanoseconds)
        try await sleep(ms: 1300)
        let settled = player.sessionTimeNow().nanoseconds - SystemMonotonicClock().now.nanoseconds
        #expect(abs(settled - TimeSpan.milliseconds(10).nanoseconds) < TimeSpan.milliseconds(1).nanoseconds)
        _ = try await player.pause()
        await player.close()
    }

    @Test("a skewed local time model is honoured: session time follows it")
    func localTimeModel() async throws {
        let skew = ClockMapping(localAnchor: 0, sessionAnchor: .milliseconds(-300), rate: 1)
        let player = try Samples.headlessPlayer(localTimeModel: skew)
        _ = try await player.load(Samples.countdown)
        let now = SystemMonotonicClock().now.nanoseconds
        #expect(abs(player.sessionTimeNow().nanoseconds - (now - TimeSpan.milliseconds(300).nanoseconds)) < TimeSpan.milliseconds(2).nanoseconds)
        let t = player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(300).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: 0), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        try await sleep(ms: 600)
        _ = try await player.pause()
        let first = try #require(player.renderProbe.drain().first { $0.kind == .video })
        // The peer believes it is 300 ms earlier than it is, so T happens 300 ms later in true time.
        let due = t + TimeSpan.milliseconds(300).nanoseconds + first.itemTime
        #expect(abs(first.monotonicTime - due) < TimeSpan.milliseconds(15).nanoseconds)
        await player.close()
    }

    @Test("a start already in the past is refused, and one planned further along the same line joins it")
    func lateStartJoins() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let t = player.sessionTimeNow().nanoseconds - TimeSpan.seconds(2).nanoseconds
        // The player never moves a start itself…
        await #expect {
            try await player.play(from: ItemTime(nanoseconds: TimeSpan.seconds(3).nanoseconds),
                                  atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        } throws: { error in
            guard case .startMissed(let late) = error as? PlaybackError else { return false }
            return late > .seconds(1.9)
        }
        #expect(player.currentItemTime() == ItemTime(nanoseconds: TimeSpan.seconds(3).nanoseconds), "stays prerolled where it was asked")
        // …the caller (the coordinator) plans one on the same line, a preroll and a margin ahead.
        let start = player.sessionTimeNow().nanoseconds + player.prerollEstimate.nanoseconds + TimeSpan.milliseconds(100).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: TimeSpan.seconds(3).nanoseconds + start - t),
                              atSessionTime: SessionInstant(nanoseconds: start), rate: 1)
        try await sleep(ms: 600)
        _ = try await player.pause()
        let video = player.renderProbe.drain().filter { $0.kind == .video }
        let lateness = Self.lateness(video, line: (t, TimeSpan.seconds(3).nanoseconds))
        #expect(video.count > 5)
        #expect(abs(median(lateness)) < 15, "lateness \(median(lateness)) ms")
        await player.close()
    }

    /// How late each frame rendered (ms) against the line that renders item `line.item` at session `line.session`
    /// (a headless player's session time is its monotonic clock).
    static func lateness(_ frames: some Collection<RenderRecord>, line: (session: Int64, item: Int64)) -> [Double] {
        frames.map { Double($0.monotonicTime - (line.session + $0.itemTime - line.item)) / 1e6 }
    }

    @Test("a start that comes up to 40 ms late to a prerolled player is made on its line: what is past is left out")
    func aLittleLateStartIsMadeOnItsLine() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let x = TimeSpan.seconds(3).nanoseconds
        try await player.prepare(at: ItemTime(nanoseconds: x), rate: 1)
        let t = player.sessionTimeNow().nanoseconds - TimeSpan.milliseconds(20).nanoseconds
        try await player.play(from: ItemTime(nanoseconds: x), atSessionTime: SessionInstant(nanoseconds: t), rate: 1)
        try await sleep(ms: 600)
        _ = try await player.pause()
        let video = player.renderProbe.drain().filter { $0.kind == .video }
        // Every frame after the first on its line: item x at session t.
        let lateness = Self.lateness(video.dropFirst(), line: (t, x))
        #expect(video.count > 5)
        #expect(abs(median(lateness)) < 15, "lateness \(lateness) ms")
        await player.close()
    }

    @Test("end of stream is reported")
    func endOfStream() async throws {
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdownOpus)
        try await player.play(from: ItemTime(nanoseconds: TimeSpan.milliseconds(39_600).nanoseconds), atSessionTime: SessionInstant(nanoseconds: player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(100).nanoseconds), rate: 1)
        let sawEnd = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in player.events where event == .endOfStream { return true }
                return false
            }
            group.addTask {
                try? await sleep(ms: 3000)
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        #expect(sawEnd)
        await player.close()
    }
}
