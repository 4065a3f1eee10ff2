import Foundation
import Tandem
import TandemTesting

/// The simulated link of a peer that runs as a process of its own (`tandem bench sync --processes`): there is no
/// netem, so the delay is put in the joiner's own connection, as the in-process benchmark does for its peers.
///
/// `TANDEM_BENCH_LINK=PROFILE:SEED` in a `join`'s environment (nothing else reads it) puts the link profile
/// `PROFILE` (`NetworkPath.allNames`), seeded with `SEED`, between the client and the server (its TCP connection and
/// its datagrams). `PROFILE:SEED:tcp-timelines` also turns off the datagram copies of timelines, to compare.
package enum BenchLink {
    package static let variable = "TANDEM_BENCH_LINK"
    package static let tcpTimelines = "tcp-timelines"

    /// `options` with the link the environment names, if any; an unknown profile is an error that says which exist.
    package static func applying(to options: TandemClient.Options,
                                 environment: [String: String] = ProcessInfo.processInfo.environment) throws(BenchError)
        -> TandemClient.Options {
        guard let value = environment[variable], !value.isEmpty else { return options }
        let parts = value.split(separator: ":", maxSplits: 2).map(String.init)
        guard let profile = NetworkPath.named(parts[0]) else {
            throw BenchError("\(variable)=\(value): no such link profile; use one of \(NetworkPath.allNames.joined(separator: ", "))")
        }
        let seed = parts.count > 1 ? UInt64(parts[1]) : 1
        guard let seed else { throw BenchError("\(variable)=\(value): the seed after ':' must be a whole number") }
        var options = options
        if parts[0] != "loopback" { options.impair(with: SimulatedNetworkPath(profile: profile, seed: seed)) }
        if parts.count > 2 {
            guard parts[2] == tcpTimelines else {
                throw BenchError("\(variable)=\(value): the only word after the seed is \(tcpTimelines)")
            }
            options.timelinesOverDatagrams = false
        }
        return options
    }
}
