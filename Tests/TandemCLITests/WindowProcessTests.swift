import CTandemGStreamerShim
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// An X server of the test's own: `Xvfb :N -nolisten tcp` on a display number nobody uses, stopped by `stop()`.
/// `make deps` installs it (Debian's xvfb); without it the test fails saying so.
final class XServer {
    let name: String
    let width = 800
    let height = 600
    private let process: Process

    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    private init(name: String, process: Process) {
        self.name = name
        self.process = process
    }

    static func start() throws -> XServer {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/Xvfb" } + ["/usr/bin/Xvfb"]
        guard let xvfb = path.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Unavailable(description: "Xvfb is not installed: run `make deps` (it installs the Debian package xvfb)")
        }
        var tried: [String] = []
        for number in 90..<190 {
            guard !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)"),
                  !FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") else { continue }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: xvfb)
            process.arguments = [":\(number)", "-nolisten", "tcp", "-screen", "0", "800x600x24"]
            // Its messages go to a file: a pipe nobody reads would fill and stop the server mid-test.
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-xvfb-\(UUID().uuidString).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let errors = try FileHandle(forWritingTo: log)
            defer { try? errors.close() }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
            // Ready once it accepts a connection; gone at once when another server took the number first.
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline, process.isRunning, tdm_gst_x_display_opens(":\(number)") == 0 {
                Thread.sleep(forTimeInterval: 0.05)
            }
            if process.isRunning, tdm_gst_x_display_opens(":\(number)") == 1 {
                try? FileManager.default.removeItem(at: log)
                return XServer(name: ":\(number)", process: process)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: log)
            tried.append(":\(number): \(text.split(separator: "\n").suffix(3).joined(separator: " / "))")
            if tried.count >= 3 { break }
        }
        throw Unavailable(description: "Xvfb could not start: " + tried.joined(separator: "; "))
    }

    /// What the X server says of window `xid`.
    func query(_ xid: UInt) -> tdm_gst_x_window_info? {
        var info = tdm_gst_x_window_info()
        guard tdm_gst_x_window_query(name, UInt(xid), &info) == 1 else { return nil }
        return info
    }

    /// Ends the server with SIGKILL (it inherits this process's ignored SIGTERM, which the service tests set up)
    /// and removes the socket and lock it leaves.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let number = name.dropFirst()
        try? FileManager.default.removeItem(atPath: "/tmp/.X11-unix/X\(number)")
        try? FileManager.default.removeItem(atPath: "/tmp/.X\(number)-lock")
    }
}

extension tdm_gst_x_window_info {
    var wmName: String { withUnsafeBytes(of: wm_name) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) } }
    var netWMName: String {
        withUnsafeBytes(of: net_wm_name) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// `tandem host` with its video on an X server of the test's own: the window is titled with `--title`, and
/// `fullscreen` on standard input (the `f` key's line) covers the screen and restores it.
@Suite("The video window of a tandem process", .serialized)
struct WindowProcessTests {
    @Test("the host's window carries the activity's title; `fullscreen` toggles it over the whole screen and back")
    func hostWindow() async throws {
        let display = try XServer.start()
        defer { display.stop() }
        let title = "Movie night — Amélie"
        let host = try TandemProcess(["host", TandemBinary.sample("countdown.webm"), "--title", title, "--json",
                                      "--video-sink", "ximagesink display=\(display.name)", "--audio-sink", "fakesink",
                                      "--bind", "127.0.0.1", "--port", "0", "--name", "ann"])
        defer { host.stop() }
        #expect(await host.event("invite", within: 30) != nil, "stderr: \(host.stderr)")
        var window: UInt?
        for _ in 0..<150 where window == nil {
            let found = tdm_gst_x_find_window(display.name, title)
            if found != 0 { window = UInt(found) } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        let xid = try #require(window, "no window titled \(title) on \(display.name); stderr: \(host.stderr)")
        let before = try #require(display.query(xid))
        host.send("fullscreen")
        #expect(await host.wait(for: 10) { _ in display.query(xid)?.width == Int32(display.width) })
        let full = try #require(display.query(xid))
        #expect(full.width == display.width && full.height == display.height && full.x == 0 && full.y == 0)
        host.send("fullscreen")
        #expect(await host.wait(for: 10) { _ in display.query(xid)?.width == before.width })
        #expect(display.query(xid)?.height == before.height)
        host.send("end")
        #expect(await host.exitCode(within: 15) == 0)
    }
}
