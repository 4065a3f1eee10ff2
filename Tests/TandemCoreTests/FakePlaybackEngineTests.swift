import Testing
import TandemCore
import TandemTesting

@Suite struct FakePlaybackEngineTests {
    @Test func itLoadsPlaysAndPausesOnItsClockAsAPlaybackEngine() async throws {
        let clock = ManualClock(1_000_000_000)
        let engine: any PlaybackEngine = FakePlaybackEngine(clock: clock)
        #expect(engine.prerollEstimate.nanoseconds == FakeEngineProfile().prerollEstimate)
        #expect(engine.currentItemTime() == nil)

        let loading = Task { try await engine.load("movie") }
        await clock.waitForSleepers()
        clock.advance(by: .milliseconds(300))   // the profile's load time
        #expect(try await loading.value == FakeEngineProfile.defaultMedia)
        #expect(engine.currentItemTime() == 0)

        let start = clock.now.nanoseconds + 500_000_000
        let playing = Task { try await engine.play(from: 10_000_000_000, atSessionTime: SessionInstant(nanoseconds: start), rate: 1) }
        await clock.waitForSleepers()
        clock.advance(by: .milliseconds(80))    // the seek to the new position
        try await playing.value
        #expect(engine.currentItemTime() == 10_000_000_000)  // the first frame, until the start

        clock.set(start + 2_000_000_000)
        #expect(engine.currentItemTime() == 12_000_000_000)
        #expect(try await engine.pause() == 12_000_000_000)
        clock.advance(by: .seconds(1))
        #expect(engine.currentItemTime() == 12_000_000_000)
    }

    @Test func aCommandBeforeLoadingFails() async throws {
        let engine = FakePlaybackEngine(clock: ManualClock())
        await #expect(throws: PlaybackError.notLoaded) { try await engine.prepare(at: 0, rate: 1) }
    }
}
