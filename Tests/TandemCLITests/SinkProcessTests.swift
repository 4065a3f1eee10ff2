import Foundation
import Testing

/// `tandem host` with sinks the user names that do not wait on the clock, as a headless box would use them.
@Suite("User-given sinks in a real session", .serialized)
struct SinkProcessTests {
    @Test("--video-sink fakesink and an unsynchronised audio chain: said once, 20 s of play at real time with no resync, a pause where playback is",
          .timeLimit(.minutes(2)))
    func fakesinkPlaysOnTheClock() async throws {
        let host = try TandemProcess(["host", TandemBinary.sample("countdown.webm"), "--video-sink", "fakesink",
                                      "--audio-sink", "audioconvert ! fakesink sync=false", "--json",
                                      "--bind", "127.0.0.1", "--port", "0", "--name", "ann"])
        defer { host.stop() }
        #expect(await host.event("invite", within: 30) != nil, "no invite; stderr: \(host.stderr)")
        let warnings = host.events("warning").compactMap { $0["text"]?.string }
        #expect(warnings.filter { $0.hasPrefix("the video sink 'fakesink' did not sync to the clock; Tandem set sync=true on fakesink") }.count == 1,
                "\(warnings)")
        #expect(warnings.filter { $0.hasPrefix("the audio sink 'audioconvert ! fakesink sync=false' was told not to sync") }.count == 1,
                "\(warnings)")

        host.send("play")
        let playing = await host.event("timeline", within: 15) { $0["state"]?.string == "playing" }
        #expect(playing != nil, "never played; stderr: \(host.stderr)")
        // Before the fix the position reached the end of the 40 s file a second or two after play, and the drift
        // watchdog resynchronised every 1.6 s.
        let wallBefore = Date(), steadyBefore = ContinuousClock.now
        try await Task.sleep(for: .seconds(20))
        // The events carry wall-clock stamps: a step of the machine's wall clock meanwhile (a VM's time sync moved it
        // 6 s once) is taken out of their span. The position is checked against the group's clock below as well.
        let waited = ContinuousClock.now - steadyBefore
        let step = Date().timeIntervalSince(wallBefore)
            - (Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18)
        #expect(host.events("resync").isEmpty, "resynchronised: \(host.events("resync"))")
        let samples = host.events("position").filter { $0["state"]?.string == "playing" }.compactMap { event -> (time: Double, position: Double, error: Double)? in
            guard let time = event["time"]?.number, let position = event["position"]?.number,
                  let error = event["positionErrorMs"]?.number else { return nil }
            return (time, position, error)
        }
        #expect(samples.count >= 15, "\(samples.count) position events while playing")
        let first = try #require(samples.first), last = try #require(samples.last)
        // The position advances at real time (the events' own wall-clock stamps), within half a second over ~20 s.
        let advanced = last.position - first.position, elapsed = last.time - first.time - step
        #expect(elapsed > 15 && abs(advanced - elapsed) < 0.5, "advanced \(advanced) s in \(elapsed) s (the wall clock stepped \(step) s)")
        let errors = samples.map { abs($0.error) }
        #expect(errors.allSatisfy { $0 < 100 }, "position errors (ms) \(errors)")

        host.send("pause")
        let played = try #require(playing?["generation"]?.number)
        let paused = await host.event("timeline", within: 10) {
            $0["state"]?.string == "paused" && ($0["generation"]?.number ?? 0) > played
        }
        let pausedAt = try #require(paused?["anchorItemTime"]?.number, "no pause; stderr: \(host.stderr)")
        let pauseStamp = try #require(paused?["time"]?.number)
        // Where playback really was when the pause was made: the last sample carried forward at real time.
        let there = last.position + (pauseStamp - last.time)
        #expect(pausedAt <= there + 0.3 && pausedAt >= last.position, "paused at \(pausedAt) s; playback was at about \(there) s")
        #expect(pausedAt < 30, "paused at \(pausedAt) s of a 40 s file after about 20 s of play")

        host.send("leave")
        #expect(await host.exitCode(within: 10) == 0)
    }
}
