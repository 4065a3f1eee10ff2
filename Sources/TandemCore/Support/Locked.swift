import Synchronization

/// A value behind a `Mutex` that tasks and escaping closures can share (a `Mutex` itself cannot be captured by
/// them). Where a class holds the state, a `Mutex` property is enough; this is the one wrapper for the rest.
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    package init(_ value: Value) { mutex = Mutex(value) }
    package func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
    package var value: Value { mutex.withLock { $0 } }
}
