import Synchronization

/// A value behind a lock that tasks can share (a `Mutex` cannot be captured by escaping closures).
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    package init(_ value: Value) { mutex = Mutex(value) }
    package func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
    package var value: Value { mutex.withLock { $0 } }
}
