import Foundation
import Synchronization
import Tandem
import TandemPeer
import TandemTesting

/// `tandem bench sync`: N real peers in one process — each its own headless `GStreamerPlayer`, its own clock
/// error, its own simulated link to the real session server — follow a repeating schedule of commands and
/// faults while their render probes record what they really render and when.
package struct SyncBench {
    /// What is wrong with the command line's figures for `tandem bench sync`, in words for its user; nil when
    /// nothing is.
    package static func problem(peers: Int?, link: String, duration: Double, maxClockOffset: Double, maxDrift: Double,
                                preciseWait: Double, startMargin: Double?) -> String? {
        if !(2...32).contains(peers ?? 4) { return "--peers must be 2 to 32" }
        if !NetworkPaths.isKnown(link) { return "unknown --link \(link): use \(NetworkPaths.names.joined(separator: ", "))" }
        if duration < 5 { return "--duration must be at least 5 seconds" }
        if !(0...3600).contains(maxClockOffset) { return "--max-clock-offset must be 0 to 3600 s" }
        if !(0...1000).contains(maxDrift) { return "--max-drift must be 0 to 1000 ppm" }
        if !(0...5000).contains(preciseWait) { return "--precise-wait must be 0 to 5000 µs" }
        if let startMargin, !(0...1000).contains(startMargin) { return "--start-margin must be 0 to 1000 ms" }
        return nil
    }

    package struct Configuration: Codable, Sendable {
        package var peers = 4
        package var link = "loopback"
        /// Seconds of schedule.
        package var duration = 120.0
        package var policy = SyncPolicy.tandem
        package var seed: UInt64 = 1
        /// Each peer's clock is off by up to this much (s), either way, …
        package var maxClockOffset = 10.0
        /// … and drifts by up to this much (ppm), either way.
        package var maxDriftPPM = 200.0
        package var file = ""
        /// `GStreamerPlayer.Configuration.preciseWait` of every peer.
        package var preciseWait: TimeSpan = .zero
        /// `GStreamerPlayer.Configuration.changesRateInPlace` of every peer; off, a rate change stops and starts.
        package var rateInPlace = true
        /// The authority stops the group for a prepare round on every seek and rate change it cannot make in place
        /// (`AuthorityConfiguration.optimisticStarts` off), as before scheduled starts.
        package var prepareRounds = false
        /// `AuthorityConfiguration.startMargin`, when not the default.
        package var startMargin: TimeSpan?
        /// Peers take their timelines over TCP only, without the datagram copies: to compare.
        package var timelinesOverTCPOnly = false

        package init(peers: Int = 4, link: String = "loopback", duration: Double = 120, policy: SyncPolicy = .tandem,
                     seed: UInt64 = 1, maxClockOffset: Double = 10, maxDriftPPM: Double = 200, file: String = "",
                     preciseWait: TimeSpan = .zero, rateInPlace: Bool = true, prepareRounds: Bool = false,
                     startMargin: TimeSpan? = nil) {
            self.peers = peers
            self.link = link
            self.duration = duration
            self.policy = policy
            self.seed = seed
            self.maxClockOffset = maxClockOffset
            self.maxDriftPPM = maxDriftPPM
            self.file = file
            self.preciseWait = preciseWait
            self.rateInPlace = rateInPlace
            self.prepareRounds = prepareRounds
            self.startMargin = startMargin
        }

        private enum CodingKeys: String, CodingKey {
            case peers, link, duration, policy, seed, maxClockOffset, maxDriftPPM, file, preciseWait, rateInPlace,
                 prepareRounds, startMargin, timelinesOverTCPOnly
        }

        package init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(peers: try c.decode(Int.self, forKey: .peers), link: try c.decode(String.self, forKey: .link),
                      duration: try c.decode(Double.self, forKey: .duration), policy: try c.decode(SyncPolicy.self, forKey: .policy),
                      seed: try c.decode(UInt64.self, forKey: .seed), maxClockOffset: try c.decode(Double.self, forKey: .maxClockOffset),
                      maxDriftPPM: try c.decode(Double.self, forKey: .maxDriftPPM), file: try c.decode(String.self, forKey: .file),
                      preciseWait: try c.decode(TimeSpan.self, forKey: .preciseWait),
                      rateInPlace: try c.decodeIfPresent(Bool.self, forKey: .rateInPlace) ?? true,
                      prepareRounds: try c.decodeIfPresent(Bool.self, forKey: .prepareRounds) ?? false,
                      startMargin: try c.decodeIfPresent(TimeSpan.self, forKey: .startMargin))
            timelinesOverTCPOnly = try c.decodeIfPresent(Bool.self, forKey: .timelinesOverTCPOnly) ?? false
        }
    }

    /// What the moments after a mark are counted as.
    package enum Phase: String, Codable, CaseIterable, Sendable {
        case steady
        case start
        case afterSeek = "after seek"
        case afterStall = "after stall"
        case lateJoiner = "late joiner"
        case rate = "rate 1.5×"
    }

    /// A command or event in the schedule, on the true clock.
    package struct Mark: Codable, Sendable {
        package var time: Int64
        package var label: String
        /// The command kind for latency figures (play, pause, seek, rate), nil for events.
        package var command: String?
        package var peer: Int
        package var effect: GroundTruth.Effect?
        /// The phase the following moments belong to, and for how long (ns).
        package var phase: Phase?
        package var phaseLength: Int64 = TimeSpan.seconds(5).nanoseconds
    }

    /// One peer's session-time estimate error against the truth at one moment.
    package struct ClockErrorSample: Sendable {
        package var time: Int64
        package var peer: Int
        package var error: Int64
        /// The error of the clock the peer's sinks wait on, for Tandem peers.
        package var engineError: Int64?
    }

    /// What a run produced, for the report.
    package struct Outcome: Sendable {
        package var configuration: Configuration
        package var marks: [Mark]
        package var showings: [GroundTruth.Showing]
        package var truth: GroundTruth
        /// Per peer index: name, when it started to join, when it left (late joiners).
        package var peers: [(name: String, joinStarted: Int64, left: Int64?)]
        package var lateJoiners: [Int]
        package var clockErrors: [ClockErrorSample]
        package var started: Int64
        package var ended: Int64
        package var cpu: (media: Int64, other: Int64)
        package var peakMemory: Int64?
        package var corrections: [String: Int]
        package var maxOneWay: Int64
    }

    package let configuration: Configuration

    package init(configuration: Configuration) { self.configuration = configuration }

    package func run(progress: @escaping @Sendable (String) -> Void) async throws -> Outcome {
        let configuration = self.configuration
        let clock = SystemMonotonicClock()
        guard let profile = NetworkPath.named(configuration.link) else {
            throw BenchError("unknown link profile \(configuration.link)")
        }
        var authority = AuthorityConfiguration()
        authority.maxParticipants = configuration.peers + 2
        authority.optimisticStarts = !configuration.prepareRounds
        if let margin = configuration.startMargin {
            authority.startMargin = margin
            authority.shortLinkStartMargin = margin
            authority.shortLinkStopMargin = margin
            authority.marginFromDelaySpread = false
        }
        if configuration.policy == .jellyfinRules {
            // Jellyfin's server schedules commands at now + max(2 × ping, 500 ms).
            authority.startMargin = TimeSpan(nanoseconds: BaselineRules.Jellyfin.minimumLead)
            authority.shortLinkStartMargin = authority.startMargin
            authority.shortLinkStopMargin = authority.startMargin
            authority.marginFromDelaySpread = false
        }
        let ensemble = try await Ensemble.start(file: configuration.file, title: "bench", authority: authority)
        let cpuBefore = ThreadCPU.read()

        var setups = PeerSetups(configuration: configuration, profile: profile)
        let marks = Locked<[Mark]>([])
        let leaves = Locked<[Int: Int64]>([:])
        let currentPhase = Locked("joining")
        let started = clock.now.nanoseconds
        let end = started + TimeSpan.seconds(configuration.duration).nanoseconds

        // Collect render records and clock errors while the schedule runs.
        let clockErrors = Locked<[ClockErrorSample]>([])
        let collector = Task {
            var lastClock: Int64 = 0
            while !Task.isCancelled {
                ensemble.collect()
                let now = clock.now.nanoseconds
                if now - lastClock >= TimeSpan.seconds(1).nanoseconds {
                    lastClock = now
                    for member in ensemble.all where leaves.withLock({ $0[member.index] == nil }) {
                        if let error = await member.clockError() {
                            let engine = configuration.policy == .tandem ? member.engineClockError() : nil
                            clockErrors.withLock {
                                $0.append(ClockErrorSample(time: now, peer: member.index, error: error, engineError: engine))
                            }
                        }
                    }
                    let recent = ensemble.withTruth { truth in
                        truth.showings(window: TimeSpan.milliseconds(500).nanoseconds, since: now - TimeSpan.seconds(2).nanoseconds)
                            .map(\.spread).max()
                    }
                    let skew = recent.map { String(format: "%.3f ms", Double($0) / 1e6) } ?? "–"
                    progress(String(format: "bench sync · %@ · %.0f / %.0f s · skew now %@",
                                    currentPhase.withLock { $0 }, TimeSpan(nanoseconds: now - started).seconds,
                                    configuration.duration, skew))
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }

        var members: [Ensemble.Member] = []
        for index in 0..<configuration.peers {
            let member = try await ensemble.add(setups.next("peer\(index)", loadDelay: index == 1 ? .seconds(2) : .zero))
            members.append(member)
        }
        func member(_ i: Int) -> Ensemble.Member { members[i % members.count] }
        func at(_ time: Int64) async -> Bool {
            let wait = time - clock.now.nanoseconds
            if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
            return clock.now.nanoseconds < end
        }
        func mark(_ label: String, _ command: String?, _ peer: Ensemble.Member, _ effect: GroundTruth.Effect?,
                  _ phase: Phase?, length: Int64 = TimeSpan.seconds(5).nanoseconds) {
            currentPhase.withLock { $0 = label }
            marks.withLock {
                $0.append(Mark(time: clock.now.nanoseconds, label: label, command: command, peer: peer.index, effect: effect,
                               phase: phase, phaseLength: length))
            }
        }

        var cycle = 0
        var lateJoiners: [Int] = []
        var cycleStart = clock.now.nanoseconds
        schedule: while clock.now.nanoseconds < end {
            let c = cycleStart
            if cycle == 0 {
                guard await at(c + TimeSpan.milliseconds(500).nanoseconds) else { break schedule }
                mark("start (one peer slow to load)", "start", member(0), .starts(near: 0), .start)
                await member(0).peer.play()
            } else {
                mark("seek to 0:00", "seek", member(0), .starts(near: 0), .afterSeek)
                await member(0).peer.seek(to: 0)
            }
            let offset: Int64 = cycle == 0 ? TimeSpan.seconds(2.5).nanoseconds : 0
            func step(_ seconds: Double) async -> Bool { await at(c + offset + TimeSpan.seconds(seconds).nanoseconds) }
            guard await step(8) else { break }
            mark("pause", "pause", member(1), .stops, nil)
            await member(1).peer.pause()
            guard await step(10) else { break }
            mark("play", "play", member(0), .starts(near: nil), .start)
            await member(0).peer.play()
            guard await step(16) else { break }
            mark("seek to 0:02", "seek", member(2), .starts(near: TimeSpan.seconds(2).nanoseconds), .afterSeek)
            await member(2).peer.seek(to: .seconds(2))
            guard await step(22) else { break }
            mark("rate 1.5×", "rate", member(0), .rate(1.5), .rate, length: TimeSpan.seconds(5).nanoseconds)
            await member(0).peer.setRate(1.5)
            guard await step(27) else { break }
            mark("rate 1×", "rate", member(0), .rate(1), nil)
            await member(0).peer.setRate(1)
            guard await step(30) else { break }
            let staller = member(configuration.peers - 1)
            mark("stall", nil, staller, .stops, nil)
            await staller.drill.stall(for: .seconds(2))
            mark("stall recovered", "resume", staller, .starts(near: nil), .afterStall)
            guard await step(36) else { break }
            let joiner = try await ensemble.add(setups.next("late\(cycle)"))
            lateJoiners.append(joiner.index)
            marks.withLock {
                $0.append(Mark(time: joiner.joinStarted, label: "late joiner", command: nil, peer: joiner.index,
                               effect: nil, phase: .lateJoiner, phaseLength: TimeSpan.seconds(6).nanoseconds))
            }
            currentPhase.withLock { $0 = "late joiner" }
            let stillRunning = await step(44)
            await joiner.peer.leave()
            leaves.withLock { $0[joiner.index] = clock.now.nanoseconds }
            guard stillRunning, await step(45) else { break }
            cycle += 1
            cycleStart = clock.now.nanoseconds
        }
        let stopped = clock.now.nanoseconds
        currentPhase.withLock { $0 = "finishing" }
        collector.cancel()
        var corrections: [String: Int] = [:]
        for member in ensemble.all {
            if let baseline = member.peer as? BaselinePeer {
                for (kind, count) in await baseline.correctionCounts() { corrections[kind, default: 0] += count }
            }
        }
        let cpu = ThreadCPU.read().since(cpuBefore)
        let memory = RelayBenchmark.processMemory(getpid())?.1
        await ensemble.finish()
        let truth = ensemble.withTruth { $0 }
        let left = leaves.value
        return Outcome(
            configuration: configuration, marks: marks.value,
            showings: truth.showings().filter { $0.median <= stopped },
            truth: truth,
            peers: ensemble.all.map { ($0.name, $0.joinStarted, left[$0.index]) },
            lateJoiners: lateJoiners, clockErrors: clockErrors.value, started: started, ended: stopped,
            cpu: cpu, peakMemory: memory, corrections: corrections,
            maxOneWay: configuration.link == "loopback" ? 0 : SimulatedNetworkPath.nominalOneWay(profile))
    }
}

/// Each peer's set-up: its own clock error (offset, drift) and its own seeded link, in join order.
private struct PeerSetups {
    package let configuration: SyncBench.Configuration
    package let profile: NetworkPath
    package var random: SeededRandom
    package var index = 0

    package init(configuration: SyncBench.Configuration, profile: NetworkPath) {
        self.configuration = configuration
        self.profile = profile
        random = SeededRandom(seed: configuration.seed)
    }

    package mutating func next(_ name: String, loadDelay: Duration = .zero) -> Ensemble.PeerSetup {
        defer { index += 1 }
        let offset = TimeSpan.seconds((random.unit() * 2 - 1) * configuration.maxClockOffset).nanoseconds
        let drift = (random.unit() * 2 - 1) * configuration.maxDriftPPM
        let link: (any NetworkImpairment)? = configuration.link == "loopback" ? nil
            : SimulatedNetworkPath(profile: profile, seed: configuration.seed &* 1_000_003 &+ UInt64(index))
        var player = GStreamerPlayer.Configuration.headless
        player.preciseWait = configuration.preciseWait
        player.changesRateInPlace = configuration.rateInPlace
        var setup = Ensemble.PeerSetup(name: name, loadDelay: loadDelay, clockOffset: offset, clockDriftPPM: drift,
                                       impairment: link, player: player, policy: configuration.policy)
        setup.timelinesOverTCPOnly = configuration.timelinesOverTCPOnly
        return setup
    }
}
