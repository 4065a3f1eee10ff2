import Foundation
import Synchronization

/// One reader of a blocking input (stdin) for the whole process, on a thread of its own (never on Swift's
/// cooperative pool), handing what it reads to the latest `stream()`. A console that ends and another that starts
/// in the same process (`tandem join syncplay://…` finding the room's session again) share the input: no old reader
/// is left blocked to swallow the next line meant for the new one. What arrives while no stream is open waits for
/// the next (up to `maxWaiting` elements, the oldest dropped).
package final class SharedInput<Element: Sendable>: Sendable {
    private struct State {
        var current: (id: Int, continuation: AsyncStream<Element>.Continuation)?
        var nextID = 0
        var started = false
        var ended = false
        var waiting: [Element] = []
    }

    package static var maxWaiting: Int { 64 }
    private let state = Mutex(State())
    private let read: @Sendable () -> Element?

    /// `read` blocks for the next element, or returns nil at the end of the input.
    package init(read: @escaping @Sendable () -> Element?) { self.read = read }

    /// A stream of what is read from now on (and what waited for it); the stream opened before it ends.
    /// Continuations are finished and yielded to outside the lock (finishing one runs its termination handler, which
    /// takes the lock).
    package func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let (id, previous, waited, ended, startReading) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            let previous = state.current?.continuation
            let waited = state.waiting
            state.waiting = []
            state.current = state.ended ? nil : (id, continuation)
            defer { state.started = true }
            return (id, previous, waited, state.ended, !state.started)
        }
        previous?.finish()
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { if $0.current?.id == id { $0.current = nil } }
        }
        for element in waited { continuation.yield(element) }
        if ended { continuation.finish() }
        if startReading { Thread { self.readAll() }.start() }
        return stream
    }

    private func readAll() {
        while let element = read() {
            let current = state.withLock { state in
                if state.current == nil {
                    state.waiting.append(element)
                    if state.waiting.count > Self.maxWaiting { state.waiting.removeFirst() }
                }
                return state.current?.continuation
            }
            current?.yield(element)
        }
        state.withLock { $0.ended = true; return $0.current?.continuation }?.finish()
    }
}
