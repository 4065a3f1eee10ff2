import Foundation
import Tandem
import TandemPeer

/// `tandem bench syncplay --client mpv`: a Tandem host (ann) with a headless player takes Syncplay clients on
/// loopback (`tandem host --syncplay-port`, through `HostSession` and `SyncplayGuests`), and a real
/// `syncplay --no-gui` with mpv (bob) joins her session. ann plays and seeks, bob pauses and plays again from his
/// client's console, then steady play. Both sides are ground truth: ann's render probe, and the pictures mpv's
/// output presented, stamped on arrival (`MpvFrameStamps`) — not mpv's or Syncplay's report of its position.
package enum SyncplayMpvSkewBench {
    /// Runs the session for about `duration` seconds (at least 10) on `media` (a file with video, 30 s or longer).
    package static func run(media: String, duration: Double = 24) async throws(BenchError) -> SyncplaySkewBench.Report {
        let items: HostedItems
        let hosted: HostSession
        let player: GStreamerPlayer
        do {
            items = try await HostedItems.make(paths: [media], title: nil, subtitle: nil, type: nil, fallbackURL: nil) {
                try await MediaProbe.probe($0)
            }
            player = try GStreamerPlayer(configuration: .headless)
            hosted = try await HostSession.start(
                items: items, file: media,
                on: .embedded(bind: "127.0.0.1", port: 0, tls: nil, web: nil, advertise: nil, streamsFirstFile: false),
                name: "ann", player: player, options: TandemClient.Options(), preview: nil, inviteFile: nil,
                syncplayPort: 0, syncplayBind: "127.0.0.1", warn: { _ in })
        } catch {
            throw BenchError("cannot host the session on \(media): \(error)")
        }
        let host = hosted.participant
        let running = Task { await host.run() }
        defer { running.cancel() }
        guard let guests = hosted.syncplay else { throw BenchError("the session takes no Syncplay clients") }
        let client: SyncplayClientProcess
        // mpv's own flip stamps, to check the pictures' arrivals against (`MpvFlipCheck`).
        let stats = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-mpv-stats-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: stats) }
        do {
            client = try SyncplayClientProcess(port: guests.listener.port, room: hosted.invite.session,
                                               password: hosted.invite.secret, name: "bob", file: media,
                                               mpvArguments: MpvFrameStamps.mpvArguments + MpvFlipCheck.arguments(file: stats))
        } catch {
            await close(hosted)
            throw error
        }
        defer { client.stop() }

        var truth = GroundTruth(kind: .video)
        _ = truth.addPeer()  // 0: ann, the Tandem host
        _ = truth.addPeer()  // 1: bob, mpv through Syncplay
        // bob is in: a ready participant of the session, and mpv has presented a stamped picture.
        var joined = false
        for _ in 0..<300 {
            truth.record(1, frames: client.drainFrames())
            let bobReady = await host.coordinator.otherParticipants.contains { state in
                guard state.participant.name == "bob", case .ready = state.readiness else { return false }
                return true
            }
            if bobReady, truth.lastFrame(of: 1) != nil {
                joined = true
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        guard joined else {
            await close(hosted)
            throw BenchError("the Syncplay client did not join with a presenting mpv within 30 s: \(client.text.suffix(600))")
        }

        let clock = SystemMonotonicClock()
        let start = clock.now.nanoseconds
        // ann plays and seeks, bob pauses and plays again, in the first 55 % of the run; the rest is steady play.
        let length = Swift.max(10, duration)
        enum Actor { case host(UserCommand), client(String) }
        let plan: [(at: Double, actor: Actor, name: String, effect: GroundTruth.Effect)] = [
            (0.05 * length, .host(.play), "play", .starts(near: nil)),
            (0.25 * length, .host(.seek(to: 20)), "seek", .starts(near: 20_000_000_000)),
            (0.45 * length, .client("p"), "pause", .stops), (0.55 * length, .client("p"), "play again", .starts(near: nil)),
        ]
        var issued: [SyncplaySkewBench.Issued] = []
        let end = start + Int64(length * 1e9)
        var next = 0
        while clock.now.nanoseconds < end {
            let elapsed = Double(clock.now.nanoseconds - start) / 1e9
            if next < plan.count, elapsed >= plan[next].at {
                issued.append(.init(name: plan[next].name, effect: plan[next].effect, at: clock.now.nanoseconds))
                switch plan[next].actor {
                case .host(let command): _ = await host.perform(command)
                case .client(let line): client.send(line)
                }
                next += 1
            }
            truth.collect(0, from: player.renderProbe)
            truth.record(1, frames: client.drainFrames())
            try? await Task.sleep(for: .milliseconds(50))
        }
        truth.collect(0, from: player.renderProbe)
        truth.record(1, frames: client.drainFrames())
        await close(hosted)
        // mpv writes the last of its stats as it quits.
        client.stop()
        let delays = MpvFlipCheck.delays(arrivals: truth.frames[1].map(\.time), flips: MpvFlipCheck.flips(in: stats))

        var report = SyncplaySkewBench.report(truth, issued: issued, duration: Double(end - start) / 1e9)
        report.setup = "Tandem host ann and syncplay + mpv bob in her session"
        report.notes = notes(truth, issued: issued)
        let ms = { (ns: Int64?) in ns.map { String(format: "%.2f ms", Double($0) / 1e6) } ?? "–" }
        report.notes.append("mpv's pictures reached the bench after its own flip stamps (--dump-stats), beyond the quickest 1 %: "
            + "p50 \(ms(Distribution.percentile(50, of: delays))), p99 \(ms(Distribution.percentile(99, of: delays))), "
            + "max \(ms(delays.max())) (\(delays.count) of \(truth.frames[1].count) pictures placed)")
        return report
    }

    private static func close(_ hosted: HostSession) async {
        await hosted.syncplay?.close()
        await hosted.participant.leave()
        await hosted.server?.shutdown()
    }

    /// Which side is ahead after each command, and how evenly each side's frames came (the timing's own jitter).
    static func notes(_ truth: GroundTruth, issued: [SyncplaySkewBench.Issued]) -> [String] {
        func ms(_ ns: Int64?) -> String { ns.map { String(format: "%.1f ms", Double($0) / 1e6) } ?? "–" }
        let showings = truth.showings()
        // Steady stretches: from 2 s after a command that starts rendering until the next command.
        var ahead: [String] = []
        for (index, command) in issued.enumerated() where command.starts {
            let until = index + 1 < issued.count ? issued[index + 1].at : Int64.max
            let offsets = showings.filter { $0.median >= command.at + 2_000_000_000 && $0.median < until }
                .compactMap { showing in showing.times[0].flatMap { ann in showing.times[1].map { ann - $0 } } }
            ahead.append("after \(command.name) \(ms(Distribution.percentile(50, of: offsets)))")
        }
        let steadyFrom = (issued.last?.at ?? 0) + 2_000_000_000
        let mpv = cadence(truth.frames[1].filter { $0.time >= steadyFrom })
        let tandem = cadence(truth.frames[0].filter { $0.time >= steadyFrom })
        return [
            "mpv ahead of ann's player (median of each steady stretch; negative: behind): \(ahead.joined(separator: ", "))",
            "frame times off a straight line in the last steady stretch, p50/p99 (the timing's own jitter): "
                + "mpv \(ms(mpv.p50))/\(ms(mpv.p99)) over \(mpv.count), ann \(ms(tandem.p50))/\(ms(tandem.p99)) over \(tandem.count)",
        ]
    }

    /// How far frames lie from a straight line of media time against arrival, fitted over each unbroken run of at
    /// least 30 frames: a steady output presents them evenly, so this is the jitter of the output's wake-ups and of
    /// the stamping together (a constant delay does not show).
    static func cadence(_ frames: [GroundTruth.Frame]) -> (p50: Int64?, p99: Int64?, count: Int) {
        var runs: [[GroundTruth.Frame]] = [[]]
        for frame in frames {
            if let last = runs[runs.count - 1].last,
               !(frame.item > last.item && frame.item - last.item <= 100_000_000 && frame.time - last.time <= 200_000_000) {
                runs.append([])
            }
            runs[runs.count - 1].append(frame)
        }
        var residuals: [Int64] = []
        for run in runs where run.count >= 30 {
            let x = run.map { Double($0.item - run[0].item) }, y = run.map { Double($0.time - run[0].time) }
            let n = Double(run.count), mx = x.reduce(0, +) / n, my = y.reduce(0, +) / n
            let sxx = zip(x, x).map { ($0 - mx) * ($1 - mx) }.reduce(0, +)
            guard sxx > 0 else { continue }
            let slope = zip(x, y).map { ($0 - mx) * ($1 - my) }.reduce(0, +) / sxx
            residuals += zip(x, y).map { Int64(abs($1 - (my + slope * ($0 - mx)))) }
        }
        return (Distribution.percentile(50, of: residuals), Distribution.percentile(99, of: residuals), residuals.count)
    }
}
