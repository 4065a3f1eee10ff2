import Foundation
import Tandem
import TandemPeer
import TandemTesting

/// `tandem bench sync --processes` (and `--netlab`): every peer a `tandem` process of its own, with a clock of its
/// own (a time namespace shifted by whole seconds), judged from ground truth (each process's render log, brought
/// back to the machine's true CLOCK_MONOTONIC by the shift the kernel reports).
///
/// On loopback, everyone listens and connects on 127.0.0.1. In the lab, the host runs in `home-a` behind its NAT
/// router and is reached through the port the router mapped (UPnP-IGD); joiners run in `home-b` and `home-c` (each
/// behind a NAT of its own) and in `internet`, in turn. Joiners' connections carry the chosen link profile in-process (there is no
/// netem). The host gets the commands on its stdin, as a script would give them.
package enum ProcessSyncBench {
    package enum Network: String, Codable, Sendable { case loopback, netlab }

    package struct Configuration: Sendable {
        package var peers = 3
        package var network = Network.loopback
        package var link = "loopback"
        package var duration = 60.0
        package var seed: UInt64 = 1
        /// Largest shift of a peer's clock (whole seconds).
        package var maxClockShift = 10
        /// Joiners take their timelines over TCP only, without the datagram copies: to compare.
        package var timelinesOverTCPOnly = false
        /// The first joiner gives the commands instead of the host: its requests cross its link to the host's
        /// server, and it proposes their starts (`TimelineRequest.proposedStart`).
        package var commandsFromJoiner = false
        /// Joiners reach each other without the server where they can (`tandem join --no-direct` otherwise).
        package var directPaths = true
        package var file: String

        package init(file: String) { self.file = file }

        /// The command line's figures: `--peers` (nil: 3), `--link`, `--duration`, `--seed`, `--max-clock-offset`
        /// (seconds, as the largest shift of a peer's clock), `--timelines-over-tcp`, `--joiner-commands`.
        package init(file: String, peers: Int?, link: String, duration: Double, seed: UInt64, maxClockOffset: Double,
                     timelinesOverTCPOnly: Bool, commandsFromJoiner: Bool = false, directPaths: Bool = true) {
            self.commandsFromJoiner = commandsFromJoiner
            self.directPaths = directPaths
            self.file = file
            self.peers = peers ?? 3
            self.link = link
            self.duration = duration
            self.seed = seed
            self.maxClockShift = Int(maxClockOffset.rounded())
            self.timelinesOverTCPOnly = timelinesOverTCPOnly
        }
    }

    /// One command and when it was asked for (true CLOCK_MONOTONIC), with what it should change.
    struct Mark {
        var time: Int64
        var command: String
        var effect: GroundTruth.Effect
    }

    package struct Result: Codable, Sendable {
        package struct Peer: Codable, Sendable {
            package var name: String
            package var where_: String
            package var clockShiftSeconds: Int
            package var frames: Int
            /// A joiner's render time less the host's, frame by frame in steady play (ms, positive late; the host's
            /// clock is the session's, so this is the joiner's clock estimate and its pipeline): the median (how
            /// far off it stays) and the 1st and 99th percentiles (with the median, how much it wanders).
            package var steadyOffsetMs: SteadyOffset?
            /// Where its clock answers' arrival times came from, as its `position` events said: `kernel` or `user`,
            /// with the share of events that said each (nil: no datagram probes).
            package var clockStamps: String?
            /// A joiner's clock estimate less the truth, from its `position` events once a second after the first
            /// 5 s (ms; the truth is the two namespaces' shifts, `clockOffsetMs` should be host − joiner).
            package var clockErrorMs: SteadyOffset?
            /// How its sink threads were scheduled, as its `position` events said (`realtime`, `raised`, `ordinary`).
            package var sinkThreads: String?
            /// Whom it reached without the server, and how far, as its last `position` event with any said.
            package var directPaths: String?
        }
        package struct SteadyOffset: Codable, Sendable {
            package var median: Double
            package var p1: Double
            package var p99: Double
        }
        package var network: Network
        package var link: String
        package var peers: [Peer]
        package var duration: Double
        /// Render skew over every frame shown by all peers while playing, and over steady play (from 2 s after a
        /// command until the next).
        package var skew: SyncReport.Stats
        package var steadySkew: SyncReport.Stats
        /// Request (a line on the host's stdin) to every peer rendering its effect.
        package var commands: [SyncReport.CommandLatency]
        /// Who gave the commands when it was not the host (`--joiner-commands`).
        package var commandsFrom: String?
    }

    static let frameInterval = TimeSpan.milliseconds(1000.0 / 30).nanoseconds

    /// The true CLOCK_MONOTONIC (this process's, less its own time-namespace shift).
    static func trueNow() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec) - ownShift
    }
    static let ownShift = RenderLog.monotonicOffset()

    /// What is wrong with the command line's choices for a run of processes (`processes`: `--processes` or
    /// `--netlab`), in words that say what to do; nil when nothing is. `otherPolicies`: a `--policy` other than
    /// Tandem's; `inProcessOptions`: any of the in-process run's own options.
    package static func problem(processes: Bool, peers: Int?, otherPolicies: Bool, inProcessOptions: Bool,
                                joinerCommands: Bool, noDirect: Bool) -> String? {
        guard processes else {
            if joinerCommands { return "--joiner-commands is for --processes or --netlab" }
            if noDirect { return "--no-direct is for --processes or --netlab" }
            return nil
        }
        if let peers, !(2...8).contains(peers) { return "--processes and --netlab take 2 to 8 --peers" }
        if otherPolicies { return "--processes and --netlab run Tandem's own policy only; leave out --policy" }
        if inProcessOptions {
            return "--plot, --frames, --precise-wait, --rate-fallback, --prepare-rounds and --start-margin are for the "
                + "in-process run; leave them out with --processes or --netlab"
        }
        return nil
    }

    /// Runs on loopback, and then in the lab when `netlab` is set, with the same configuration otherwise; prints
    /// the figures side by side and writes them to `json` when given.
    package static func runAll(_ configuration: Configuration, netlab: Bool, json: String?,
                               say: @Sendable (String) -> Void) async throws {
        var configuration = configuration
        var results: [Result] = []
        for network in netlab ? [Network.loopback, .netlab] : [.loopback] {
            configuration.network = network
            results.append(try await run(configuration, say: say))
        }
        say(summary(results))
        if let json { try BenchJSON.write(results, to: json) }
    }

    package static func run(_ configuration: Configuration, say: @Sendable (String) -> Void) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-bench-\(getpid())-\(configuration.network.rawValue)")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        if configuration.network == .netlab {
            let up = try BenchNetlab.run(["up"])
            guard up.status == 0 else { throw BenchError("the network lab did not come up: \(up.output.suffix(800))") }
        }
        defer { if configuration.network == .netlab { _ = try? BenchNetlab.run(["down"]) } }

        var random = SeededRandom(seed: configuration.seed)
        func shift() -> Int {
            guard configuration.maxClockShift > 0, PeerProcess.canShiftClocks else { return 0 }
            return 1 + Int(random.unit() * Double(configuration.maxClockShift))
        }
        let names = ["ann", "bob", "cat", "dan", "eve", "fay", "gus", "hal"]
        let lab = configuration.network == .netlab
        func namespace(_ node: String) -> String? { lab ? BenchNetlab.prefix + node : nil }

        var peers: [PeerProcess] = []
        var described: [Result.Peer] = []
        defer { for peer in peers where peer.exitCode == nil { peer.send("end") } }
        let hostShift = shift()
        let host = try PeerProcess(
            name: names[0],
            // Not on direct paths: beside its own server, as in every home, it is one leg from each joiner that
            // way already (and a host's loopback address is never given to a peer elsewhere); here, where all of
            // them are on loopback, it would be, on a way the simulated links do not delay from its end.
            arguments: ["host", configuration.file, "--headless", "--json", "--name", names[0], "--no-direct"]
                + (lab ? [] : ["--bind", "127.0.0.1", "--port", "0"]),
            placement: .init(namespace: namespace("home-a"), clockShiftSeconds: hostShift),
            environment: ["TANDEM_PORT_MAPPING": lab ? "on" : "off"],
            renderLog: directory.appendingPathComponent("ann.log").path)
        peers.append(host)
        described.append(.init(name: names[0], where_: lab ? "home-a" : "loopback", clockShiftSeconds: hostShift, frames: 0))
        guard let invite = try await host.waitFor("invite", within: 20)["invite"] as? String else {
            throw BenchError("the host's invite event has no invite")
        }
        if lab {
            let reach = try await host.waitFor("reachability", within: 20)
            say("host in home-a: \(reach["text"] as? String ?? "?")")
            guard reach["reachable"] as? Bool == true else { throw BenchError("the host in the lab is not reachable: \(reach)") }
        }
        for index in 1..<configuration.peers {
            let node = ["home-b", "home-c", "internet"][(index - 1) % 3]
            let peerShift = shift()
            let joiner = try PeerProcess(
                name: names[index], arguments: ["join", configuration.file, "--headless", "--json", "--name", names[index]]
                    + (configuration.directPaths ? [] : ["--no-direct"]),
                placement: .init(namespace: namespace(node), clockShiftSeconds: peerShift),
                environment: ["TANDEM_INVITE": invite,
                              BenchLink.variable: "\(configuration.link):\(configuration.seed &* 1_000_003 &+ UInt64(index))"
                                  + (configuration.timelinesOverTCPOnly ? ":\(BenchLink.tcpTimelines)" : "")],
                renderLog: directory.appendingPathComponent("\(names[index]).log").path)
            peers.append(joiner)
            described.append(.init(name: names[index], where_: lab ? node : "loopback", clockShiftSeconds: peerShift, frames: 0))
        }
        for joiner in peers.dropFirst() { _ = try await joiner.waitFor("joined", within: 30) }
        say("\(configuration.peers) peers joined (\(configuration.network.rawValue), link \(configuration.link)); clocks shifted by "
            + described.map { "\($0.name) +\($0.clockShiftSeconds) s" }.joined(separator: ", "))
        // Let clock sync settle before the first start, as people take a moment before pressing play.
        try await Task.sleep(for: .seconds(3))

        let commander = configuration.commandsFromJoiner && peers.count > 1 ? peers[1] : host
        if commander !== host { say("commands from \(commander.name), a joiner") }
        let marks = try await schedule(host: commander, peers: peers, duration: configuration.duration, say: say)
        host.send("end")
        for peer in peers { await peer.finish(within: 15) }

        var truth = GroundTruth()
        for (index, peer) in peers.enumerated() {
            // Which stamps the peer's position events named, and how often (the last few, after the host ended,
            // name none).
            // "receive/send", e.g. "kernel/kernel".
            let stamps = peer.events("position").compactMap { event -> String? in
                guard let receive = event["clockStamps"] as? String else { return nil }
                return "\(receive)/\(event["clockSendStamps"] as? String ?? "–")"
            }
            if !stamps.isEmpty {
                described[index].clockStamps = Dictionary(grouping: stamps, by: { $0 }).sorted { $0.key < $1.key }
                    .map { "\($0.key) \(100 * $0.value.count / stamps.count) %" }.joined(separator: ", ")
            }
            described[index].sinkThreads = peer.events("position").compactMap { $0["sinkThreads"] as? String }.last
            described[index].directPaths = peer.events("position").compactMap { $0["directPaths"] as? String }.last
            if index > 0 {
                let truth = Double(described[0].clockShiftSeconds - described[index].clockShiftSeconds) * 1000
                let errors = peer.events("position").dropFirst(5).compactMap { $0["clockOffsetMs"] as? Double }
                    .map { $0 - truth }.sorted()
                if !errors.isEmpty {
                    func at(_ q: Double) -> Double { errors[min(errors.count - 1, Int(q * Double(errors.count - 1) + 0.5))] }
                    described[index].clockErrorMs = .init(median: at(0.5), p1: at(0.01), p99: at(0.99))
                }
            }
            _ = truth.addPeer()
            let frames = try peer.frames()
            described[index].frames = frames.count
            truth.record(index, frames: frames)
        }
        return report(truth: truth, marks: marks, configuration: configuration, peers: described)
    }

    /// The commands, as a person at the host (or at the first joiner, `commandsFromJoiner`) would give them: start,
    /// pause, play, seek, rate 1.5× and back, repeated until `duration` seconds have passed.
    private static func schedule(host: PeerProcess, peers: [PeerProcess], duration: Double,
                                 say: @Sendable (String) -> Void) async throws -> [Mark] {
        var marks: [Mark] = []
        let start = trueNow()
        let end = start + Int64(duration * 1e9)
        func command(_ line: String, _ effect: GroundTruth.Effect) {
            marks.append(Mark(time: trueNow(), command: line.split(separator: " ").first.map(String.init) ?? line, effect: effect))
            host.send(line)
        }
        func wait(_ seconds: Double) async throws -> Bool {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            if let gone = peers.first(where: { $0.exitCode != nil }) {
                throw BenchError("\(gone.name) exited (\(gone.exitCode!)) during the run: \(gone.stderrTail.suffix(600))")
            }
            return trueNow() < end
        }
        var cycle = 0
        while trueNow() < end {
            if cycle == 0 { command("play", .starts(near: 0)) } else { command("seek 0", .starts(near: 0)) }
            say("cycle \(cycle + 1)")
            guard try await wait(cycle == 0 ? 10 : 8) else { break }
            command("pause", .stops)
            guard try await wait(2) else { break }
            command("play", .starts(near: nil))
            guard try await wait(6) else { break }
            command("seek 2", .starts(near: TimeSpan.seconds(2).nanoseconds))
            guard try await wait(6) else { break }
            command("rate 1.5", .rate(1.5))
            guard try await wait(5) else { break }
            command("rate 1", .rate(1))
            guard try await wait(3) else { break }
            cycle += 1
        }
        return marks
    }

    static func report(truth: GroundTruth, marks: [Mark], configuration: Configuration, peers: [Result.Peer]) -> Result {
        let everyone = Set(0..<peers.count)
        let showings = truth.showings(window: TimeSpan.milliseconds(500).nanoseconds, minimumPeers: peers.count)
            .filter { Set($0.times.keys) == everyone }
        let settle = TimeSpan.seconds(2).nanoseconds
        let commandTimes = marks.map(\.time)
        let steady = showings.filter { showing in
            guard let last = commandTimes.last(where: { $0 <= showing.median }) else { return false }
            return showing.median - last >= settle
        }
        var latencies: [String: [Int64]] = [:]
        var missed: [String: Int] = [:]
        for mark in marks {
            let times = (0..<peers.count).map { truth.effectTime(of: $0, after: mark.time, mark.effect, frameInterval: frameInterval) }
            if times.allSatisfy({ $0 != nil }), let latest = times.compactMap({ $0 }).max(), latest - mark.time < TimeSpan.seconds(10).nanoseconds {
                latencies[mark.command, default: []].append(latest - mark.time)
            } else {
                missed[mark.command, default: 0] += 1
            }
        }
        let maxOneWay = configuration.link == "loopback" ? 0
            : NetworkPath.named(configuration.link).map(SimulatedNetworkPath.nominalOneWay) ?? 0
        let commands = ["play", "pause", "seek", "rate"].compactMap { name -> SyncReport.CommandLatency? in
            guard latencies[name] != nil || missed[name] != nil else { return nil }
            let target = Double(maxOneWay) / 1e6 + 60
            let values = latencies[name] ?? []
            return SyncReport.CommandLatency(command: name, stats: .init(nanoseconds: values), missed: missed[name] ?? 0,
                                             target: target, withinTarget: values.filter { Double($0) / 1e6 <= target }.count)
        }
        var peers = peers
        for index in peers.indices.dropFirst() {
            let offsets = steady.compactMap { showing in showing.times[index].flatMap { time in showing.times[0].map { time - $0 } } }
                .sorted()
            guard !offsets.isEmpty else { continue }
            func at(_ quantile: Double) -> Double {
                Double(offsets[min(offsets.count - 1, Int(quantile * Double(offsets.count - 1) + 0.5))]) / 1e6
            }
            peers[index].steadyOffsetMs = .init(median: at(0.5), p1: at(0.01), p99: at(0.99))
        }
        return Result(network: configuration.network, link: configuration.link, peers: peers,
                      duration: configuration.duration, skew: .init(nanoseconds: showings.map(\.spread)),
                      steadySkew: .init(nanoseconds: steady.map(\.spread)), commands: commands,
                      commandsFrom: configuration.commandsFromJoiner && peers.count > 1 ? peers[1].name : nil)
    }
}
