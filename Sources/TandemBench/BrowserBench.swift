import Foundation

/// `tandem bench browser`: headless Chromium pages (driven by Playwright through the source tree's page driver)
/// beside a native host. Every presented frame's display time is mapped to the system clock (the page's time
/// origin on the wall clock, then CLOCK_MONOTONIC, which is the host's embedded server's session clock) and
/// compared with the group's timeline there: ground truth, not the page's own estimate.
package enum BrowserBench {
    /// The driver's JSON line.
    package struct Figures: Decodable, Sendable {
        package var error: String?
        package var pages: Int?
        package var frames: Int?
        package var p50Ms: Double?
        package var p99Ms: Double?
        package var maxMs: Double?
        package var syncSecondsAfterFileChosen: Double?
        /// Commands given to the host, and the time from each to a page holding the group's new timeline.
        package var commands: Int?
        package var commandP50Ms: Double?
        package var commandMaxMs: Double?
        /// How far the page's own estimate of its offset (from its clock sync) was from the ground truth.
        package var ownEstimateP50Ms: Double?
        package var ownEstimateP99Ms: Double?
        /// The display's refresh (from animation frames), and the step between the refreshes the video's frames
        /// were shown on (Chromium shows a 30 fps video on every second refresh of a 60 Hz display).
        package var refreshMs: Double?
        package var presentationStepMs: Double?
        /// The floor: each frame's error moved by whole steps to the value nearest the line, p99.
        package var floorP99Ms: Double?
        /// On the refresh grid: each page's frames from its first 10 running within half a refresh and 1 ms (from in
        /// sync for a page that never got there), and the time from the file being chosen to that, the slowest page.
        package var gridP50Ms: Double?
        package var gridP99Ms: Double?
        package var gridMaxMs: Double?
        package var gridSecondsAfterFileChosen: Double?
        /// The same frames' errors moved by whole refreshes to the value nearest the line, p99: the best a choice
        /// of refresh could do for them (at most half a refresh).
        package var refreshFloorP99Ms: Double?
        /// Seeks while playing: the time from the group's restart at the new place to the page being within a
        /// frame of it (5 frames running), to its staying there until the next seek 2.5 s on (`seekHeld`: a change
        /// of phase after a seek takes a page out again), and from the command to that restart.
        package var seeks: Int?
        package var seeksMissed: Int?
        /// Pages whose group restarted somewhere other than the seek's target (each page, each seek): the bench
        /// measures nothing of a seek that did not go where asked.
        package var seeksOffTarget: Int?
        package var seekSettleP50S: Double?
        package var seekSettleMaxS: Double?
        package var seekHeldP50S: Double?
        package var seekHeldMaxS: Double?
        package var seekLeadP50S: Double?
        /// From a play command to the start it got (the group's new anchor), p50 and max; and where each page's
        /// first frames after it fell (the median of its first 6 frames' offsets), p50 and max.
        package var playLeadP50Ms: Double?
        package var playLeadMaxMs: Double?
        package var playStartP50Ms: Double?
        package var playStartMaxMs: Double?
        package var afterSeekP99Ms: Double?

        /// The report, with the targets (p99 within half a refresh once on the grid, in sync ≤ 2 s after the file is
        /// chosen, within a frame to stay ≤ 0.3 s after the group restarts from a seek) met or missed; `joinerLink`,
        /// the link of the joiner that gave the commands, if one did.
        package func report(duration: Double, joinerLink: String? = nil) -> String {
            func ms(_ value: Double?) -> String { value.map { String(format: "%.1f ms", $0) } ?? "–" }
            func s(_ value: Double?) -> String { value.map { String(format: "%.2f s", $0) } ?? "–" }
            func met(_ ok: Bool) -> String { ok ? "met" : "missed" }
            let sync = syncSecondsAfterFileChosen.map { String(format: "%.2f s", $0) } ?? "never"
            let halfRefresh = (refreshMs ?? 1_000.0 / 60) / 2
            let p99Met = (gridP99Ms ?? .infinity) <= halfRefresh
            let grid = gridSecondsAfterFileChosen.map { String(format: "%.2f s", $0) }
                ?? "never, for a page: its frames from in sync"
            let syncMet = (syncSecondsAfterFileChosen ?? .infinity) <= 2
            let seekMet = (seeksMissed ?? 1) == 0 && (seeksOffTarget ?? 1) == 0 && (seekHeldMaxS ?? .infinity) <= 0.3
            let every = (presentationStepMs ?? 0) / (refreshMs ?? 1)
            let shown = every > 1.5 ? String(format: "every %.0f refreshes", every) : "every refresh"
            let from = joinerLink.map { "; commands from bob, a native joiner behind the \($0) link" } ?? ""
            return """
                browser pages: \(pages ?? 0), \(frames ?? 0) frames measured over \(String(format: "%.0f", duration)) s\(from)
                display: refresh \(ms(refreshMs)); the video's frames shown on \(shown) (\(ms(presentationStepMs)) steps)
                render offset from the group, from in sync: p50 \(ms(p50Ms)), p99 \(ms(p99Ms)), max \(ms(maxMs))
                once on the refresh grid (10 frames running within half a refresh and 1 ms; \(grid) after the file was chosen): p50 \(ms(gridP50Ms)), p99 \(ms(gridP99Ms)) (target ≤ half a refresh, \(ms(halfRefresh)): \(met(p99Met))), max \(ms(gridMaxMs))
                the floor the refreshes allow those frames (each error moved by whole refreshes toward the line): p99 \(ms(refreshFloorP99Ms)); the floor of the browser's own phase (moved by whole steps, from in sync): p99 \(ms(floorP99Ms))
                in sync after the file was chosen: \(sync) (target ≤ 2 s: \(met(syncMet)))
                seeks while playing (\(seeks ?? 0), \(seeksMissed ?? 0) never within a frame, \(seeksOffTarget.map(String.init) ?? "–") not at their target): within a frame of the group \(s(seekSettleP50S)) p50, \(s(seekSettleMaxS)) max after it restarted, and within a frame from then on (to the next seek) from \(s(seekHeldP50S)) p50, \(s(seekHeldMaxS)) max (target ≤ 0.3 s: \(met(seekMet))); it restarted \(s(seekLeadP50S)) p50 after the command; offset from then p99 \(ms(afterSeekP99Ms))
                command latency (command to the page's new timeline, \(commands ?? 0) commands): p50 \(ms(commandP50Ms)), max \(ms(commandMaxMs)); a play's start after its command: p50 \(ms(playLeadP50Ms)), max \(ms(playLeadMaxMs)); a page's first frames after it (median of 6): p50 \(ms(playStartP50Ms)), max \(ms(playStartMaxMs))
                the page's own estimate of its offset, against this: off by p50 \(ms(ownEstimateP50Ms)), p99 \(ms(ownEstimateP99Ms))
                """
        }
    }

    /// Runs the page driver `script` with `python` for `pages` pages over `duration` s of `media`, against the
    /// `tandem` binary at `tandem`; returns its figures and the raw JSON line.
    /// With `joinerLink`, a native joiner behind that simulated link (`tandem bench sync --link`) gives the seeks
    /// and the commands instead of the host.
    package static func run(python: String, script: String, pages: Int, duration: Double, tandem: String,
                            media: String, joinerLink: String? = nil) throws -> (figures: Figures, line: String) {
        if let joinerLink, !NetworkPaths.isKnown(joinerLink) {
            throw BenchError("unknown --joiner-link \(joinerLink): use \(NetworkPaths.names.joined(separator: ", "))")
        }
        for (what, path) in [("Python with Playwright", python), ("page driver", script)]
        where !FileManager.default.fileExists(atPath: path) {
            throw BenchError("no \(what) at \(path): run `make deps` and start this from the source tree")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, "--bench", "\(duration)", "\(pages)", tandem, media] + (joinerLink.map { [$0] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard let figures = try? JSONDecoder().decode(Figures.self, from: Data(line.utf8)) else {
            throw BenchError("the page driver gave no figures: \(line)")
        }
        if let error = figures.error { throw BenchError(error) }
        return (figures, line)
    }
}
