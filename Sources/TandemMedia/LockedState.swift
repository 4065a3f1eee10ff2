import Foundation

/// A value protected by a lock.
///
/// `@unchecked Sendable`: every access to `value` happens inside `withLock`, under `lock`.
final class LockedState<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
