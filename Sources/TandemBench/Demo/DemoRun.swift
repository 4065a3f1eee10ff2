import Foundation
import Synchronization
import Tandem
import TandemPeer
import TandemTesting

/// The demo's script (`tandem demo`) and its report, measured from ground truth.
package struct DemoRun {
    package let file: String
    package let show: Bool

    package init(file: String, show: Bool) {
        self.file = file
        self.show = show
    }

    /// Something that happened, on the true clock.
    package struct Mark: Sendable {
        var time: Int64
        var label: String
        var peer: Int
        var effect: GroundTruth.Effect?
    }

    /// Runs the script. `print` writes a line; on a terminal, `notice` writes one above the status line that
    /// `status` redraws; `finished` is called when the session is over, before the report. When `interrupted`
    /// returns before the script is over (a signal, through the command's `ServiceGroup`), the script stops where
    /// it is, ann ends the session, and the report covers what was measured until then.
    package func run(print printLine: @escaping @Sendable (String) -> Void,
                     notice: (@Sendable (String) -> Void)?, status: (@Sendable (String) -> Void)?,
                     finished: () -> Void, interrupted: (@Sendable () async -> Void)? = nil) async throws {
        let clock = SystemMonotonicClock()
        let started = clock.now.nanoseconds
        @Sendable func elapsed() -> String { String(format: "%5.1f s", TimeSpan(nanoseconds: clock.now.nanoseconds - started).seconds) }
        @Sendable func say(_ text: String) {
            if let notice { notice("\(elapsed())  \(text)") } else { printLine("\(elapsed())  \(text)") }
        }

        printLine("Tandem demo: an embedded server and three peers in this process, playing \(URL(fileURLWithPath: file).lastPathComponent).")
        printLine("Every peer has its own GStreamer player (\(show ? "real output where available" : "headless")) and its own TCP connection.")
        let ensemble = try await Ensemble.start(file: file, title: "Demo night")
        let sinks: GStreamerPlayer.Configuration = show ? GStreamerPlayer.Configuration() : .headless
        let ann = try await ensemble.add(.init(name: "ann", player: sinks))
        let bob = try await ensemble.add(.init(name: "bob", loadDelay: .seconds(2.5), player: sinks))
        let carol = try await ensemble.add(.init(name: "carol", player: sinks))
        let marks = Locked<[Mark]>([])
        let lateJoiner = Locked<Ensemble.Member?>(nil)
        @Sendable func mark(_ label: String, _ member: Ensemble.Member, _ effect: GroundTruth.Effect?) {
            marks.withLock { $0.append(Mark(time: clock.now.nanoseconds, label: label, peer: member.index, effect: effect)) }
        }
        /// Waits until `seconds` into the run; throws when the run is interrupted.
        @Sendable func at(_ seconds: Double) async throws {
            let wait = started + TimeSpan.seconds(seconds).nanoseconds - clock.now.nanoseconds
            if wait > 0 { try await Task.sleep(for: .nanoseconds(wait)) }
            try Task.checkCancellation()
        }

        let completed = await withTaskGroup(of: Bool.self) { group in
            // Everything the group is told, as ann's player sees it, and the status line.
            group.addTask {
                for await notice in ann.peer.session.notices { say(notice.text) }
                return false
            }
            group.addTask {
                while !Task.isCancelled {
                    ensemble.collect()
                    status?(Self.statusLine(ensemble, since: started))
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return false
            }
            if let interrupted {
                group.addTask {
                    await interrupted()
                    return false
                }
            }
            group.addTask {
                do {
                    say("ann hosts; bob's copy is slow to load (2.5 s), carol's is quick")
                    try await at(1)
                    say("ann presses play — nobody starts until bob has loaded")
                    mark("play (waits for bob)", ann, .starts(near: 0))
                    await ann.peer.play()
                    try await at(8)
                    mark("bob pauses", bob, .stops)
                    await bob.peer.pause()
                    try await at(10)
                    mark("ann plays", ann, .starts(near: nil))
                    await ann.peer.play()
                    try await at(13)
                    mark("carol seeks to 0:25", carol, .starts(near: TimeSpan.seconds(25).nanoseconds))
                    await carol.peer.seek(to: .seconds(25))
                    try await at(16)
                    say("dave joins late; the group plays on")
                    let dave = try await ensemble.add(.init(name: "dave", player: sinks))
                    lateJoiner.withLock { $0 = dave }
                    try await at(21)
                    say("carol's player stalls for 2 s (as a starved network stream would)")
                    mark("carol stalls", carol, .stops)
                    await carol.drill.stall(for: .seconds(2))
                    mark("carol recovers", carol, .starts(near: nil))
                    try await at(28)
                    return true
                } catch {
                    return false
                }
            }
            // The script ends the run, or an interruption does; the rest stop with it.
            var completed = false
            while let done = await group.next() {
                completed = done
                break
            }
            group.cancelAll()
            return completed
        }
        say(completed ? "ann ends the session for everyone" : "interrupted — ann ends the session for everyone")
        await ensemble.finish()
        finished()
        printLine("")
        if let dump = ProcessInfo.processInfo.environment["TANDEM_DUMP_FRAMES"] {
            let text = ensemble.withTruth { truth in
                truth.frames.enumerated().flatMap { peer, frames in frames.map { "\(peer),\($0.item),\($0.time - started)" } }
                    .joined(separator: "\n")
            }
            try? text.write(toFile: dump, atomically: true, encoding: .utf8)
        }
        if !completed {
            printLine(String(format: "Interrupted after %.1f s: the report covers what happened until then.",
                             TimeSpan(nanoseconds: clock.now.nanoseconds - started).seconds))
        }
        printLine(Self.report(ensemble: ensemble, marks: marks.withLock { $0 }, lateJoiner: lateJoiner.withLock { $0 },
                              started: started))
    }

    package static func statusLine(_ ensemble: Ensemble, since started: Int64) -> String {
        let now = SystemMonotonicClock().now.nanoseconds
        var parts = [String(format: "%5.1f s", TimeSpan(nanoseconds: now - started).seconds)]
        for member in ensemble.all {
            let position = member.drill.currentItemTime().map { formatClock($0.nanoseconds) } ?? "–"
            parts.append("\(member.name) \(position)")
        }
        let recent = ensemble.withTruth { truth in
            truth.showings(window: TimeSpan.milliseconds(500).nanoseconds, since: now - TimeSpan.seconds(1).nanoseconds).map(\.spread).max()
        }
        if let recent { parts.append(String(format: "skew %.3f ms", Double(recent) / 1e6)) }
        return parts.joined(separator: " │ ")
    }

    package static func report(ensemble: Ensemble, marks: [Mark], lateJoiner: Ensemble.Member?,
                               started: Int64) -> String {
        let members = ensemble.all
        let frameInterval = TimeSpan.milliseconds(1000.0 / 30).nanoseconds
        var lines: [String] = []
        lines.append("Command latency — from the request to every peer rendering its effect (ground truth):")
        var table = TextTable(["at", "command", "every peer by", "per peer"])
        for mark in marks {
            guard let effect = mark.effect else { continue }
            let present = members.filter { $0.joinStarted < mark.time }
            let times = ensemble.withTruth { truth in
                present.map { truth.effectTime(of: $0.index, after: mark.time, effect, frameInterval: frameInterval) }
            }
            let perPeer = zip(present, times).map { member, time in
                "\(member.name) " + (time.map { ms(Double($0 - mark.time)) } ?? "–")
            }
            let all = times.allSatisfy { $0 != nil } ? times.compactMap { $0 }.max().map { ms(Double($0 - mark.time)) } ?? "–" : "–"
            table.add([String(format: "%.1f s", TimeSpan(nanoseconds: mark.time - started).seconds), mark.label, all,
                       perPeer.joined(separator: ", ")])
        }
        lines.append(table.rendered)
        lines.append("")

        // Skew: the spread of render times of the same frame across peers, away from the moments things change.
        let changes = marks.map(\.time) + (lateJoiner.map { [$0.joinStarted] } ?? [])
        let showings = ensemble.withTruth { $0.showings() }
        let steady = showings.filter { showing in
            !changes.contains { showing.median >= $0 && showing.median < $0 + TimeSpan.seconds(1.5).nanoseconds }
        }
        let skew = Distribution(steady.map(\.spread))
        lines.append("Render skew between peers while playing (\(steady.count) frames shown by 2–4 peers; ground truth):")
        lines.append("  p50 \(ms(skew.p50))   p99 \(ms(skew.p99))   max \(ms(skew.max))")
        let firstShowings = marks.filter { if case .starts = $0.effect { true } else { false } }.compactMap { mark in
            showings.first { $0.median > mark.time && $0.times.count >= 3 }.map { (mark.label, $0.spread) }
        }
        if !firstShowings.isEmpty {
            lines.append("  first frame after each start: " + firstShowings.map { "\($0.0): \(ms(Double($0.1)))" }.joined(separator: " · "))
        }

        lines.append("")
        if let lateJoiner { lines.append(Self.lateJoinerLine(lateJoiner, showings: showings)) }
        lines.append("Clock sync (error bound as estimated by each peer): " + members.map { member in
            "\(member.name) " + (member.peer.connection.clockQuality().map { ms(Double($0.errorBound.nanoseconds)) } ?? "–")
        }.joined(separator: " · "))
        lines.append("")
        lines.append("Reproduce: tandem demo. Precise figures under simulated networks and clock errors: tandem bench sync.")
        return lines.joined(separator: "\n")
    }
    /// The late joiner: from starting to join to rendering within 1 ms of the group, frame after frame.
    static func lateJoinerLine(_ lateJoiner: Ensemble.Member, showings: [GroundTruth.Showing]) -> String {
        let frameInterval = TimeSpan.milliseconds(1000.0 / 30).nanoseconds
        let joinerFrames = showings.filter { $0.times[lateJoiner.index] != nil && $0.times.count >= 2 }
        var inSync: Int64?
        var run = 0
        for showing in joinerFrames {
            let others = showing.times.filter { $0.key != lateJoiner.index }.map(\.value)
            let reference = others.sorted()[others.count / 2]
            if abs(showing.times[lateJoiner.index]! - reference) <= TimeSpan.milliseconds(1).nanoseconds {
                run += 1
                if run == 10 { inSync = showing.times[lateJoiner.index]! - 9 * frameInterval; break }
            } else {
                run = 0
            }
        }
        return "Late joiner (\(lateJoiner.name)): " + (inSync.map {
            "within 1 ms of the group \(String(format: "%.2f s", TimeSpan(nanoseconds: $0 - lateJoiner.joinStarted).seconds)) after it started to join"
        } ?? "not in sync within 1 ms during the run")
    }
}
