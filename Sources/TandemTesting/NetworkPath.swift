import Foundation
import TandemCore

/// A small, fast, seedable random generator (SplitMix64), so every simulation is reproducible.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// How one direction of a simulated network path delays and drops packets. All times in ns.
public struct DelayModel: Sendable, Hashable {
    public enum Jitter: Sendable, Hashable {
        case none
        /// Uniform in ±width around the base.
        case uniform(width: Int64)
        /// Exponentially distributed extra delay with this mean.
        case exponential(mean: Int64)
    }
    public var base: Int64
    public var jitter: Jitter
    /// Probability in 0...1 that a packet is lost.
    public var loss: Double

    public init(base: Int64, jitter: Jitter = .none, loss: Double = 0) {
        self.base = base
        self.jitter = jitter
        self.loss = loss
    }

    /// The delay for one packet, or nil when it is lost.
    public func sample(using rng: inout SeededRandom) -> Int64? {
        if loss > 0, rng.unit() < loss { return nil }
        switch jitter {
        case .none: return base
        case .uniform(let w): return max(0, base + Int64((rng.unit() * 2 - 1) * Double(w)))
        case .exponential(let mean): return base + Int64(-Double(mean) * log1p(-rng.unit()))
        }
    }
}

/// A simulated network path between a peer and the authority, both ways: peer → authority (`up`) and
/// authority → peer (`down`).
public struct NetworkPath: Sendable, Hashable {
    public var name: String
    public var up: DelayModel
    public var down: DelayModel
    public init(name: String, up: DelayModel, down: DelayModel) {
        self.name = name
        self.up = up
        self.down = down
    }

    public static let loopback = NetworkPath(name: "loopback", up: DelayModel(base: 50_000),
                                             down: DelayModel(base: 50_000))
    /// 0.5 ms ± 0.1 ms each way.
    public static let lan = NetworkPath(name: "lan", up: DelayModel(base: 500_000, jitter: .uniform(width: 100_000)),
                                        down: DelayModel(base: 500_000, jitter: .uniform(width: 100_000)))
    /// 50 ms + exponential tail (mean 5 ms) each way, with the given loss.
    public static func wan(loss: Double = 0.01) -> NetworkPath {
        NetworkPath(name: "wan", up: DelayModel(base: 50_000_000, jitter: .exponential(mean: 5_000_000), loss: loss),
                    down: DelayModel(base: 50_000_000, jitter: .exponential(mean: 5_000_000), loss: loss))
    }
    /// 50 ms + exponential tail (mean 1 ms) each way, 0.1 % loss: a wired connection to a distant home, as long as
    /// `wan` but steadier.
    public static let wired = NetworkPath(
        name: "wired", up: DelayModel(base: 50_000_000, jitter: .exponential(mean: 1_000_000), loss: 0.001),
        down: DelayModel(base: 50_000_000, jitter: .exponential(mean: 1_000_000), loss: 0.001))
    /// 50 ms ± 10 ms uniform each way, 2 % loss.
    public static let harsh = NetworkPath(
        name: "harsh", up: DelayModel(base: 50_000_000, jitter: .uniform(width: 10_000_000), loss: 0.02),
        down: DelayModel(base: 50_000_000, jitter: .uniform(width: 10_000_000), loss: 0.02))
    /// 30 ms up, 70 ms down: the 20 ms half-asymmetry no clock sync can observe.
    public static let asymmetric = NetworkPath(name: "asymmetric", up: DelayModel(base: 30_000_000),
                                               down: DelayModel(base: 70_000_000))

    public static func named(_ name: String) -> NetworkPath? {
        switch name {
        case "loopback": return .loopback
        case "lan": return .lan
        case "wan": return .wan()
        case "wired": return .wired
        case "harsh": return .harsh
        case "asymmetric": return .asymmetric
        default: return nil
        }
    }
    public static let allNames = ["loopback", "lan", "wan", "wired", "harsh", "asymmetric"]
}

