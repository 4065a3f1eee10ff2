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

    @Test("a page joins a native host's session, loads its file, follows play, pause and seek, and chats",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func pageFollowsNativeHost() async throws {
        let screenshot = Self.repository.appendingPathComponent(".build/web-peer.png").path
        let driver = try TandemProcess([Self.repository.appendingPathComponent("scripts/web-peer-check.py").path,
                                        TandemBinary.path, TandemBinary.sample("short.webm"), screenshot],
                                       executable: Self.python)
        let code = await driver.exitCode(within: 90)
        if code == 77 {
            // The one allowed skip: the browser could not start here.
            print("browser peer test skipped: \(driver.stdout.split(separator: "\n").last ?? "")")
            return
        }
        #expect(code == 0, "\(driver.stdout)\n\(driver.stderr)")
        #expect(driver.stdout.contains(" passed, 0 failed"), "\(driver.stdout)")
        if code == nil { driver.stop() }
    }

    @Test("bench browser: a short run with one page reports the render offset and the time to sync",
          .enabled(if: browserInstalled, "needs Chromium and Playwright: run `make deps` (skipped: the browser cannot start)"),
          .timeLimit(.minutes(2)))
    func benchSmoke() async throws {
        let bench = try TandemProcess(["bench", "browser", "--duration", "2",
                                       "--python", Self.python,
                                       "--script", Self.repository.appendingPathComponent("scripts/web-peer-check.py").path])
        let code = await bench.exitCode(within: 90)
        if code == nil { bench.stop() }
        if bench.stderr.contains("the browser cannot start") {
            print("bench browser smoke skipped: \(bench.stderr)")
            return
        }
        #expect(code == 0, "\(bench.stdout)\n\(bench.stderr)")
        #expect(bench.stdout.contains("render offset from the group"), "\(bench.stdout)")
        #expect(bench.stdout.contains("in sync after the file was chosen"), "\(bench.stdout)")
    }
}
