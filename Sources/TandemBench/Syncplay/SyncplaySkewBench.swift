import Foundation
import Tandem
import TandemPeer
import TandemSyncplay

/// `tandem bench syncplay`: two Tandem peers in one room of a real `syncplay-server` on loopback, as `tandem join
/// syncplay://…` runs them, each with a headless player: the second playing in the session the first offers the room
/// (`findTandemPeers`), or, with `--client syncplay-only`, each following the room through its own bridge. One drives: play, a seek, a pause
/// by the other and play again. The skew is ground truth: the true times at which the two players' sinks released
/// the same video frame (their render probes), not either peer's estimate of itself.
package enum SyncplaySkewBench {
    package struct Report: Sendable, CustomStringConvertible {
        /// Who was measured, through what.
        package var setup = "2 Tandem peers through syncplay-server"
        package var duration: Double
        /// Frames both peers rendered (within a second of each other) in steady play: at least 2 s after a command.
        package var showings: Int
        /// Skew over those showings (ns): p50, p99, max.
        package var p50: Int64
        package var p99: Int64
        package var max: Int64
        /// For each command that starts rendering (play, seek), how long after it (s) both peers first rendered
        /// within 100 ms of each other (nil: never within the run).
        package var settling: [(command: String, seconds: Double?)]
        /// How far apart (ns) the two peers stopped rendering after the pause, when both did.
        package var pauseApart: Int64?
        /// Lines that say more about one kind of run.
        package var notes: [String] = []

        package var description: String {
            func ms(_ ns: Int64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
            let settled = settling.map { "\($0.command) \($0.seconds.map { String(format: "%.2f s", $0) } ?? "never")" }
            let pause = pauseApart.map { "; the pause stopped both \(ms($0)) apart" } ?? ""
            return """
                syncplay room: \(setup), \(String(format: "%.0f", duration)) s, \(showings) frames rendered by both in steady play
                render skew between the peers (ground truth): p50 \(ms(p50)), p99 \(ms(p99)), max \(ms(max))
                within 100 ms of each other again after: \(settled.joined(separator: ", "))\(pause)
                """ + notes.map { "\n" + $0 }.joined()
        }
    }

    /// Runs the room for about `duration` seconds (at least 10) on `media` (a file with video, 30 s or longer).
    package static func run(media: String, duration: Double = 24, findTandemPeers: Bool = true) async throws(BenchError) -> Report {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let probe: MediaProbe
        do { probe = try await MediaProbe.probe(media) } catch { throw BenchError("cannot read \(media): \(error)") }
        let address: SyncplayAddress
        do { address = try SyncplayAddress(parsing: "syncplay://127.0.0.1:\(server.port)/bench") } catch {
            throw BenchError("\(error)")
        }
        var rooms: [SyncplayBridge.RoomSession] = []
        var players: [GStreamerPlayer] = []
        var running: [Task<Void, Never>] = []
        defer { for task in running { task.cancel() } }
        do {
            for name in ["ann", "bob"] {
                let player = try GStreamerPlayer(configuration: .headless)
                let room = try await SyncplayBridge.joinRoom(address, password: nil, name: name, file: media, probe: probe,
                                                             player: player, options: TandemClient.Options(),
                                                             findTandemPeers: findTandemPeers)
                players.append(player)
                rooms.append(room)
                running.append(Task { await room.run() })
                running.append(Task { await room.peer.run() })
            }
        } catch let error as BenchError {
            throw error
        } catch {
            throw BenchError("the peers could not join the room: \(error)")
        }
        var truth = GroundTruth(kind: .video)
        for _ in players { _ = truth.addPeer() }
        let clock = SystemMonotonicClock()
        let start = clock.now.nanoseconds
        // ann plays, seeks, bob pauses and plays again, in the first 55 % of the run; the rest is steady play.
        let length = Swift.max(10, duration)
        let plan: [(at: Double, who: Int, command: UserCommand, name: String, effect: GroundTruth.Effect)] = [
            (0.05 * length, 0, .play, "play", .starts(near: nil)), (0.25 * length, 0, .seek(to: 20), "seek", .starts(near: 20_000_000_000)),
            (0.45 * length, 1, .pause, "pause", .stops), (0.55 * length, 1, .play, "play again", .starts(near: nil)),
        ]
        var issued: [Issued] = []
        let end = start + Int64(length * 1e9)
        var next = 0
        while clock.now.nanoseconds < end {
            let elapsed = Double(clock.now.nanoseconds - start) / 1e9
            if next < plan.count, elapsed >= plan[next].at {
                issued.append(Issued(name: plan[next].name, effect: plan[next].effect, at: clock.now.nanoseconds))
                _ = await rooms[plan[next].who].peer.perform(plan[next].command)
                next += 1
            }
            for (index, player) in players.enumerated() { truth.collect(index, from: player.renderProbe) }
            try? await Task.sleep(for: .milliseconds(50))
        }
        for (index, player) in players.enumerated() { truth.collect(index, from: player.renderProbe) }
        for room in rooms { await room.peer.leave() }
        for room in rooms { await room.server?.shutdown() }
        var result = report(truth, issued: issued, duration: Double(end - start) / 1e9)
        result.setup = rooms.contains { $0.following != nil } ? "2 Tandem peers in one Tandem session found through a syncplay-server room"
            : "2 Tandem peers through syncplay-server, each following the room by Syncplay's rules"
        return result
    }

    /// A command of a run's plan as it was given: what it does to the players, and when.
    struct Issued {
        var name: String
        var effect: GroundTruth.Effect
        var at: Int64
        /// Whether the players render after it (a pause stops them).
        var starts: Bool { if case .stops = effect { false } else { true } }
    }

    /// The skew over showings at least 2 s after the last command, and each command's settling time.
    static func report(_ truth: GroundTruth, issued: [Issued], duration: Double) -> Report {
        let showings = truth.showings()
        let steady = showings.filter { showing in
            let last = issued.last { $0.at <= showing.median }
            return last.map { showing.median - $0.at >= 2_000_000_000 } ?? false
        }
        let spreads = steady.map(\.spread)
        var settling: [(String, Double?)] = []
        var pauseApart: Int64?
        for command in issued where !command.starts {
            let stops = (0..<2).compactMap { truth.effectTime(of: $0, after: command.at, .stops, frameInterval: 33_333_333) }
            if stops.count == 2 { pauseApart = abs(stops[0] - stops[1]) }
        }
        for (index, command) in issued.enumerated() where command.starts {
            let until = index + 1 < issued.count ? issued[index + 1].at : Int64.max
            // After a seek only frames from its new place count (frames of the old one may still be on their way).
            var from = Int64.min
            if case .starts(near: let place?) = command.effect { from = place - 500_000_000 }
            let first = showings.first {
                $0.median > command.at && $0.median < until && $0.item >= from && $0.spread <= 100_000_000
            }
            settling.append((command.name, first.map { Double($0.median - command.at) / 1e9 }))
        }
        return Report(duration: duration, showings: spreads.count,
                      p50: Distribution.percentile(50, of: spreads) ?? 0, p99: Distribution.percentile(99, of: spreads) ?? 0,
                      max: spreads.max() ?? 0, settling: settling, pauseApart: pauseApart)
    }
}
