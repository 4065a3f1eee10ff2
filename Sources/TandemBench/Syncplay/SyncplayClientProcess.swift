import Foundation
import TandemCore
#if canImport(Glibc)
import Glibc
#endif

/// A real Syncplay client (Debian's `syncplay`, installed by `make deps`) without its GUI, playing through a real
/// `mpv` with no display and no sound card; driven through its console commands on standard input, read through
/// what it prints. mpv shares the client's standard output: with `MpvFrameStamps.mpvArguments`, the pictures mpv
/// presents arrive there too and are taken out of the text as stamped frames (`drainFrames`).
package final class SyncplayClientProcess: Sendable {
    package static let path = "/usr/bin/syncplay"
    package static let mpv = "/usr/bin/mpv"
    /// mpv options without stamped pictures: null outputs.
    package static let nullOutputs = ["--vo=null", "--ao=null"]
    private let process: Process
    private let input: Pipe
    private let output: Locked<String>
    private let frames: Locked<[GroundTruth.Frame]>
    private let reading: Locked<Bool>
    private let directory: URL
    private let tag = "tandem-syncplay-\(UUID().uuidString)"

    /// Starts `syncplay --no-gui` for `file` in `room` of the server at 127.0.0.1:`port`; `mpvArguments` go to mpv.
    /// The client asks for STARTTLS and checks the server's certificate against the system's roots, and those of
    /// `trustDirectory` (OpenSSL's hashed directory, `openssl rehash`: Syncplay sets `SSL_CERT_FILE` itself).
    package init(port: Int, room: String, password: String, name: String, file: String,
                 mpvArguments: [String] = nullOutputs, trustDirectory: String? = nil) throws(BenchError) {
        for binary in [Self.path, Self.mpv] where !FileManager.default.isExecutableFile(atPath: binary) {
            throw BenchError("\(binary) is not installed — `make deps` installs Debian's syncplay and mpv")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-syncplay-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) } catch {
            throw BenchError("cannot make a configuration directory for syncplay: \(error)")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.path)
        // Values attached with `=`: a room (a session id) may start with `-`.
        process.arguments = ["--no-gui", "--no-store", "--host", "127.0.0.1:\(port)", "--name=\(name)", "--room=\(room)",
                             "--password=\(password)", "--player-path", Self.mpv, file, "--"] + mpvArguments
            // A tag that finds this client's mpv again, even once Syncplay has left it behind.
            + ["--title=\(tag)"]
        var environment = ProcessInfo.processInfo.environment
        // A private configuration directory (no settings of the machine's user), and output as it happens.
        environment["HOME"] = directory.path
        environment["XDG_CONFIG_HOME"] = directory.path
        environment["PYTHONUNBUFFERED"] = "1"
        if let trustDirectory { environment["SSL_CERT_DIR"] = trustDirectory }
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        process.environment = environment
        input = Pipe()
        let out = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = out
        output = Locked("")
        frames = Locked([])
        reading = Locked(true)
        do { try process.run() } catch {
            try? FileManager.default.removeItem(at: directory)
            throw BenchError("cannot run syncplay: \(error)")
        }
        // A descriptor of the reader's own, closed when it ends: the pipe's may be closed and reused meanwhile.
        Self.read(dup(out.fileHandleForReading.fileDescriptor), text: output, frames: frames, while: reading)
    }

    /// Reads the client's output on a thread of its own, so that each read is stamped the moment it returns (a
    /// dispatch handler would add its queue's delay to every picture's arrival). Ends at end of file or within
    /// 200 ms of `stop()`.
    private static func read(_ descriptor: Int32, text: Locked<String>, frames: Locked<[GroundTruth.Frame]>,
                             while reading: Locked<Bool>) {
        let thread = Thread {
            let clock = SystemMonotonicClock()
            var stamps = MpvFrameStamps()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            defer { close(descriptor) }
            while reading.value {
                var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let polled = poll(&ready, 1, 200)
                if polled < 0, errno == EINTR { continue }
                guard polled > 0 else { if polled == 0 { continue } else { break } }
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                let arrival = clock.now.nanoseconds
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let (found, bytes) = stamps.consume(buffer[0..<count], arrival: arrival)
                if !found.isEmpty { frames.withLock { $0.append(contentsOf: found) } }
                if !bytes.isEmpty {
                    text.withLock { text in
                        text += String(decoding: bytes, as: UTF8.self)
                        if text.utf8.count > 1_000_000 { text = String(text.suffix(500_000)) }
                    }
                }
            }
        }
        thread.name = "syncplay output"
        thread.start()
    }

    package var text: String { output.value }
    package var pid: Int32 { process.processIdentifier }

    /// Frames mpv presented since the last drain (item and arrival, ns), oldest first.
    package func drainFrames() -> [GroundTruth.Frame] { frames.withLock { f in defer { f = [] }; return f } }

    /// A console command (`p` pauses or plays, `s 1:00` seeks, `ch TEXT` chats).
    package func send(_ line: String) { try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8)) }

    /// Waits up to `seconds` for output that `matches`, counted from `after` characters in.
    package func waitFor(_ seconds: Double, after offset: Int = 0, _ matches: (String) -> Bool) async -> Bool {
        for _ in 0..<Int(seconds * 10) {
            if matches(String(text.dropFirst(offset))) { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Stops the client and the mpv it started, by their process ids: SIGTERM, then SIGKILL after 2 s (Syncplay's
    /// console client does not end on SIGTERM while it waits for a command).
    package func stop() {
        let children = Set((process.isRunning ? Self.children(of: pid) : []) + Self.processes(tagged: tag))
        for child in children { kill(child, SIGTERM) }
        if process.isRunning { process.terminate() }
        for _ in 0..<40 where process.isRunning || children.contains(where: { kill($0, 0) == 0 && !Self.isZombie($0) }) {
            usleep(50_000)
        }
        for child in children where kill(child, 0) == 0 && !Self.isZombie(child) { kill(child, SIGKILL) }
        if process.isRunning { kill(pid, SIGKILL) }
        for _ in 0..<40 where process.isRunning { usleep(50_000) }
        // An mpv that Syncplay started after the first look (a client refused at once is stopped while its mpv is
        // still starting) outlives it: once Syncplay is gone, nothing starts another, so one more look finds them
        // all. mpv ignores SIGTERM, so these are killed outright.
        for straggler in Self.processes(tagged: tag) where !Self.isZombie(straggler) { kill(straggler, SIGKILL) }
        reading.withLock { $0 = false }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Processes whose command line carries `tag` (this client's mpv).
    static func processes(tagged tag: String) -> [Int32] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return all.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data, as: UTF8.self).contains(tag)
        }
    }

    /// The direct children of `pid` (mpv, started by Syncplay).
    static func children(of pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }

    static func isZombie(_ pid: Int32) -> Bool {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true
    }
}
