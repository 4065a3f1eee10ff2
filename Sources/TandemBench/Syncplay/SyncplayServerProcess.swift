import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `syncplay-server` (Debian's, installed by `make deps`) on loopback, with Tandem's Syncplay connections in
/// one of its rooms.
package final class SyncplayServerProcess: Sendable {
    package let port: Int
    private let process: Process

    /// With `tls`, a directory holding cert.pem, privkey.pem and chain.pem: the server offers STARTTLS. With
    /// `password`, clients must give it.
    package init(tls: String? = nil, password: String? = nil) async throws(BenchError) {
        let path = "/usr/bin/syncplay-server"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError("syncplay-server is not installed — `make deps` installs Debian's syncplay-server")
        }
        var lastError = "no attempt"
        for _ in 0..<5 {
            let port = Int.random(in: 20_000..<40_000)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = ["--port", "\(port)"] + (tls.map { ["--tls", $0] } ?? []) + (password.map { ["--password=\($0)"] } ?? [])
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do { try process.run() } catch { throw BenchError("cannot run syncplay-server: \(error)") }
            // Ready when it accepts a connection (Python and Twisted take a moment to start).
            for _ in 0..<100 where process.isRunning {
                if Self.accepts(port: port) {
                    self.port = port
                    self.process = process
                    return
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
            lastError = process.isRunning ? "not listening on \(port) after 10 s" : "exited (port \(port) taken?)"
            if process.isRunning { process.terminate() }
        }
        throw BenchError("syncplay-server did not start: \(lastError)")
    }

    package static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 3 s). Polls: `waitUntilExit` can hang inside a test's task.
    package func stop() {
        if process.isRunning { process.terminate() }
        for _ in 0..<60 where process.isRunning { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
