extension AsyncStream {
    /// A stream of `transform`'s non-nil results over `base`, pulled on demand by whoever iterates it: no task of
    /// its own, so nothing runs (or outlives its consumer) while nobody listens. Ends when `base` ends or throws.
    package static func pulling<Base: AsyncSequence & Sendable>(
        _ base: Base, _ transform: @escaping @Sendable (Base.Element) async -> Element?
    ) -> AsyncStream<Element> where Base.Element: Sendable {
        let source = PulledIterator(base.makeAsyncIterator())
        return AsyncStream {
            while let element = try? await source.next() {
                if let value = await transform(element) { return value }
            }
            return nil
        }
    }
}

/// The iterator an `AsyncStream.pulling` stream reads.
private final class PulledIterator<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    // Safe: only the unfolding closure of one AsyncStream touches `base`, and an AsyncStream is iterated by one task
    // at a time, which awaits each `next()` before the following one.
    private var base: Base

    init(_ base: Base) { self.base = base }

    func next() async throws -> Base.Element? { try await base.next() }
}
