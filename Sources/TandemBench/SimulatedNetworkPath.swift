import Synchronization
import Tandem
import TandemPeer
import TandemTesting

/// A `NetworkPath` (delay, jitter, loss per direction) applied to a real connection, seeded so that runs repeat.
package final class SimulatedNetworkPath: NetworkImpairment {
    package let profile: NetworkPath
    package let retransmissionTimeout: Int64
    private let random: Mutex<SeededRandom>

    package init(profile: NetworkPath, seed: UInt64, retransmissionTimeout: Int64 = TimeSpan.milliseconds(200).nanoseconds) {
        self.profile = profile
        self.retransmissionTimeout = retransmissionTimeout
        random = Mutex(SeededRandom(seed: seed))
    }

    package func nextUpDelay() -> Int64? { random.withLock { profile.up.sample(using: &$0) } }
    package func nextDownDelay() -> Int64? { random.withLock { profile.down.sample(using: &$0) } }

    /// The largest nominal one-way delay of a profile (base plus the jitter's width or mean), for command targets.
    package static func nominalOneWay(_ profile: NetworkPath) -> Int64 {
        func worst(_ model: DelayModel) -> Int64 {
            switch model.jitter {
            case .none: return model.base
            case .uniform(let width): return model.base + width
            case .exponential(let mean): return model.base + mean
            }
        }
        return max(worst(profile.up), worst(profile.down))
    }
}
