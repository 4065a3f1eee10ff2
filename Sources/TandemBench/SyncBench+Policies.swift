import Foundation
import Tandem

extension SyncBench {
    /// Where one `tandem bench sync` run puts its figures besides the printed reports.
    package struct Outputs: Sendable {
        /// Every rendered frame as CSV (one file per policy when several).
        package var frames: String?
        /// The plot as SVG (one file per policy when several).
        package var plot: String?
        /// All reports as JSON.
        package var json: String?

        package init(frames: String? = nil, plot: String? = nil, json: String? = nil) {
            self.frames = frames
            self.plot = plot
            self.json = json
        }
    }

    /// Runs `base` once per policy in `policies`, one after another on the same schedule, link and clock errors.
    /// `progress` gets each run's progress lines (prefixed with its policy), `say` the reports, a side-by-side table
    /// when there are several, and where each file went.
    package static func run(_ base: Configuration, policies: [SyncPolicy], outputs: Outputs,
                            progress: @escaping @Sendable (String) -> Void,
                            say: (String) -> Void) async throws -> [SyncReport] {
        var reports: [SyncReport] = []
        for policy in policies {
            var configuration = base
            configuration.policy = policy
            let outcome = try await SyncBench(configuration: configuration).run { progress("[\(policy.rawValue)] " + $0) }
            progress("")
            let report = SyncReport.make(outcome, command: configuration.command)
            reports.append(report)
            say(report.rendered)
            say("")
            try outcome.write(frames: outputs.frames, plot: outputs.plot, suffixed: policies.count > 1, say: say)
        }
        if reports.count > 1 { say(SyncReport.comparison(reports)) }
        if let json = outputs.json {
            try BenchFiles.write(try SyncReport.json(reports), to: json)
            say("figures: \(json)")
        }
        return reports
    }
}
