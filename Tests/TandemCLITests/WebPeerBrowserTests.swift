import Foundation
import Testing

/// The browser page in a real browser: headless Chromium (Debian's) driven by Playwright joins a session that a
/// native `tandem host --web` runs, loads the same file and follows the host (scripts/web-peer-check.py).
@Suite("Browser peer in Chromium")
struct WebPeerBrowserTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = repository.appendingPathComponent(".build/web-venv/bin/python").path
    static let chromium = ProcessInfo.processInfo.environment["TANDEM_CHROMIUM"] ?? "/usr/bin/chromium"

    /// Whether the browser can be started at all (`make deps` installs both).
    static var browserInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: python) && FileManager.default.isExecutableFile(atPath: chromium)
    }

    @Test("a page joins a native host's session, loads its file, follows play, pause and seek, reports its offset, chats and reconnects",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func pageFollowsNativeHost() async throws {
        let screenshot = Self.repository.appendingPathComponent(".build/web-peer.png").path
        let driver = try TandemProcess([Self.repository.appendingPathComponent("scripts/web-peer-check.py").path,
                                        TandemBinary.path, TandemBinary.sample("short.webm"), screenshot],
                                       executable: Self.python)
        let code = await driver.exitCode(within: 110)
        if code == 77 {
            // The one allowed skip: the browser could not start here.
            print("browser peer test skipped: \(driver.stdout.split(separator: "\n").last ?? "")")
            return
        }
        #expect(code == 0, "\(driver.stdout)\n\(driver.stderr)")
        #expect(driver.stdout.contains(" passed, 0 failed"), "\(driver.stdout)")
        if code == nil { driver.stop() }
    }

    @Test("given both files of a queue at once, a page loads each item by name and fingerprint without asking",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func pageLoadsQueueItemsFromPickedFiles() async throws {
        let driver = try TandemProcess([Self.repository.appendingPathComponent("scripts/web-peer-check.py").path, "--queue",
                                        TandemBinary.path, TandemBinary.sample("short.webm"),
                                        TandemBinary.sample("countdown.webm")],
                                       executable: Self.python)
        let code = await driver.exitCode(within: 90)
        if code == 77 {
            print("browser queue test skipped: \(driver.stdout.split(separator: "\n").last ?? "")")
            return
        }
        #expect(code == 0, "\(driver.stdout)\n\(driver.stderr)")
        #expect(driver.stdout.contains("web peer queue: 4 passed, 0 failed"), "\(driver.stdout)")
        if code == nil { driver.stop() }
    }

    @Test("a page given files it cannot play shows the failed state, the reason and what to do, runs no clock, and the group goes on without it",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func pageThatCannotPlaySaysSo() async throws {
        let driver = try TandemProcess([Self.repository.appendingPathComponent("scripts/web-peer-check.py").path, "--unplayable",
                                        TandemBinary.path, TandemBinary.sample("short.webm"),
                                        TandemBinary.sample("not-media.webm")],
                                       executable: Self.python)
        let code = await driver.exitCode(within: 110)
        if code == 77 {
            print("browser unplayable test skipped: \(driver.stdout.split(separator: "\n").last ?? "")")
            return
        }
        #expect(code == 0, "\(driver.stdout)\n\(driver.stderr)")
        #expect(driver.stdout.contains("web peer unplayable: 13 passed, 0 failed"), "\(driver.stdout)")
        if code == nil { driver.stop() }
    }

    @Test("the page seals and opens in place exactly as the shared known answers say (Tests/Vectors/app-data-v2.json)",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func pageMatchesKnownAnswers() async throws {
        let vectors = Self.repository.appendingPathComponent("Tests/Vectors/app-data-v2.json").path
        let driver = try TandemProcess([Self.repository.appendingPathComponent("scripts/web-peer-check.py").path, "--vectors",
                                        TandemBinary.path, TandemBinary.sample("short.webm"), vectors],
                                       executable: Self.python)
        let code = await driver.exitCode(within: 90)
        if code == 77 {
            print("browser vectors test skipped: \(driver.stdout.split(separator: "\n").last ?? "")")
            return
        }
        #expect(code == 0, "\(driver.stdout)\n\(driver.stderr)")
        #expect(driver.stdout.contains("web peer vectors: 9 passed, 0 failed"), "\(driver.stdout)")
        if code == nil { driver.stop() }
    }

    @Test("bench browser: a short run with one page reports the render offset and the time to sync",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func benchSmoke() async throws {
        let bench = try TandemProcess(["bench", "browser", "--duration", "2",
                                       "--python", Self.python,
                                       "--script", Self.repository.appendingPathComponent("scripts/web-peer-check.py").path])
        let code = await bench.exitCode(within: 110)
        if code == nil { bench.stop() }
        if bench.stderr.contains("the browser cannot start") {
            print("bench browser smoke skipped: \(bench.stderr)")
            return
        }
        #expect(code == 0, "\(bench.stdout)\n\(bench.stderr)")
        #expect(bench.stdout.contains("render offset from the group, from in sync"), "\(bench.stdout)")
        #expect(bench.stdout.contains("once on the refresh grid (10 frames running within half a refresh and 1 ms"), "\(bench.stdout)")
        #expect(bench.stdout.contains("in sync after the file was chosen"), "\(bench.stdout)")
        #expect(bench.stdout.contains("within a frame from then on (to the next seek) from"), "\(bench.stdout)")
        // Every seek restarted the group where it was asked to (a page's report once sent seeks back).
        #expect(bench.stdout.contains("never within a frame, 0 not at their target)"), "\(bench.stdout)")
        #expect(bench.stdout.contains("a page's first frames after it (median of 6): p50"), "\(bench.stdout)")
        #expect(bench.stdout.contains("command latency (command to the page's new timeline, 4 commands)"),
                "\(bench.stdout)")
    }
}
