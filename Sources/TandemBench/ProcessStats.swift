import Foundation

/// CPU time of this process's threads, split into media work (GStreamer's streaming threads) and the rest
/// (coordination: network, clock sync, coordinators, the server), read from /proc.
package struct ThreadCPU: Sendable {
    /// Thread id → (name, CPU ns).
    package var threads: [Int: (name: String, cpu: Int64)]

    package static func read() -> ThreadCPU {
        var threads: [Int: (String, Int64)] = [:]
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let tid = Int(task),
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state(0) … utime(11) stime(12), in clock ticks.
            guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { continue }
            threads[tid] = (name, (user + system) * 1_000_000_000 / max(1, ticks))
        }
        return ThreadCPU(threads: threads)
    }

    /// Whether a thread does media work: GStreamer names its streaming threads after the element and pad
    /// ("vp8dec0:sink", "multiqueue0:src", "typefind:sink"), and its pools "gst…".
    package static func isMedia(_ name: String) -> Bool {
        name.contains(":") || name.hasPrefix("gst") || name.hasPrefix("aqueue") || name.hasPrefix("vqueue")
    }

    /// CPU used since `earlier` (ns): (media, everything else).
    package func since(_ earlier: ThreadCPU) -> (media: Int64, other: Int64) {
        var media: Int64 = 0, other: Int64 = 0
        for (tid, thread) in threads {
            let used = thread.cpu - (earlier.threads[tid]?.cpu ?? 0)
            if Self.isMedia(thread.name) { media += used } else { other += used }
        }
        return (media, other)
    }
}

/// A one-line description of the machine, for reports.
package func machineDescription() -> String {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
    var model = ""
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }) {
        model = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    }
    return "\(cores) cores\(model.isEmpty ? "" : " (\(model))"), \(String(format: "%.0f", memory)) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
}
