import Foundation
import Tandem

/// Writes what a player's sinks render to a file, for benchmarks that run peers as separate processes
/// (`tandem bench sync --processes`): the ground truth then has to leave the process.
///
/// Turned on by `TANDEM_RENDER_LOG=FILE` in a `host` or `join`'s environment (nothing else reads it). The file is
/// text: a first line `timens MONOTONIC_OFFSET_NS` — this process's time namespace offset of CLOCK_MONOTONIC, read
/// from the kernel (`/proc/self/timens_offsets`, 0 outside one) — then one line per rendered buffer,
/// `v|a ITEM_NS MONOTONIC_NS`, where MONOTONIC_NS is this process's CLOCK_MONOTONIC (so the machine's true
/// CLOCK_MONOTONIC is MONOTONIC_NS − MONOTONIC_OFFSET_NS). Written by a thread of its own every 50 ms.
package final class RenderLog: @unchecked Sendable {
    /// `@unchecked`: `handle` and `probe` are only touched by the log's own thread after `init`.
    private let handle: FileHandle
    private let probe: RenderProbe

    /// Logs live for the rest of the process (a peer has one player).
    nonisolated(unsafe) private static var started: [RenderLog] = []
    private static let lock = NSLock()

    private init(handle: FileHandle, probe: RenderProbe) {
        self.handle = handle
        self.probe = probe
    }

    /// Starts logging `player`'s renders when the environment asks for it; a file that cannot be made is reported
    /// on standard error and logging stays off (the session goes on).
    package static func startIfAsked(for player: GStreamerPlayer,
                                     environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["TANDEM_RENDER_LOG"], !path.isEmpty else { return }
        guard FileManager.default.createFile(atPath: path, contents: Data("timens \(monotonicOffset())\n".utf8)),
              let handle = FileHandle(forWritingAtPath: path) else {
            FileHandle.standardError.write(Data("tandem: cannot write the render log \(path); going on without it\n".utf8))
            return
        }
        handle.seekToEndOfFile()
        let log = RenderLog(handle: handle, probe: player.renderProbe)
        lock.withLock { started.append(log) }
        let thread = Thread { log.run() }
        thread.name = "render-log"
        thread.start()
    }

    /// This process's CLOCK_MONOTONIC offset (ns) in its time namespace, from the kernel; 0 when there is none.
    package static func monotonicOffset(_ text: String? = try? String(contentsOfFile: "/proc/self/timens_offsets",
                                                                        encoding: .utf8)) -> Int64 {
        guard let text else { return 0 }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 3, fields[0] == "monotonic" || fields[0] == "1",
                  let seconds = Int64(fields[1]), let nanoseconds = Int64(fields[2]) else { continue }
            return seconds * 1_000_000_000 + nanoseconds
        }
        return 0
    }

    private func run() {
        while true {
            usleep(50_000)
            let records = probe.drain()
            guard !records.isEmpty else { continue }
            var text = ""
            text.reserveCapacity(records.count * 32)
            for record in records {
                text += "\(record.kind == .audio ? "a" : "v") \(record.itemTime) \(record.monotonicTime)\n"
            }
            handle.write(Data(text.utf8))
        }
    }
}
