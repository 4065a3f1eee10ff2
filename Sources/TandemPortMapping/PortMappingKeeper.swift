import Synchronization
import TandemCore

/// Keeps a router's port mapping for as long as a session is hosted: renews it on `PortMappingLease`'s schedule,
/// says when it is lost and when it holds again, and removes it on `close()`.
public final class PortMappingKeeper: Sendable {
    public let mapping: RouterPortMapping
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let closed = Atomic<Bool>(false)

    /// Starts renewing `mapping`, granted `granted` just now; `changed` hears `true` when it holds again after being
    /// lost, `false` when it is lost.
    public init(_ mapping: RouterPortMapping, granted: Duration, clock: any MonotonicClock = SystemMonotonicClock(),
                changed: @escaping @Sendable (Bool) -> Void = { _ in }) {
        self.mapping = mapping
        let started = Task {
            var lease = PortMappingLease(granted: granted, at: clock.now)
            var held = true
            while !Task.isCancelled {
                let wait = Duration.nanoseconds((lease.nextRenewal - clock.now).nanoseconds)
                if wait > .zero { try? await Task.sleep(for: wait) }
                guard !Task.isCancelled else { return }
                do {
                    let granted = try await mapping.renew()
                    lease.renewed(granted: granted, at: clock.now)
                } catch {
                    lease.renewalFailed(at: clock.now)
                }
                let holds = lease.holds(at: clock.now)
                if holds != held, !Task.isCancelled {
                    held = holds
                    changed(holds)
                }
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops renewing and removes the mapping from the router (once).
    public func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
        await mapping.remove()
    }
}
