import Synchronization
import TandemCore

/// A `PlaybackEngine` that plays nothing: it renders a `SimulatedPlayback` on `clock`, taking the profile's load
/// and seek times (slept on `clock`, so a `ManualClock` drives it deterministically) and reporting the item time a
/// real player would show. For testing an app's use of `PlaybackCoordinator` without GStreamer.
///
/// `clock` is read as true time; the engine's own clock reads session time through the mapping the coordinator
/// gives it with `setClockMapping`, as a real engine's does.
public final class FakePlaybackEngine: PlaybackEngine {
    public let events: AsyncStream<PlaybackEngineEvent>
    private let eventSink: AsyncStream<PlaybackEngineEvent>.Continuation
    private let clock: any MonotonicClock
    private let playback: Mutex<SimulatedPlayback>
    private let nextID = Mutex<UInt64>(1)

    public init(profile: FakeEngineProfile = .init(), clock: any MonotonicClock) {
        self.clock = clock
        playback = Mutex(SimulatedPlayback(profile: profile, localClock: .identity))
        (events, eventSink) = AsyncStream.makeStream(of: PlaybackEngineEvent.self)
    }

    public var prerollEstimate: TimeSpan { TimeSpan(nanoseconds: playback.withLock { $0.profile.prerollEstimate }) }

    public func load(_ location: String) async throws -> MediaInfo {
        guard case .loaded(let info) = try await run(.load(itemID: location)) else { throw PlaybackError.notLoaded }
        eventSink.yield(.ready(info))
        return info
    }

    public func prepare(at itemTime: ItemTime, rate: Double) async throws {
        _ = try await run(.prepare(itemTime: itemTime, rate: rate))
    }

    public func play(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant, rate: Double) async throws {
        _ = try await run(.play(from: itemTime, atSessionTime: sessionTime, rate: rate))
    }

    @discardableResult
    public func pause() async throws -> ItemTime {
        guard case .paused(let itemTime) = try await run(.pause) else { throw PlaybackError.notLoaded }
        return itemTime
    }

    public func currentItemTime() -> ItemTime? {
        let now = clock.now.nanoseconds
        return playback.withLock { $0.renderedItemTime(atTrue: now) }.map { ItemTime(nanoseconds: $0) }
    }

    public func setClockMapping(_ mapping: ClockMapping) {
        let now = clock.now.nanoseconds
        playback.withLock { _ = $0.run(.setClockMapping(mapping), id: 0, atTrue: now) }
    }

    public func close() async { eventSink.finish() }

    /// Runs `command` on the simulated player and waits on `clock` until it is done.
    private func run(_ command: EngineCommand) async throws -> EngineOutcome {
        let id = nextID.withLock { id in
            defer { id += 1 }
            return id
        }
        let now = clock.now.nanoseconds
        guard let done = playback.withLock({ $0.run(command, id: id, atTrue: now) }) else {
            throw PlaybackError.engineFailure("\(command) has no outcome")
        }
        try await clock.sleep(until: LocalInstant(nanoseconds: done.at), tolerance: nil)
        if case .failed(let error) = done.outcome { throw error }
        return done.outcome
    }
}
