import CTandemGStreamerShim
import TandemTestDisplay
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `tandem host` with its video on an X server of the test's own: the window is titled with `--title`, and
/// `fullscreen` on standard input (the `f` key's line) covers the screen and restores it.
@Suite("The video window of a tandem process", .serialized)
struct WindowProcessTests {
    @Test("the host's window carries the activity's title; `fullscreen` toggles it over the whole screen and back")
    func hostWindow() async throws {
        let display = try VirtualDisplay.start()
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
