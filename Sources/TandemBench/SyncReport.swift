import Foundation
import Tandem
import TandemPeer
import TandemTesting

/// The figures of one `bench sync` run, all from ground truth (render probes on the true clock).
package struct SyncReport: Codable, Sendable {
    /// Milliseconds.
    package struct Stats: Codable, Sendable {
        package var count: Int
        package var p50: Double?
        package var p99: Double?
        package var max: Double?

        package init(nanoseconds values: [Int64]) {
            let d = Distribution(values)
            count = d.count
            p50 = d.count > 0 ? d.p50 / 1e6 : nil
            p99 = d.count > 0 ? d.p99 / 1e6 : nil
            max = d.count > 0 ? d.max / 1e6 : nil
        }
    }

    package struct CommandLatency: Codable, Sendable {
        package var command: String
        package var stats: Stats
        /// Requests whose effect did not reach every peer (within 10 s).
        package var missed: Int
        /// The target: largest one-way delay + 60 ms (ms).
        package var target: Double
        package var withinTarget: Int
    }

    /// One of the frames the peers rendered furthest apart, with what happened just before it.
    package struct Outlier: Codable, Sendable {
        /// Seconds into the run.
        package var at: Double
        /// The item time (s).
        package var item: Double
        /// The spread of its render times (ms).
        package var skew: Double
        /// The peers that rendered it first and last.
        package var earliest: String
        package var latest: String
        /// The last schedule event before it and how long before (s).
        package var after: String?
        package var secondsAfter: Double?
    }

    package struct Minute: Codable, Sendable {
        package var minute: Int
        package var skew: Stats
    }

    package var policy: String
    package var link: String
    package var peers: Int
    package var durationSeconds: Double
    package var seed: UInt64
    package var machine: String
    package var date: String
    package var command: String
    /// Render skew (spread of one frame's render times across peers), overall while playing and per phase.
    package var skew: Stats
    package var skewByPhase: [String: Stats]
    /// Least-squares trend of steady-play skew over the run (ms per minute), and p99 per minute.
    package var skewTrendPerMinute: Double?
    package var skewByMinute: [Minute]
    /// The frames rendered furthest apart (largest skew first), to tell where outliers come from.
    package var largestSkews: [Outlier]
    /// Each peer's median render offset from the group's median during steady play (ms): the part of the skew
    /// that is systematic (clock sync, pipeline latency) rather than per-frame scheduling jitter.
    package var medianOffsetByPeer: [String: Double]
    package var commands: [CommandLatency]
    /// Seconds from a late joiner starting to join to rendering within 1 ms of the group (nil: never).
    package var lateJoinToInSync: [Double?]
    /// Session-time estimate error against truth (ms): |error| stats and the mean signed error.
    package var clockError: Stats?
    package var clockErrorMean: Double?
    /// The same for the clock the sinks wait on (Tandem only): it follows the estimate by slewing.
    package var engineClockError: Stats?
    /// Each peer's mean session-time estimate error over the first and the last minute (ms): drift shows here.
    package var clockErrorByPeer: [String: [Double]]
    /// CPU per peer (percent of one core): everything, and everything but media (decoding, rendering).
    package var cpuPercentPerPeer: Double
    package var coordinationCPUPercentPerPeer: Double
    package var peakMemoryMBPerPeer: Double?
    package var corrections: [String: Int]
    package var probeRecordsDropped: UInt64
    /// What each rate change cost (absent in reports from before it was measured).
    package var rateChanges: [RateChangeFigures]?

    /// Builds the report; `series` gets each peer's offset from the group over time (for the plot).
    package static func make(_ outcome: SyncBench.Outcome, command: String) -> SyncReport {
        let c = outcome.configuration
        let frameInterval = TimeSpan.milliseconds(1000.0 / 30).nanoseconds
        let marks = outcome.marks
        func phase(of showing: GroundTruth.Showing) -> SyncBench.Phase {
            var current = SyncBench.Phase.steady
            var rateOn = false
            for mark in marks where mark.time <= showing.median {
                if mark.label.hasPrefix("rate") { rateOn = mark.effect == .rate(1.5) }
            }
            if rateOn { current = .rate }
            for mark in marks.reversed() where mark.time <= showing.median {
                guard let p = mark.phase, p != .rate, showing.median - mark.time < mark.phaseLength else { continue }
                if p == .lateJoiner {
                    if showing.times[mark.peer] != nil { return .lateJoiner }
                    continue
                }
                return p
            }
            return current
        }
        var byPhase: [SyncBench.Phase: [Int64]] = [:]
        var steadyPoints: [(x: Double, y: Double)] = []
        var minutes: [Int: [Int64]] = [:]
        var steadyOffsets: [Int: [Double]] = [:]
        for showing in outcome.showings {
            let p = phase(of: showing)
            byPhase[p, default: []].append(showing.spread)
            if p == .steady {
                // The peers that stay for the whole run (late joiners come and go).
                for peer in showing.times.keys where showing.times.count >= 3 && !outcome.lateJoiners.contains(peer) {
                    steadyOffsets[peer, default: []].append(Double(showing.offset(of: peer)!) / 1e6)
                }
                let minutesIn = TimeSpan(nanoseconds: showing.median - outcome.started).seconds / 60
                steadyPoints.append((minutesIn, Double(showing.spread) / 1e6))
                minutes[Int(minutesIn), default: []].append(showing.spread)
            }
        }

        let largest = outcome.showings.sorted { $0.spread > $1.spread }.prefix(5).map { showing -> Outlier in
            let first = showing.times.min { $0.value < $1.value }!.key
            let last = showing.times.max { $0.value < $1.value }!.key
            let before = marks.last { $0.time <= showing.median }
            return Outlier(at: TimeSpan(nanoseconds: showing.median - outcome.started).seconds, item: TimeSpan(nanoseconds: showing.item).seconds,
                           skew: Double(showing.spread) / 1e6, earliest: outcome.peers[first].name,
                           latest: outcome.peers[last].name, after: before?.label,
                           secondsAfter: before.map { TimeSpan(nanoseconds: showing.median - $0.time).seconds })
        }

        // Command latency: request → the last peer present rendering the effect.
        var latencies: [String: (values: [Int64], missed: Int, within: Int)] = [:]
        let target = outcome.maxOneWay + TimeSpan.milliseconds(60).nanoseconds
        for mark in marks {
            guard let command = mark.command, let effect = mark.effect else { continue }
            // Everyone in the session then, but a late joiner still catching up or about to leave.
            let present = outcome.peers.indices.filter { index in
                let peer = outcome.peers[index]
                let settled = outcome.lateJoiners.contains(index) ? peer.joinStarted < mark.time - TimeSpan.seconds(3).nanoseconds
                    : peer.joinStarted <= mark.time
                return settled && (peer.left.map { $0 > mark.time + TimeSpan.seconds(3).nanoseconds } ?? true)
            }
            let times = present.map { outcome.truth.effectTime(of: $0, after: mark.time, effect, frameInterval: frameInterval) }
            var entry = latencies[command] ?? ([], 0, 0)
            if times.contains(where: { $0 == nil || $0! - mark.time > TimeSpan.seconds(10).nanoseconds }) || times.isEmpty {
                entry.missed += 1
            } else {
                let latency = times.compactMap { $0 }.max()! - mark.time
                entry.values.append(latency)
                if latency <= target { entry.within += 1 }
            }
            latencies[command] = entry
        }

        // Late joiners: first of 10 frames in a row within 1 ms of the group's median.
        var lateJoins: [Double?] = []
        for joiner in outcome.lateJoiners {
            var run = 0
            var found: Double?
            for showing in outcome.showings where showing.times.count >= 2 {
                guard let time = showing.times[joiner] else { continue }
                let others = showing.times.filter { $0.key != joiner }.map(\.value).sorted()
                let reference = others[others.count / 2]
                if abs(time - reference) <= TimeSpan.milliseconds(1).nanoseconds {
                    run += 1
                    if run == 10 {
                        found = TimeSpan(nanoseconds: time - 9 * frameInterval - outcome.peers[joiner].joinStarted).seconds
                        break
                    }
                } else {
                    run = 0
                }
            }
            lateJoins.append(found)
        }

        let elapsed = Double(outcome.ended - outcome.started)
        let peerCount = Double(max(1, c.peers))
        let errors = outcome.clockErrors.map(\.error)
        let engineErrors = outcome.clockErrors.compactMap(\.engineError)
        let formatter = ISO8601DateFormatter()
        return SyncReport(
            policy: c.policy.rawValue, link: c.link, peers: c.peers, durationSeconds: TimeSpan(nanoseconds: outcome.ended - outcome.started).seconds,
            seed: c.seed, machine: machineDescription(), date: formatter.string(from: Date()), command: command,
            skew: Stats(nanoseconds: outcome.showings.map(\.spread)),
            skewByPhase: Dictionary(uniqueKeysWithValues: byPhase.map { ($0.key.rawValue, Stats(nanoseconds: $0.value)) }),
            skewTrendPerMinute: linearSlope(steadyPoints),
            skewByMinute: minutes.keys.sorted().map { Minute(minute: $0, skew: Stats(nanoseconds: minutes[$0]!)) },
            largestSkews: Array(largest),
            medianOffsetByPeer: Dictionary(uniqueKeysWithValues: steadyOffsets.compactMap { peer, offsets in
                offsets.count >= 30 ? (outcome.peers[peer].name, Distribution.percentile(50, of: offsets, resolution: 0.001) ?? .nan) : nil
            }),
            commands: latencies.keys.sorted().map { key in
                let entry = latencies[key]!
                return CommandLatency(command: key, stats: Stats(nanoseconds: entry.values), missed: entry.missed,
                                      target: Double(target) / 1e6, withinTarget: entry.within)
            },
            lateJoinToInSync: lateJoins,
            clockError: errors.isEmpty ? nil : Stats(nanoseconds: errors.map { abs($0) }),
            clockErrorMean: errors.isEmpty ? nil : Double(errors.reduce(0, +)) / Double(errors.count) / 1e6,
            engineClockError: engineErrors.isEmpty ? nil : Stats(nanoseconds: engineErrors.map { abs($0) }),
            clockErrorByPeer: Dictionary(grouping: outcome.clockErrors, by: \.peer).compactMapValues { samples -> [Double]? in
                guard let first = samples.first?.time, let last = samples.last?.time, last - first > TimeSpan.seconds(90).nanoseconds else { return nil }
                func mean(_ part: [Int64]) -> Double { Double(part.reduce(0, +)) / Double(max(1, part.count)) / 1e6 }
                let early = samples.filter { $0.time < first + TimeSpan.seconds(60).nanoseconds }
                let late = samples.filter { $0.time > last - TimeSpan.seconds(60).nanoseconds }
                var values = [mean(early.map(\.error)), mean(late.map(\.error))]
                if early.contains(where: { $0.engineError != nil }) {
                    values += [mean(early.compactMap(\.engineError)), mean(late.compactMap(\.engineError))]
                }
                return values
            }.reduce(into: [:]) { $0[outcome.peers[$1.key].name] = $1.value },
            cpuPercentPerPeer: Double(outcome.cpu.media + outcome.cpu.other) / elapsed / peerCount * 100,
            coordinationCPUPercentPerPeer: Double(outcome.cpu.other) / elapsed / peerCount * 100,
            peakMemoryMBPerPeer: outcome.peakMemory.map { Double($0) / 1_048_576 / peerCount },
            corrections: outcome.corrections,
            probeRecordsDropped: outcome.truth.dropped,
            rateChanges: RateChangeFigures.make(outcome, frameInterval: frameInterval))
    }

    // MARK: Text

    package var rendered: String {
        func f(_ v: Double?) -> String { v.map { $0 < 10 ? String(format: "%.3f", $0) : String(format: "%.1f", $0) } ?? "–" }
        var lines: [String] = []
        let policyLabel = SyncPolicy(rawValue: policy)?.label ?? policy
        lines.append("bench sync — \(policyLabel), \(peers) peers, link \(link), \(String(format: "%.0f", durationSeconds)) s, seed \(seed)")
        lines.append("machine: \(machine)")
        lines.append("")
        var table = TextTable(["render skew (ms)", "frames", "p50", "p99", "max"])
        table.add(["all, while playing", "\(skew.count)", f(skew.p50), f(skew.p99), f(skew.max)])
        for phase in SyncBench.Phase.allCases {
            guard let s = skewByPhase[phase.rawValue] else { continue }
            table.add(["  \(phase.rawValue)", "\(s.count)", f(s.p50), f(s.p99), f(s.max)])
        }
        lines.append(table.rendered)
        lines.append("")
        let trend = skewTrendPerMinute.map { String(format: "%+.4f ms per minute", $0) } ?? "–"
        let byMinute = skewByMinute.map { "m\($0.minute) \(f($0.skew.p99))" }.joined(separator: " · ")
        lines.append("drift: steady-play skew trend \(trend); p99 by minute: \(byMinute)")
        if let low = medianOffsetByPeer.values.min(), let high = medianOffsetByPeer.values.max() {
            let each = medianOffsetByPeer.sorted { $0.key < $1.key }.map { String(format: "%@ %+.3f", $0.key, $0.value) }
            lines.append(String(format: "systematic: per-peer median offset from the group spans %.3f ms (", high - low)
                         + each.joined(separator: ", ") + "); the rest of the skew is per-frame scheduling jitter")
        }
        if let worst = largestSkews.first, worst.skew >= 2 {
            lines.append("largest skews: " + largestSkews.prefix(3).map { o in
                var text = String(format: "%@ ms at %.1f s (item %.2f s, %@ first, %@ last", f(o.skew), o.at, o.item,
                                  o.earliest, o.latest)
                if let after = o.after, let gap = o.secondsAfter { text += String(format: "; %.2f s after %@", gap, after) }
                return text + ")"
            }.joined(separator: "; "))
        }
        lines.append("")
        var commandTable = TextTable(["command latency (ms)", "n", "p50", "p99", "max", "target", "within", "missed"])
        for c in commands {
            commandTable.add([c.command, "\(c.stats.count)", f(c.stats.p50), f(c.stats.p99), f(c.stats.max),
                              "≤ " + f(c.target), "\(c.withinTarget)/\(c.stats.count)", "\(c.missed)"])
        }
        lines.append(commandTable.rendered)
        lines.append("")
        if let rateChanges {
            lines.append(RateChangeFigures.rendered(rateChanges))
            lines.append("")
        }
        let joins = lateJoinToInSync.map { $0.map { String(format: "%.2f s", $0) } ?? "never" }.joined(separator: ", ")
        lines.append("late joiner → within 1 ms of the group: \(joins.isEmpty ? "–" : joins)")
        if let clockError {
            lines.append("clock estimate vs truth: |error| p50 \(f(clockError.p50)) ms, p99 \(f(clockError.p99)) ms, max \(f(clockError.max)) ms; mean signed \(String(format: "%+.3f", clockErrorMean ?? 0)) ms")
        } else {
            lines.append("clock estimate vs truth: none (this policy keeps no session-time estimate)")
        }
        if !clockErrorByPeer.isEmpty {
            lines.append("clock error by peer, mean over the first → last minute (ms; estimate, then pipeline clock): "
                + clockErrorByPeer.sorted { $0.key < $1.key }.map { entry in
                    var text = String(format: "%@ %+.3f → %+.3f", entry.key, entry.value[0], entry.value[1])
                    if entry.value.count == 4 { text += String(format: " / %+.3f → %+.3f", entry.value[2], entry.value[3]) }
                    return text
                }.joined(separator: ", "))
        }
        if let engineClockError {
            lines.append("pipeline clock vs truth: |error| p50 \(f(engineClockError.p50)) ms, p99 \(f(engineClockError.p99)) ms, max \(f(engineClockError.max)) ms")
        }
        lines.append(String(format: "CPU per peer: %.2f %% of a core in all, %.2f %% for coordination (all but decoding and rendering)",
                            cpuPercentPerPeer, coordinationCPUPercentPerPeer)
                     + (peakMemoryMBPerPeer.map { String(format: "; peak memory %.1f MB per peer (process peak / peers)", $0) } ?? ""))
        if !corrections.isEmpty {
            lines.append("corrections made by the rules: " + corrections.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if probeRecordsDropped > 0 { lines.append("warning: \(probeRecordsDropped) render records were dropped before they were read") }
        lines.append("reproduce: \(command)")
        return lines.joined(separator: "\n")
    }

    // MARK: Plot

    /// Each peer's render offset from the group's median over time, binned (largest offset in a bin), with the
    /// schedule's commands as markers. The scale is clipped at 1.5 × the 99.9th percentile of the offsets (at least
    /// ±1 ms) so that a rare spike does not hide the rest; clipped points are counted on the plot.
    package static func plot(_ outcome: SyncBench.Outcome, title: String) -> String {
        // About 600 bins whatever the duration; never finer than a quarter second.
        let bin = max(TimeSpan.milliseconds(250).nanoseconds, (outcome.ended - outcome.started) / 600)
        var series: [SVGPlot.Series] = []
        for (index, peer) in outcome.peers.enumerated() {
            var bins: [Int64: Int64] = [:]
            for showing in outcome.showings {
                guard let offset = showing.offset(of: index) else { continue }
                let key = (showing.median - outcome.started) / bin
                if abs(offset) >= abs(bins[key] ?? 0) { bins[key] = offset }
            }
            guard !bins.isEmpty else { continue }
            series.append(SVGPlot.Series(name: peer.name, points: bins.keys.sorted().map {
                (Double($0) * TimeSpan(nanoseconds: bin).seconds, Double(bins[$0]!) / 1e6)
            }))
        }
        let markers = outcome.marks.filter { $0.command != nil || $0.label == "late joiner" || $0.label == "stall" }.map {
            SVGPlot.Marker(x: TimeSpan(nanoseconds: $0.time - outcome.started).seconds, label: $0.label)
        }
        let magnitudes = series.flatMap { $0.points.map { abs($0.1) } }.sorted()
        let p999 = Distribution.percentile(99.9, of: magnitudes, resolution: 0.001) ?? 1
        return SVGPlot(title: title, xLabel: "time (s)", yLabel: "render offset from the group median (ms)",
                       series: series, markers: markers, clip: max(1, p999 * 1.5)).render()
    }
}
