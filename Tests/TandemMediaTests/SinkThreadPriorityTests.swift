import CTandemGStreamer
import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// The streaming threads of a real playing pipeline, read back from the kernel (`/proc/self/task/*/stat`): the ones
/// that feed the sinks are real-time where the system allows it (tests run as root here; elsewhere they stay
/// ordinary), the demuxing and decoding ones are lowered.
@Suite("Sink thread priority", .serialized)
struct SinkThreadPriorityTests {
    struct ThreadInfo {
        var name: String
        var policy: Int
        var nice: Int
    }

    /// Every thread of this process: its name, scheduling policy (0 ordinary, 1 SCHED_FIFO) and nice value.
    static func threads() -> [ThreadInfo] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid -> ThreadInfo? in
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
            let name = String(stat[stat.index(after: open)..<close])
            // After the name: state is field 3; nice is field 19, policy field 41 (1-based, proc(5)).
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 38, let nice = Int(fields[16]), let policy = Int(fields[38]) else { return nil }
            return ThreadInfo(name: name, policy: policy & 0xff, nice: nice)
        }
    }

    @Test("the threads that feed the sinks run real-time where allowed; demuxing and decoding ones are lowered")
    func sinkThreadsAreRealTime() async throws {
        #expect(GStreamer.sinkThreadPriority == .realtime, "the default")
        let player = try Samples.headlessPlayer()
        _ = try await player.load(Samples.countdown)
        let start = player.sessionTimeNow() + .milliseconds(200)
        try await player.play(from: .zero, atSessionTime: start, rate: 1)
        try await sleep(ms: 600)
        let all = Self.threads()
        let feeding = all.filter { $0.name.hasPrefix("vqueue") || $0.name.hasPrefix("aqueue") }
        let others = all.filter { $0.name.hasPrefix("multiqueue") || $0.name.hasPrefix("matroskademux") }
        #expect(!feeding.isEmpty, "no sink thread among \(all.map(\.name))")
        #expect(!others.isEmpty, "no demuxing thread among \(all.map(\.name))")
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(14), &limit)   // RLIMIT_RTPRIO (Linux), which Glibc does not name for Swift
        if geteuid() == 0 || limit.rlim_cur >= 10 {
            for thread in feeding { #expect(thread.policy == Int(SCHED_FIFO), "\(thread.name): policy \(thread.policy)") }
            #expect(GStreamer.sinkThreadScheduling == "realtime")
        } else {
            for thread in feeding { #expect(thread.policy != Int(SCHED_FIFO) && thread.nice <= 0, "\(thread.name)") }
        }
        for thread in others { #expect(thread.policy != Int(SCHED_FIFO) && thread.nice == 5, "\(thread.name): nice \(thread.nice)") }
        await player.close()
    }
}
