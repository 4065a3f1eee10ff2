// CustomEngine: a PlaybackEngine of your own under a PlaybackCoordinator. The engine here plays no media: it
// "renders" its item time as text, on a clock that reads session time, the way a real player releases frames.
// Two participants (ann and bob) play, seek and pause together on an embedded server on 127.0.0.1.
//
//   swift run CustomEngine
import Foundation
import Synchronization
import Tandem

// snippet: engine
/// A player that prints the item time it renders every half second of the item.
final class TextEngine: PlaybackEngine {
    let name: String
    let events: AsyncStream<PlaybackEngineEvent>   // one stream, for the coordinator
    private let sink: AsyncStream<PlaybackEngineEvent>.Continuation
    private let clock = SystemMonotonicClock()      // the local clock the coordinator's mapping starts from
    private let state = Mutex(State())

    private struct State {
        var mapping = ClockMapping.identity         // local time → session time, from the coordinator
        var paused = ItemTime.zero                  // where it stands while not playing
        var line: (item: ItemTime, session: SessionInstant, rate: Double)?   // what it plays, while playing
        var renderer: Task<Void, Never>?
    }

    init(name: String) {
        self.name = name
        (events, sink) = AsyncStream.makeStream()
    }

    var prerollEstimate: TimeSpan { .milliseconds(5) }   // how long prepare takes: nothing to decode

    func load(_ location: String) async throws -> MediaInfo {
        let info = MediaInfo(duration: .seconds(600), isSeekable: true, hasVideo: true, hasAudio: false,
                             contentID: location)   // the same id everywhere: everyone has the same "file"
        sink.yield(.ready(info))
        return info
    }

    func prepare(at itemTime: ItemTime, rate: Double) async throws { stop(at: itemTime) }

    /// Renders `itemTime` when the clock reads `sessionTime`; a start already past is missed, never moved.
    func play(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant, rate: Double) async throws {
        let now = state.withLock { $0.mapping(clock.now) }
        if sessionTime < now { throw PlaybackError.startMissed(lateBy: now - sessionTime) }
        let renderer = Task { [self] in
            var shown: Int?
            while !Task.isCancelled {
                if let item = rendering(), Int(item.seconds * 2) != shown {   // a new half second
                    shown = Int(item.seconds * 2)
                    print("\(name) renders \(Double(Int(item.seconds * 2)) / 2) s")
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        state.withLock { state in
            state.renderer?.cancel()
            (state.line, state.renderer) = ((itemTime, sessionTime, rate), renderer)
        }
    }

    @discardableResult
    func pause() async throws -> ItemTime {
        let here = currentItemTime() ?? .zero
        stop(at: here)
        return here
    }

    func currentItemTime() -> ItemTime? {
        state.withLock { state in
            guard let line = state.line else { return state.paused }
            let now = state.mapping(clock.now)
            return now < line.session ? line.item : line.item + (now - line.session) * line.rate
        }
    }

    var isPlaying: Bool { state.withLock { $0.line != nil } }

    /// The item time on screen now: nil while paused or before the start.
    private func rendering() -> ItemTime? {
        state.withLock { state in
            guard let line = state.line, state.mapping(clock.now) >= line.session else { return nil }
            return line.item + (state.mapping(clock.now) - line.session) * line.rate
        }
    }

    func setClockMapping(_ mapping: ClockMapping) { state.withLock { $0.mapping = mapping } }

    func close() async {
        stop(at: .zero)
        sink.finish()
    }

    private func stop(at itemTime: ItemTime) {
        state.withLock { state in
            state.renderer?.cancel()
            (state.line, state.renderer, state.paused) = (nil, nil, itemTime)
        }
    }
}
// snippet end

struct Film: GroupActivity {
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "Text", type: .watchTogether) }
}

Task {   // however it goes, this example ends
    try await Task.sleep(for: .seconds(30))
    print("CustomEngine: gave up after 30 s")
    exit(1)
}

/// One participant: an engine of ours under a coordinator, on a connection of its own.
func participant(_ name: String, invite: Invite) async throws
    -> (engine: TextEngine, coordinator: PlaybackCoordinator) {
    let engine = TextEngine(name: name)
    let link = try await TandemClient.connect(invite: invite, name: name)   // takes part at once
    let coordinator = PlaybackCoordinator(engine: engine, link: link)      // loads the item id, "text"
    Task { await coordinator.run() }
    return (engine, coordinator)
}

/// Waits (up to 10 s) until `engine` has played past `seconds`.
func waitUntil(_ engine: TextEngine, passes seconds: Double) async throws {
    for _ in 0..<500 where (engine.currentItemTime()?.seconds ?? 0) < seconds {
        try await Task.sleep(for: .milliseconds(20))
    }
}

let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
let invite = try server.createSession(activity: try Film().envelope(itemID: "text"))
let ann = try await participant("ann", invite: invite), bob = try await participant("bob", invite: invite)
await ann.coordinator.play()                     // both start at the same session time
try await waitUntil(bob.engine, passes: 1.2)
try await bob.coordinator.seek(to: .seconds(30)) // anyone may seek: everyone goes there together
try await waitUntil(ann.engine, passes: 31.2)
await ann.coordinator.pause()                    // everyone stops where ann is
// It reaches bob (straight from ann, where they reach each other), and the group's pause, at ann's position when she
// asked, brings back ann's engine, which stopped a moment later.
for _ in 0..<500 where bob.engine.isPlaying || ann.engine.currentItemTime() != bob.engine.currentItemTime() {
    try await Task.sleep(for: .milliseconds(20))
}
print(String(format: "paused: ann at %.3f s, bob at %.3f s", ann.engine.currentItemTime()?.seconds ?? -1,
             bob.engine.currentItemTime()?.seconds ?? -1))
// snippet: intents
/// Asks the group for `rate`; what the session's limits refuse is thrown before anything is sent, in the
/// authority's words (what only the authority can refuse comes on `coordinator.refusals`).
func ask(_ coordinator: PlaybackCoordinator, rate: Double) async {
    do throws(Refusal) {
        try await coordinator.setRate(rate)
    } catch {
        print("refused: \(error.reason)")
    }
}
// snippet end

try await ann.coordinator.stepRate(up: true)   // the session's next rate step (1.25×), for everyone
await ask(ann.coordinator, rate: 8)            // beyond the session's limits (0.25–4×)
await server.shutdown()
