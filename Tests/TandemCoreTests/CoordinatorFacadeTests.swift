import Foundation
import Synchronization
import Testing
import TandemCore
import TandemTesting

/// A player that does everything at once and remembers what it was told; its clock is `clock` mapped to session
/// time, so `currentItemTime` follows the timeline it was given.
final class RecordingEngine: PlaybackEngine {
    struct State {
        var calls: [String] = []
        var line: (item: Int64, session: Int64, rate: Double)?
        var still: Int64 = 0
        var mapping = ClockMapping.identity
    }

    let clock: any MonotonicClock
    let media: MediaInfo
    let state = Mutex(State())
    let events: AsyncStream<PlaybackEngineEvent>
    let eventSink: AsyncStream<PlaybackEngineEvent>.Continuation
    var prerollEstimate: Int64 { 20_000_000 }

    init(clock: any MonotonicClock, media: MediaInfo = FakeEngineProfile.defaultMedia) {
        self.clock = clock
        self.media = media
        (events, eventSink) = AsyncStream.makeStream(of: PlaybackEngineEvent.self)
    }

    var calls: [String] { state.withLock { $0.calls } }

    func load(_ location: String) async throws -> MediaInfo {
        state.withLock { $0.calls.append("load \(location)"); $0.line = nil; $0.still = 0 }
        return media
    }

    func prepare(at itemTime: Int64, rate: Double) async throws {
        state.withLock { $0.calls.append("prepare \(itemTime)"); $0.line = nil; $0.still = itemTime }
    }

    func play(from itemTime: Int64, atSessionTime sessionTime: Int64, rate: Double) async throws {
        state.withLock { $0.calls.append("play \(itemTime) at \(sessionTime) rate \(rate)"); $0.line = (itemTime, sessionTime, rate) }
    }

    func pause() async throws -> Int64 {
        let item = currentItemTime() ?? 0
        state.withLock { $0.calls.append("pause"); $0.line = nil; $0.still = item }
        return item
    }

    func currentItemTime() -> Int64? {
        let now = clock.now()
        return state.withLock { s in
            guard let line = s.line else { return s.still }
            let session = s.mapping.sessionTime(atLocal: now)
            return line.item + Int64(Double(max(0, session - line.session)) * line.rate)
        }
    }

    func setClockMapping(_ mapping: ClockMapping) { state.withLock { $0.mapping = mapping } }
    func close() async {}
}

/// Waits until `condition` holds, polling, for at most `seconds`. The bound is generous on purpose: it returns
/// as soon as the condition holds, and on two cores the other suites' CPU-bound simulations can hold every
/// thread of the cooperative pool for several seconds at a time.
func eventually(within seconds: Double = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}

@Suite struct CoordinatorFacadeTests {
    @Test func twoCoordinatorsStartTogetherAndPauseAtTheOriginatorsPosition() async throws {
        let clock = SystemMonotonicClock()
        let hub = InMemorySessionHub(activity: ActivityEnvelope(activityIdentifier: "Movie", metadata: .init(title: "m"),
                                                                payload: Data(), itemID: "movie"), clock: clock)
        let aliceEngine = RecordingEngine(clock: clock)
        let bobEngine = RecordingEngine(clock: clock)
        let alice = PlaybackCoordinator(engine: aliceEngine, link: try await hub.connect(name: "alice", isHost: true),
                                        clock: clock, tickInterval: .milliseconds(10), locate: { "/media/\($0).webm" })
        let bob = PlaybackCoordinator(engine: bobEngine, link: try await hub.connect(name: "bob"), clock: clock,
                                      tickInterval: .milliseconds(10), locate: { "/media/\($0).webm" })
        let aliceEvents = alice.events
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await alice.run() }
                group.addTask { await bob.run() }
            }
        }
        defer { runs.cancel() }

        #expect(await eventually { aliceEngine.calls.contains("load /media/movie.webm")
            && bobEngine.calls.contains("load /media/movie.webm") })
        #expect(await eventually { await hub.participants.allSatisfy { if case .ready = $0.readiness { true } else { false } } })
        await bob.play()
        #expect(await eventually { await alice.timeline?.isPlaying == true && bobEngine.calls.contains { $0.hasPrefix("play") } })
        let alicePlay = aliceEngine.calls.filter { $0.hasPrefix("play") }
        let bobPlay = bobEngine.calls.filter { $0.hasPrefix("play") }
        #expect(alicePlay.count == 1)
        #expect(alicePlay == bobPlay, "both engines get the same start: \(alicePlay) vs \(bobPlay)")
        #expect(await alice.expectedItemTime(atSessionTime: clock.now() + 1_000_000_000) ?? 0 > 0)
        #expect(await alice.otherParticipants.map(\.participant.name) == ["bob"])

        try await Task.sleep(for: .milliseconds(100))
        await alice.pause()
        #expect(await eventually { await bob.timeline?.status == .paused })
        let pausedAt = await hub.timeline.anchorItemTime
        #expect(pausedAt > 0)
        #expect(await eventually { bobEngine.calls.last == "prepare \(pausedAt)" })
        #expect(bobEngine.currentItemTime() == pausedAt)
        #expect(aliceEngine.currentItemTime() == pausedAt)

        let sawTimeline = await collect(1, from: aliceEvents.filter {
            if case .timelineChanged(let t) = $0 { t.status == .paused } else { false }
        }.asStream(), within: 1)
        #expect(sawTimeline.count == 1)
    }

    @Test func aSuspensionMakesTheGroupWaitUntilItEnds() async throws {
        let clock = SystemMonotonicClock()
        let hub = InMemorySessionHub(activity: ActivityEnvelope(activityIdentifier: "Movie", metadata: .init(title: "m"),
                                                                payload: Data(), itemID: "movie"), clock: clock)
        let aliceEngine = RecordingEngine(clock: clock)
        let bobEngine = RecordingEngine(clock: clock)
        let alice = PlaybackCoordinator(engine: aliceEngine, link: try await hub.connect(name: "alice", isHost: true),
                                        clock: clock, tickInterval: .milliseconds(10))
        let bob = PlaybackCoordinator(engine: bobEngine, link: try await hub.connect(name: "bob"), clock: clock,
                                      tickInterval: .milliseconds(10))
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await alice.run() }
                group.addTask { await bob.run() }
            }
        }
        defer { runs.cancel() }
        #expect(await eventually { await hub.participants.allSatisfy { if case .ready = $0.readiness { true } else { false } } })
        #expect(await bob.suspensionReasonsThatTriggerWaiting.contains(.userChangingTime))
        let suspension = await bob.beginSuspension(for: .userChangingTime)
        #expect(await eventually { await hub.participants.contains { $0.suspensions == [.userChangingTime] } })
        await alice.play()
        #expect(await eventually {
            if case .waiting(let who) = await alice.timeline?.status { return who.keys.count == 1 } else { return false }
        })
        #expect(!aliceEngine.calls.contains { $0.hasPrefix("play") })
        await suspension.end(proposingNewTime: 30_000_000_000)
        #expect(await eventually { await alice.timeline?.isPlaying == true })
        #expect(await hub.timeline.anchorItemTime == 30_000_000_000)
        #expect(await eventually { aliceEngine.calls.contains { $0.hasPrefix("play 30000000000") }
            && bobEngine.calls.contains { $0.hasPrefix("play 30000000000") } })
    }
}
