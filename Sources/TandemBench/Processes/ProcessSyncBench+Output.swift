import Foundation
import TandemTesting

extension ProcessSyncBench {
    /// The figures of one or more runs, one row each; with a loopback and a lab run, how they compare.
    package static func summary(_ results: [Result]) -> String {
        func f(_ value: Double?) -> String {
            value.map { $0 < 10 ? String(format: "%.3f", $0) : String(format: "%.1f", $0) } ?? "–"
        }
        var lines: [String] = []
        var skew = TextTable(["network", "link", "peers (where, clock shift)", "frames", "skew p50", "p99", "max",
                              "steady p99", "steady max"], rightAligned: [3, 4, 5, 6, 7, 8])
        for result in results {
            skew.add([result.network.rawValue, result.link,
                      result.peers.map { "\($0.name) \($0.where_) +\($0.clockShiftSeconds)s" }.joined(separator: ", "),
                      "\(result.skew.count)", f(result.skew.p50), f(result.skew.p99), f(result.skew.max),
                      f(result.steadySkew.p99), f(result.steadySkew.max)])
        }
        lines.append("render skew between processes (ms, ground truth: every frame all peers rendered):")
        lines.append(skew.rendered)
        var offsets = TextTable(["network", "peer", "against host: median", "p1", "p99", "clock error: median", "p1",
                                 "p99", "clock stamps", "sink threads"], rightAligned: [2, 3, 4, 5, 6, 7])
        for result in results {
            for peer in result.peers {
                offsets.add([result.network.rawValue, peer.name, f(peer.steadyOffsetMs?.median),
                             f(peer.steadyOffsetMs?.p1), f(peer.steadyOffsetMs?.p99), f(peer.clockErrorMs?.median),
                             f(peer.clockErrorMs?.p1), f(peer.clockErrorMs?.p99), peer.clockStamps ?? "–",
                             peer.sinkThreads ?? "–"])
            }
        }
        lines.append("")
        lines.append("each joiner's render time less the host's in steady play, and its clock estimate less the truth "
                     + "once a second (ms):")
        lines.append(offsets.rendered)
        let direct = results.flatMap { result in
            result.peers.compactMap { peer in peer.directPaths.map { "\(result.network.rawValue) \(peer.name) → \($0)" } }
        }
        lines.append("direct paths between peers (one-way, measured): "
                     + (direct.isEmpty ? "none" : direct.joined(separator: "; ")))
        var commands = TextTable(["network", "command", "count", "p50 ms", "max ms", "missed", "target ms", "within"],
                                 rightAligned: [2, 3, 4, 5, 6, 7])
        for result in results {
            for command in result.commands {
                commands.add([result.network.rawValue, command.command, "\(command.stats.count)", f(command.stats.p50),
                              f(command.stats.max), "\(command.missed)", f(command.target),
                              "\(command.withinTarget)/\(command.stats.count + command.missed)"])
            }
        }
        lines.append("")
        let commander = results.first?.commandsFrom.map { "\($0)'s, a joiner's" } ?? "the host's"
        lines.append("request (a line on \(commander) stdin) to every peer rendering it:")
        lines.append(commands.rendered)
        if let loopback = results.first(where: { $0.network == .loopback }),
           let lab = results.first(where: { $0.network == .netlab }) {
            lines.append("")
            lines.append(comparison(loopback: loopback, lab: lab))
        }
        return lines.joined(separator: "\n")
    }

    /// The lab's skew against loopback's on the same profile (target: p99 within 1.5×).
    package static func comparison(loopback: Result, lab: Result) -> String {
        guard let base = loopback.skew.p99, let measured = lab.skew.p99, base > 0 else {
            return "lab against loopback: no figures to compare"
        }
        let ratio = measured / base
        let verdict = ratio <= 1.5 ? "met" : "not met"
        return String(format: "lab against loopback, skew p99: %.3f ms against %.3f ms = %.2f× (target ≤ 1.5×: %@)",
                      measured, base, ratio, verdict)
    }
}
