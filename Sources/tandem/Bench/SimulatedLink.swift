import Synchronization
import Tandem
import TandemTesting

/// A `LinkProfile` (delay, jitter, loss per direction) applied to a real connection, seeded so that runs repeat.
final class SimulatedLink: LinkImpairment {
    let profile: LinkProfile
    let retransmissionTimeout: Int64
    private let random: Mutex<SeededRandom>

    init(profile: LinkProfile, seed: UInt64, retransmissionTimeout: Int64 = Nanos.milliseconds(200)) {
        self.profile = profile
        self.retransmissionTimeout = retransmissionTimeout
        random = Mutex(SeededRandom(seed: seed))
    }

    func nextUpDelay() -> Int64? { random.withLock { profile.up.sample(using: &$0) } }
    func nextDownDelay() -> Int64? { random.withLock { profile.down.sample(using: &$0) } }

    /// The largest nominal one-way delay of a profile (base plus the jitter's width or mean), for command targets.
    static func nominalOneWay(_ profile: LinkProfile) -> Int64 {
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
