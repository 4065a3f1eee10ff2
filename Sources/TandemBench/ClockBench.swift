import Tandem
import TandemTesting

/// `tandem bench clock`: the clock-sync estimator in seeded simulations over each link profile.
package enum ClockBench {
    /// Runs `runs` seeds of each profile for `duration` simulated seconds; the table of figures.
    /// The report, ending with the line that reproduces it.
    package static func run(duration: Double, seed: UInt64, runs: Int) -> String {
        let profiles: [NetworkPath] = [.lan, .wan(loss: 0.02), .harsh, .asymmetric]
        return ClockSyncSimulation.benchmark(profiles: profiles, duration: duration, seed: seed, runs: runs)
            + "\nreproduce: tandem bench clock --duration \(String(format: "%g", duration)) --runs \(runs) --seed \(seed)"
    }
}

/// The simulated links benchmarks run over, by name (`--link`).
package enum NetworkPaths {
    package static var names: [String] { NetworkPath.allNames }
    package static func isKnown(_ name: String) -> Bool { NetworkPath.named(name) != nil }
}
