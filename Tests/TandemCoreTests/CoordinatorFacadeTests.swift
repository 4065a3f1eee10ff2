import Foundation
import Synchronization
import Testing
import TandemCore
import TandemTesting

/// A player that does everything at once and remembers what it was told; its clock is `clock` mapped to session
/// time, so `currentItemTime` follows the timeline it was given. Every call is announced on `changes`.
final class RecordingEngine: PlaybackEngine {
    struct State {
        var calls: [String] = []
        var line: (item: Int64, session: Int64, rate: Double)?
        var still: Int64 = 0
        var mapping = ClockMapping.identity
    }

    let clock: any MonotonicClock
    let media: MediaInfo
    let changes: ChangeFeed
    let state = Mutex(State())
    let events: AsyncStream<PlaybackEngineEvent>
    let eventSink: AsyncStream<PlaybackEngineEvent>.Continuation
    var prerollEstimate: TimeSpan { 20_000_000 }

    init(clock: any MonotonicClock, changes: ChangeFeed = ChangeFeed(), media: MediaInfo = FakeEngineProfile.defaultMedia) {
        self.clock = clock
        self.changes = changes
        self.media = media
        (events, eventSink) = AsyncStream.makeStream(of: PlaybackEngineEvent.self)
    }

    var calls: [String] { state.withLock { $0.calls } }

    private func record(_ body: (inout State) -> Void) {
        state.withLock { body(&$0) }
        changes.changed()
    }

    func load(_ location: String) async throws -> MediaInfo {
        record { $0.calls.append("load \(location)"); $0.line = nil; $0.still = 0 }
        return media
    }

    func prepare(at itemTime: ItemTime, rate: Double) async throws {
        let itemTime = itemTime.nanoseconds
        record { $0.calls.append("prepare \(itemTime)"); $0.line = nil; $0.still = itemTime }
    }

    func play(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant, rate: Double) async throws {
        let (itemTime, sessionTime) = (itemTime.nanoseconds, sessionTime.nanoseconds)
        record { $0.calls.append("play \(itemTime) at \(sessionTime) rate \(rate)"); $0.line = (itemTime, sessionTime, rate) }
    }

    func pause() async throws -> ItemTime {
        let item = currentItemTime()?.nanoseconds ?? 0
        record { $0.calls.append("pause"); $0.line = nil; $0.still = item }
        return ItemTime(nanoseconds: item)
    }

    func currentItemTime() -> ItemTime? {
        let now = clock.now.nanoseconds
        let item = state.withLock { s in
            guard let line = s.line else { return s.still }
            let session = s.mapping.sessionTime(atLocal: LocalInstant(nanoseconds: now)).nanoseconds
            return line.item + Int64(Double(max(0, session - line.session)) * line.rate)
        }
        return ItemTime(nanoseconds: item)
    }

    func setClockMapping(_ mapping: ClockMapping) { state.withLock { $0.mapping = mapping } }
    func close() async {}
}

/// Something in a test changed (an engine call, a coordinator event): what `until` waits on instead of polling.
final class ChangeFeed: Sendable {
    private struct State {
        var version = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextKey = 0
    }

    private let state = Mutex(State())

    var version: Int { state.withLock { $0.version } }

    func changed() {
        let waiting = state.withLock { s in
            s.version += 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Forwards every element of `stream` as a change, until the stream ends.
    func follow<T: Sendable>(_ stream: AsyncStream<T>) -> Task<Void, Never> {
        Task { for await _ in stream { self.changed() } }
    }

    /// Returns once something changed after `version`, or after `limit` (which only a failing test reaches).
    func change(after version: Int, limit: Duration) async {
        let key = state.withLock { s in
            defer { s.nextKey += 1 }
            return s.nextKey
        }
        let timeout = Task {
            try? await Task.sleep(for: limit)
            self.state.withLock { $0.waiters.removeValue(forKey: key) }?.resume()
        }
        defer { timeout.cancel() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                guard s.version == version else { return true }
                s.waiters[key] = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Whether `condition` holds, re-checked on every change (not on a timer). Gives up after `limit` without a
    /// change that makes it hold: a generous bound that only a failing test reaches.
    func until(limit: Duration = .seconds(60), _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while true {
            let seen = version
            if await condition() { return true }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            await change(after: seen, limit: left)
        }
    }
}

@Suite struct CoordinatorFacadeTests {
    @Test func twoCoordinatorsStartTogetherAndPauseAtTheOriginatorsPosition() async throws {
        let clock = ManualClock(1_000_000_000_000)
        let changes = ChangeFeed()
        let hub = InMemorySessionHub(activity: ActivityEnvelope(activityIdentifier: "Movie", metadata: .init(title: "m"),
                                                                payload: Data(), itemID: "movie"), clock: clock)
        let aliceEngine = RecordingEngine(clock: clock, changes: changes)
        let bobEngine = RecordingEngine(clock: clock, changes: changes)
        let alice = ClockedPlaybackCoordinator(engine: aliceEngine, link: try await hub.connect(name: "alice", isHost: true),
                                               clock: clock, tickInterval: .milliseconds(10),
                                               locate: { "/media/\($0).webm" })
        let bob = ClockedPlaybackCoordinator(engine: bobEngine, link: try await hub.connect(name: "bob"), clock: clock,
                                             tickInterval: .milliseconds(10), locate: { "/media/\($0).webm" })
        let aliceEvents = alice.events
        let following = [changes.follow(alice.events), changes.follow(bob.events)]
        defer { following.forEach { $0.cancel() } }
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await alice.run() }
                group.addTask { await bob.run() }
            }
        }
        defer { runs.cancel() }

        #expect(await changes.until { aliceEngine.calls.contains("load /media/movie.webm")
            && bobEngine.calls.contains("load /media/movie.webm") })
        #expect(await changes.until { await hub.participants.allSatisfy { if case .ready = $0.readiness { true } else { false } } })
        await bob.play()
        #expect(await changes.until { await alice.timeline?.isPlaying == true && bobEngine.calls.contains { $0.hasPrefix("play") } })
        let alicePlay = aliceEngine.calls.filter { $0.hasPrefix("play") }
        let bobPlay = bobEngine.calls.filter { $0.hasPrefix("play") }
        #expect(alicePlay.count == 1)
        #expect(alicePlay == bobPlay, "both engines get the same start: \(alicePlay) vs \(bobPlay)")
        #expect(await alice.expectedItemTime(atSessionTime: SessionInstant(nanoseconds: clock.now.nanoseconds + 1_000_000_000))?.nanoseconds ?? 0 > 0)
        #expect(await alice.otherParticipants.map(\.participant.name) == ["bob"])

        // Past the scheduled start (the lead is well under a second), so the engines have moved.
        clock.advance(by: .seconds(1))
        await alice.pause()
        #expect(await changes.until { await bob.timeline?.status == .paused })
        let pausedAt = await hub.timeline.anchorItemTime.nanoseconds
        #expect(pausedAt > 0)
        #expect(await changes.until { bobEngine.calls.last == "prepare \(pausedAt)" })
        #expect(bobEngine.currentItemTime()?.nanoseconds == pausedAt)
        #expect(aliceEngine.currentItemTime()?.nanoseconds == pausedAt)

        let sawTimeline = await collect(1, from: aliceEvents.filter {
            if case .timelineChanged(let t) = $0 { t.status == .paused } else { false }
        }.asStream(), within: 1)
        #expect(sawTimeline.count == 1)
    }

    @Test func aSuspensionMakesTheGroupWaitUntilItEnds() async throws {
        let clock = ManualClock(1_000_000_000_000)
        let changes = ChangeFeed()
        let hub = InMemorySessionHub(activity: ActivityEnvelope(activityIdentifier: "Movie", metadata: .init(title: "m"),
                                                                payload: Data(), itemID: "movie"), clock: clock)
        let aliceEngine = RecordingEngine(clock: clock, changes: changes)
        let bobEngine = RecordingEngine(clock: clock, changes: changes)
        let alice = ClockedPlaybackCoordinator(engine: aliceEngine, link: try await hub.connect(name: "alice", isHost: true, prerollEstimate: .milliseconds(20)),
                                               clock: clock, tickInterval: .milliseconds(10))
        let bob = ClockedPlaybackCoordinator(engine: bobEngine, link: try await hub.connect(name: "bob", prerollEstimate: .milliseconds(20)), clock: clock,
                                             tickInterval: .milliseconds(10))
        let following = [changes.follow(alice.events), changes.follow(bob.events)]
        defer { following.forEach { $0.cancel() } }
        let runs = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await alice.run() }
                group.addTask { await bob.run() }
            }
        }
        defer { runs.cancel() }
        #expect(await changes.until { await hub.participants.allSatisfy { if case .ready = $0.readiness { true } else { false } } })
        #expect(await bob.suspensionReasonsThatTriggerWaiting.contains(.userChangingTime))
        let suspension = await bob.beginSuspension(for: .userChangingTime)
        #expect(await changes.until { await hub.participants.contains { $0.suspensions == [.userChangingTime] } })
        await alice.play()
        #expect(await changes.until {
            if case .waiting(let who) = await alice.timeline?.status { return who.keys.count == 1 } else { return false }
        })
        #expect(!aliceEngine.calls.contains { $0.hasPrefix("play") })
        await suspension.end(proposingNewTime: 30_000_000_000)
        #expect(await changes.until { await alice.timeline?.isPlaying == true })
        #expect(await hub.timeline.anchorItemTime.nanoseconds == 30_000_000_000)
        #expect(await changes.until { aliceEngine.calls.contains { $0.hasPrefix("play 30000000000") }
            && bobEngine.calls.contains { $0.hasPrefix("play 30000000000") } })
    }
}
