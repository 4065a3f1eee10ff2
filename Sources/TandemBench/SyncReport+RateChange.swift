import Foundation
import Tandem
import TandemTesting

/// What each rate change of the schedule cost, from ground truth: how long from the request until every peer rendered
/// at the new rate, the longest any peer's picture held still after it (a flush freezes it for a prepare round), the
/// frames that went unshown meanwhile, and the render skew across peers over the second after the change.
package struct RateChangeFigures: Codable, Sendable {
    package var label: String
    /// Whether the players were allowed to change rate in place (`--rate-fallback` forbids it).
    package var inPlace: Bool
    /// Request → the last peer rendering at the new rate (ms); nil when one never did within 5 s.
    package var toNewRate: Double?
    /// The longest any peer held one frame within 2 s of the request (ms).
    package var longestHold: Double
    /// The most frames one peer left unshown within 2 s of the request: each hold counted as the frames due meanwhile
    /// (at the old rate until the peer renders at the new one), less the one held.
    package var framesLost: Int
    /// Render skew of the frames shown within 1 s after the last peer reached the new rate (ms).
    package var skewAfter: SyncReport.Stats

    /// One entry per rate command of the run.
    package static func make(_ outcome: SyncBench.Outcome, frameInterval: Int64) -> [RateChangeFigures] {
        var rate = 1.0
        var result: [RateChangeFigures] = []
        for mark in outcome.marks {
            guard mark.command == "rate", case .rate(let next)? = mark.effect else { continue }
            defer { rate = next }
            let window = TimeSpan.seconds(2).nanoseconds
            let present = outcome.peers.indices.filter { index in
                let peer = outcome.peers[index]
                guard peer.joinStarted <= mark.time - TimeSpan.seconds(3).nanoseconds else { return false }
                return peer.left.map { $0 > mark.time + window } ?? true
            }
            guard !present.isEmpty else { continue }
            let reached = present.map { outcome.truth.effectTime(of: $0, after: mark.time, .rate(next), frameInterval: frameInterval) }
            let last = reached.contains { $0 == nil || $0! - mark.time > TimeSpan.seconds(5).nanoseconds }
                ? nil : reached.compactMap { $0 }.max()
            var longest: Int64 = 0
            var lost = 0
            for (peer, arrival) in zip(present, reached) {
                let frames = outcome.truth.frames[peer].filter { $0.time >= mark.time - frameInterval && $0.time <= mark.time + window }
                var peerLost = 0
                for (a, b) in zip(frames, frames.dropFirst()) {
                    let hold = b.time - a.time
                    longest = max(longest, hold)
                    // Until the peer shows the new rate, frames are due at the old one.
                    let due = Double(frameInterval) / (arrival.map { b.time > $0 } == true ? next : rate)
                    peerLost += max(0, Int((Double(hold) / due).rounded()) - 1)
                }
                lost = max(lost, peerLost)
            }
            let settled = last ?? mark.time
            let skews = outcome.showings.filter { $0.median >= settled && $0.median < settled + TimeSpan.seconds(1).nanoseconds }
                .map(\.spread)
            result.append(RateChangeFigures(label: mark.label, inPlace: outcome.configuration.rateInPlace,
                                            toNewRate: last.map { Double($0 - mark.time) / 1e6 },
                                            longestHold: Double(longest) / 1e6, framesLost: lost,
                                            skewAfter: SyncReport.Stats(nanoseconds: skews)))
        }
        return result
    }

    /// The table of a run's rate changes, the worst of each kind.
    package static func rendered(_ figures: [RateChangeFigures]) -> String {
        guard let first = figures.first else { return "rate changes: none" }
        func f(_ v: Double?) -> String { v.map { $0 < 10 ? String(format: "%.3f", $0) : String(format: "%.1f", $0) } ?? "–" }
        var table = TextTable(["rate change (" + (first.inPlace ? "in place" : "stop and start") + ")", "n",
                               "→ new rate ms (max)", "longest hold ms", "frames lost", "skew after p50", "skew after max"])
        let labels = figures.map(\.label).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        for label in labels {
            let group = figures.filter { $0.label == label }
            let toNew = group.map(\.toNewRate)
            table.add([label, "\(group.count)", toNew.contains { $0 == nil } ? "never" : f(toNew.compactMap { $0 }.max()),
                       f(group.map(\.longestHold).max()), "\(group.map(\.framesLost).max() ?? 0)",
                       f(group.compactMap(\.skewAfter.p50).max()), f(group.compactMap(\.skewAfter.max).max())])
        }
        return table.rendered
    }
}
