import CTandemGStreamerShim
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Shared by the media tests and the command-line tests: one X server helper for both.

/// An X server of the test's own: `Xvfb :N -nolisten tcp -noreset` on a display number nobody uses, stopped by
/// `stop()`.
/// `make deps` installs it (Debian's xvfb); without it the test fails saying so.
public final class VirtualDisplay {
    public let name: String
    public let width = 800
    public let height = 600
    private let process: Process

    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    private init(name: String, process: Process) {
        self.name = name
        self.process = process
    }

    public static func start() throws -> VirtualDisplay {
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
            // -noreset: an X server resets when its last client leaves, and refuses connections while it does
            // (about one in seven made just after a disconnect, more under load). The readiness check below is
            // such a client, so a sink opening the display a moment later could fail with "Could not initialise
            // X output"; without resets every connection the test makes is served.
            process.arguments = [":\(number)", "-nolisten", "tcp", "-noreset", "-screen", "0", "800x600x24"]
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
                return VirtualDisplay(name: ":\(number)", process: process)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: log)
            let how = process.terminationReason == .uncaughtSignal ? "signal" : "exit status"
            tried.append(":\(number) (\(how) \(process.terminationStatus)): \(text.split(separator: "\n").suffix(3).joined(separator: " / "))")
            // A server that went at once without a word may have met the previous test's, still going away: a
            // moment's pause, then the next number (six tries in all).
            if tried.count >= 6 { break }
            Thread.sleep(forTimeInterval: 0.25)
        }
        throw Unavailable(description: "Xvfb could not start: " + tried.joined(separator: "; "))
    }

    /// What the X server says of window `xid`.
    public func query(_ xid: UInt) -> tdm_gst_x_window_info? {
        var info = tdm_gst_x_window_info()
        guard tdm_gst_x_window_query(name, UInt(xid), &info) == 1 else { return nil }
        return info
    }

    /// Ends the server with SIGKILL (it inherits this process's ignored SIGTERM, which the service tests set up)
    /// and removes the socket and lock it leaves.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let number = name.dropFirst()
        try? FileManager.default.removeItem(atPath: "/tmp/.X11-unix/X\(number)")
        try? FileManager.default.removeItem(atPath: "/tmp/.X\(number)-lock")
    }
}

extension tdm_gst_x_window_info {
    public var wmName: String { withUnsafeBytes(of: wm_name) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) } }
    public var netWMName: String {
        withUnsafeBytes(of: net_wm_name) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
