import ArgumentParser
import Foundation
import TandemBench
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
            being in sync (|offset| < 20 ms for 10 frames running) and the offset's p50, p99 and max from then on; \
            then the host pauses, plays, seeks and pauses, and the report gives the command latency (from the \
            host's command to each page holding the group's new timeline). Between those, four seeks while playing, \
            each timed from the group's restart to the page being within a frame (5 frames running) and staying \
            so to the next seek. It also gives the display's refresh, the step between the refreshes the frames were \
            shown on, and the floor that step allows (errors moved by whole steps toward the line). Targets: p99 \
            within half a refresh, in sync ≤ 2 s after the file is chosen, within a frame to stay ≤ 0.3 s after a seek.

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

    @Option(help: ArgumentHelp("A native joiner behind this simulated link (a `bench sync --link` profile, e.g. wired) gives the seeks and the commands instead of the host; its proposed starts then go on the pages' refreshes (TANDEM_PROPOSED_STARTS=off to compare).", valueName: "PROFILE")) var joinerLink: String?

    @Flag(help: "Print the figures as one JSON line only.")
    var json = false

    func validate() throws {
        guard (1...8).contains(pages) else { throw ValidationError("--pages must be 1 to 8") }
        guard duration > 0, duration <= 3_600 else { throw ValidationError("--duration must be 0 to 3600 seconds") }
    }

    func run() async throws {
        try await reportingErrors {
            let media = try file ?? Samples.path("short.webm")
            let tandem = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
            let (figures, line) = try BrowserBench.run(python: python, script: script, pages: pages, duration: duration,
                                                       tandem: tandem, media: media, joinerLink: joinerLink)
            printLine(json ? line : figures.report(duration: duration, joinerLink: joinerLink))
        }
    }
}
