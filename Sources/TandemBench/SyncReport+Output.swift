import Foundation
import Tandem
import TandemTesting

extension SyncReport {
    /// Side-by-side figures of several policies from the same run.
    package static func comparison(_ reports: [SyncReport]) -> String {
        func f(_ v: Double?) -> String { v.map { $0 < 10 ? String(format: "%.3f", $0) : String(format: "%.1f", $0) } ?? "–" }
        var table = TextTable(["policy", "skew p50 ms", "skew p99 ms", "skew max ms", "× tandem (p99)"])
        let reference = reports.first { $0.policy == SyncPolicy.tandem.rawValue }?.skew.p99
        for report in reports {
            let ratio = reference.flatMap { r in report.skew.p99.map { String(format: "%.0f×", $0 / max(r, 1e-6)) } } ?? "–"
            table.add([SyncPolicy(rawValue: report.policy)?.label ?? report.policy, f(report.skew.p50), f(report.skew.p99),
                       f(report.skew.max), ratio])
        }
        return "side by side (same link, peers, clock errors and schedule):\n" + table.rendered
    }

    /// The figures as pretty-printed JSON: one report as an object, several as an array.
    package static func json(_ reports: [SyncReport]) throws(BenchError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            let data = reports.count == 1 ? try encoder.encode(reports[0]) : try encoder.encode(reports)
            return String(decoding: data, as: UTF8.self)
        } catch {
            throw BenchError("cannot encode the figures: \(error)")
        }
    }
}

extension SyncBench.Configuration {
    /// The command line that repeats this run.
    package var command: String {
        var command = "tandem bench sync --peers \(peers) --link \(link) --duration \(String(format: "%g", duration)) --policy \(policy.rawValue) --seed \(seed)"
        if preciseWait != .zero { command += " --precise-wait \(String(format: "%g", Double(preciseWait.nanoseconds) / 1e3))" }
        if !rateInPlace { command += " --rate-fallback" }
        if prepareRounds { command += " --prepare-rounds" }
        if timelinesOverTCPOnly { command += " --timelines-over-tcp" }
        if let startMargin { command += " --start-margin \(String(format: "%g", Double(startMargin.nanoseconds) / 1e6))" }
        return command
    }
}

extension SyncBench.Outcome {
    /// Writes the frames CSV and the plot where asked (with `-POLICY` added to the names when `suffixed`), saying
    /// where each went.
    package func write(frames: String?, plot: String?, suffixed: Bool, say: (String) -> Void) throws(BenchError) {
        let policy = configuration.policy
        func target(_ path: String) -> String { suffixed ? BenchFiles.suffixed(path, policy.rawValue) : path }
        if let frames {
            try BenchFiles.write(framesCSV, to: target(frames))
            say("frames: \(target(frames))")
        }
        if let plot {
            let title = "Render offset per peer — \(policy.label), \(configuration.peers) peers, \(configuration.link)"
            try BenchFiles.write(SyncReport.plot(self, title: title), to: target(plot))
            say("plot: \(target(plot))")
        }
    }

    /// Every rendered frame as CSV (peer, name, item ns, true render ns since the start): the raw ground truth.
    package var framesCSV: String {
        var csv = "peer,name,item_ns,render_ns\n"
        for (index, list) in truth.frames.enumerated() {
            let name = peers[index].name
            for frame in list { csv += "\(index),\(name),\(frame.item),\(frame.time - started)\n" }
        }
        return csv
    }
}

/// Where benchmarks write their figures, plots and frames.
package enum BenchFiles {
    /// `path` with `-suffix` before its extension.
    package static func suffixed(_ path: String, _ suffix: String) -> String {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension
        let base = url.deletingPathExtension().path
        return ext.isEmpty ? "\(base)-\(suffix)" : "\(base)-\(suffix).\(ext)"
    }

    /// Writes `text` to `path`, creating its directory.
    package static func write(_ text: String, to path: String) throws(BenchError) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
