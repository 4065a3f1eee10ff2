import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import Logging
import TandemCore

/// Serves a pipeline's bus on a thread of its own and turns messages into `PlaybackEngineEvent`s.
///
/// `@unchecked Sendable`: the bus and pipeline pointers are set once and used only through thread-safe
/// GStreamer API (gst_bus_timed_pop); the mutable context lives in a `Locked`; the continuation is Sendable.
final class BusPump: @unchecked Sendable {
    private struct Context {
        var location = "the item"
        var isFile = true
        var loading = false
        var stalled = false
        /// The buffer has been full (100 %) since the item loaded: a lower level from then on is a stall. Until
        /// then the buffer is still filling for the first time, which the load already judged (a streamed item is
        /// ready once it fetches faster than it plays: `GStreamerPlayer.waitUntilPlayableThrough`).
        var filled = false
        /// The last buffering level reported (nil: none since the load began).
        var level: Int?
        var stopped = false
        var started = false
    }

    /// A buffering level (%) at which a buffer that is still filling for the first time counts as running dry.
    static let nearlyEmpty = 10

    private let bus: UnsafeMutablePointer<GstBus>
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let continuation: AsyncStream<PlaybackEngineEvent>.Continuation
    private let context = Locked(Context())
    private let exited = DispatchSemaphore(value: 0)
    private let logger: Logger

    init(pipeline: UnsafeMutablePointer<GstElement>, continuation: AsyncStream<PlaybackEngineEvent>.Continuation,
         logger: Logger) {
        self.pipeline = pipeline
        self.bus = gst_element_get_bus(pipeline)
        self.continuation = continuation
        self.logger = logger
    }

    deinit { gst_object_unref(bus) }

    /// Starts the thread. It keeps this object alive until `stop()`.
    func start() {
        context.withLock { $0.started = true }
        let thread = Thread { [self] in run() }
        thread.name = "tandem-gst-bus"
        thread.stackSize = 256 * 1024
        thread.start()
    }

    /// Stops the thread (waits up to a second for it) and finishes the event stream. Idempotent.
    func stop() {
        let wasRunning = context.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.started && !state.stopped
        }
        guard wasRunning else { return }
        _ = exited.wait(timeout: .now() + 1)
        continuation.finish()
    }

    func emit(_ event: PlaybackEngineEvent) { continuation.yield(event) }

    /// Where errors come from (for messages) and whether a load is in progress (its errors are thrown, not sent).
    func setContext(location: String, isFile: Bool, loading: Bool) {
        context.withLock {
            $0.location = location
            $0.isFile = isFile
            $0.loading = loading
            if loading {
                $0.stalled = false
                $0.filled = false
                $0.level = nil
            } else if let level = $0.level, level >= 100 {
                // Full when the load ended: no later message may say so again before the level drops.
                $0.filled = true
            }
        }
    }

    /// Whether the engine is stalled (a buffer that had been full ran low).
    var isStalled: Bool { context.withLock { $0.stalled } }

    /// Begins a stall that the player saw before the download buffer said so (`StallWatch`: the sinks stopped
    /// rendering while the line runs on): reports `stalled`. False when already stalled or loading.
    func beginStall() -> Bool {
        let began = context.withLock { state in
            guard !state.stalled, !state.loading else { return false }
            state.stalled = true
            return true
        }
        if began { emit(.stalled) }
        return began
    }

    /// Ends a stall that the player judged over before the buffer filled (`StallWatch`): reports `recovered`, and
    /// treats the buffer as filling for the first time again. False when there was no stall.
    func endStall() -> Bool {
        let ended = context.withLock { state in
            guard state.stalled, !state.loading else { return false }
            state.stalled = false
            state.filled = false
            return true
        }
        if ended { emit(.recovered) }
        return ended
    }

    var location: (String, Bool) { context.withLock { ($0.location, $0.isFile) } }

    private func run() {
        defer { exited.signal() }
        while !context.withLock({ $0.stopped }) {
            guard let message = gst_bus_timed_pop(bus, 50 * 1_000_000) else { continue }
            var info = tdm_gst_message_info()
            tdm_gst_message_parse(message, pipeline, &info)
            gst_message_unref(message)
            handle(GStreamerMessage(consuming: &info))
        }
    }

    private func handle(_ message: GStreamerMessage) {
        switch Int(message.kind) {
        case Int(TDM_GST_MSG_EOS):
            emit(.endOfStream)
        case Int(TDM_GST_MSG_ERROR):
            let (location, isFile, loading) = context.withLock { ($0.location, $0.isFile, $0.loading) }
            logger.debug("bus error", metadata: ["text": "\(message.text ?? "")", "debug": "\(message.debug ?? "")"])
            if !loading { emit(.error(message.playbackError(location: location, isFile: isFile))) }
        case Int(TDM_GST_MSG_WARNING):
            emit(.warning(message.text ?? "GStreamer warning"))
        case Int(TDM_GST_MSG_BUFFERING):
            let percent = message.percent
            emit(.buffering(percent: percent))
            let change: PlaybackEngineEvent? = context.withLock { state in
                state.level = percent
                if percent >= 100, !state.loading { state.filled = true }
                // A buffer that never filled since the load is running dry all the same when it is nearly empty
                // (the link got slower than the media): that is a stall too.
                if percent < 100, state.filled || percent <= Self.nearlyEmpty, !state.stalled, !state.loading {
                    state.stalled = true
                    return .stalled
                }
                if percent >= 100, state.stalled {
                    state.stalled = false
                    return .recovered
                }
                return nil
            }
            if let change { emit(change) }
        default:
            break
        }
    }
}
