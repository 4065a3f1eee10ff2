import ArgumentParser
import Foundation
import TandemPeer

/// `tandem bench browser`: headless Chromium pages beside a native host, measured against the group's line.
struct BrowserBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browser",
        abstract: "Run headless Chromium pages beside a native host; report their render offset and time to sync.",
        discussion: """
            Starts `tandem host FILE --web` on 127.0.0.1 (a headless player), opens PAGES pages of the browser \
            link in Debian's headless Chromium (driven by Playwright), picks the file in each and plays. Each \
            page measures every presented frame (requestVideoFrameCallback) against the group's timeline, which \
            the native host renders to within a millisecond; the report gives the time from choosing the file to \
            being in sync (|offset| < 20 ms for 10 frames running) and the offset's p50, p99 and max from then on. \
            Targets: p99 ≤ 20 ms on loopback, in sync ≤ 2 s after the file is chosen.

            Needs `make deps` (chromium, and Playwright in .build/web-venv) and the source tree's \
            scripts/web-peer-check.py: run it from the repository.
            """
    )

    @Option(help: "Browser pages (1–8).")
    var pages = 1

    @Option(help: "Seconds of playback measured after the pages are in sync.")
    var duration = 20.0

    @Option(help: "The media file (default: the bundled media-samples/short.webm).")
    var file: String?

    @Option(help: ArgumentHelp("The Python with Playwright.", valueName: "PATH"))
    var python = ".build/web-venv/bin/python"

    @Option(help: ArgumentHelp("The page driver.", valueName: "PATH"))
    var script = "scripts/web-peer-check.py"

    @Flag(help: "Print the figures as one JSON line only.")
    var json = false

    func validate() throws {
        guard (1...8).contains(pages) else { throw ValidationError("--pages must be 1 to 8") }
        guard duration > 0, duration <= 3_600 else { throw ValidationError("--duration must be 0 to 3600 seconds") }
    }

    func run() async throws {
        try await reportingErrors {
            for (what, path) in [("Python with Playwright", python), ("page driver", script)]
            where !FileManager.default.fileExists(atPath: path) {
                throw CLIError(.usage, "no \(what) at \(path): run `make deps` and start this from the source tree")
            }
            // Chromium cannot read countdown.webm (its demuxer fails on it); short.webm plays.
            let media = try file ?? Samples.path("short.webm")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            let tandem = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
            process.arguments = [script, "--bench", "\(duration)", "\(pages)", tandem, media]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
            guard let figures = try? JSONDecoder().decode(BrowserFigures.self, from: Data(line.utf8)) else {
                throw CLIError(.failure, "the page driver gave no figures: \(line)")
            }
            if let error = figures.error { throw CLIError(.failure, error) }
            if json {
                printLine(line)
                return
            }
            printLine(figures.report(duration: duration))
        }
    }
}

/// The driver's JSON line.
struct BrowserFigures: Decodable {
    var error: String?
    var pages: Int?
    var frames: Int?
    var p50Ms: Double?
    var p99Ms: Double?
    var maxMs: Double?
    var syncSecondsAfterFileChosen: Double?

    func report(duration: Double) -> String {
        func ms(_ value: Double?) -> String { value.map { String(format: "%.1f ms", $0) } ?? "–" }
        let sync = syncSecondsAfterFileChosen.map { String(format: "%.2f s", $0) } ?? "never"
        let p99Met = (p99Ms ?? .infinity) <= 20
        let syncMet = (syncSecondsAfterFileChosen ?? .infinity) <= 2
        return """
            browser pages: \(pages ?? 0), \(frames ?? 0) frames measured over \(String(format: "%.0f", duration)) s
            render offset from the group: p50 \(ms(p50Ms)), p99 \(ms(p99Ms)) (target ≤ 20 ms: \(p99Met ? "met" : "missed")), max \(ms(maxMs))
            in sync after the file was chosen: \(sync) (target ≤ 2 s: \(syncMet ? "met" : "missed"))
            """
    }
}
