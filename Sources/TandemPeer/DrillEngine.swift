import Foundation
import Synchronization
import Tandem

/// A real `GStreamerPlayer` with faults that a drill (`tandem demo`) or a benchmark injects on purpose: a slow
/// first load, and stalls during which rendering really stops. Everything else passes straight through.
///
/// It stands in for what a network source does on its own (buffering), so the coordination around it — the group
/// waiting, resuming together — is exercised on local files.
package final class DrillEngine: PlaybackEngine {
    package let player: GStreamerPlayer
    package let events: AsyncStream<PlaybackEngineEvent>
    private let sink: AsyncStream<PlaybackEngineEvent>.Continuation
    private let loadDelay: Mutex<Duration>
    private let forwarding: Task<Void, Never>

    /// - Parameter loadDelay: extra time the next load takes (a slow disk or network).
    package init(player: GStreamerPlayer, loadDelay: Duration = .zero) {
        self.player = player
        self.loadDelay = Mutex(loadDelay)
        let (stream, continuation) = AsyncStream<PlaybackEngineEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        events = stream
        sink = continuation
        let upstream = player.events
        forwarding = Task {
            for await event in upstream { continuation.yield(event) }
            continuation.finish()
        }
    }

    deinit { forwarding.cancel() }

    package func load(_ location: String) async throws -> MediaInfo {
        let delay = loadDelay.withLock { delay -> Duration in
            defer { delay = .zero }
            return delay
        }
        if delay > .zero {
            sink.yield(.loading(progress: 0))
            try? await Task.sleep(for: delay)
        }
        return try await player.load(location)
    }

    package func prepare(at itemTime: ItemTime, rate: Double) async throws {
        try await player.prepare(at: itemTime, rate: rate)
    }

    package func play(from itemTime: ItemTime, atSessionTime sessionTime: SessionInstant, rate: Double) async throws {
        try await player.play(from: itemTime, atSessionTime: sessionTime, rate: rate)
    }

    @discardableResult
    package func pause() async throws -> ItemTime { try await player.pause() }
    package func currentItemTime() -> ItemTime? { player.currentItemTime() }
    package func setClockMapping(_ mapping: ClockMapping) { player.setClockMapping(mapping) }
    package var prerollEstimate: TimeSpan { player.prerollEstimate }
    package func close() async { await player.close() }

    /// Stalls now, as a starved network source would: rendering stops and `.stalled` is reported; after
    /// `duration`, `.recovered`.
    package func stall(for duration: Duration) async {
        sink.yield(.stalled)
        _ = try? await player.pause()
        try? await Task.sleep(for: duration)
        sink.yield(.recovered)
    }
}
