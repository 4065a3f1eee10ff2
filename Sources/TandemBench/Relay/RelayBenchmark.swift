import Foundation
import Synchronization
import Logging
import NIOCore
import NIOPosix
import TandemCore
@_spi(EventLoopAccess) import TandemNet

/// Measures the relay: N participants in M sessions on one in-process server over loopback, each sending K
/// small reliable messages per second to everyone in its session while clock-syncing at the normal rate.
///
/// Latency is measured end to end (sender's `CLOCK_MONOTONIC` in the payload, receiver's on arrival; one
/// machine, one clock), so it is the relay's added latency plus loopback and client overhead — an upper bound
/// on what the server adds. The server runs on its own event loop thread(s); the clients on another group.
package enum RelayBenchmark {
    public struct Configuration: Sendable, Hashable, Codable {
        public var participants: Int = 40
        public var sessions: Int = 10
        public var messagesPerSecond: Double = 10
        /// Seconds of sending (after everyone has joined).
        public var duration: Double = 5
        /// The longest wait between everyone having joined and the first message: a client probes the clock at up
        /// to 50 Hz (over TCP and UDP) until its estimate is firm — ~6.4 s on a quiet path, up to ~30 s when round
        /// trips are long — then about once a second. The load starts once the probes are at that steady rate, so
        /// it measures a session's steady state rather than the start-up of its clock sync (0: start at once).
        public var settle: Double = 40
        /// With an external server run under callgrind with `--instr-atstart=no`: count its instructions only
        /// while messages flow (and drain), so the joins and clock sync's start-up, which vary, are left out.
        public var collectOnlyDuringLoad = false
        /// Payload bytes per message (at least 16: send time and sender index).
        public var payloadSize: Int = 64
        /// Whether each participant also sends a link report a second while the load runs, as a real peer's
        /// playback coordinator does (its one-way delay and clock error, for the authority's start lead).
        public var linkReports = true
        /// Threads of the server's event loop group (1 = "one core").
        public var serverThreads: Int = 1
        /// Threads of the clients' event loop group.
        public var clientThreads: Int = 2
        /// Where the server runs: in this process, or an already running standalone server that lets clients
        /// create sessions (`tandem serve`), whose resident memory and CPU are then read from /proc by its pid.
        public var server: Placement = .inProcess
        public init() {}
    }

    /// Where the measured server runs.
    public enum Placement: Sendable, Hashable, Codable {
        case inProcess
        case external(host: String, port: Int, processID: Int32?)
        /// The bare relay (`BareRelay`, `tandem bench relay --floor`) on 127.0.0.1:`port`: the machine's floor
        /// for the same load, not Tandem's server.
        case bare(port: Int, processID: Int32?)
    }

    public struct Result: Sendable, Hashable, Codable, CustomStringConvertible {
        public var configuration: Configuration
        /// Participants that joined (the rest failed to connect: see `connectFailures`).
        public var joined: Int
        public var connectFailures: [String]
        public var sent: Int
        /// Deliveries expected: each message to every other participant of its session.
        public var expected: Int
        public var received: Int
        public var lost: Int { Swift.max(0, expected - received) }
        /// Latency percentiles (ns) over every delivery.
        public var p50: Int64
        public var p99: Int64
        public var max: Int64
        /// Resident memory of this process at the end (bytes; server and clients share the process), if known.
        public var residentMemory: Int64?
        /// Resident memory before the server started (bytes), to subtract the baseline.
        public var residentMemoryBefore: Int64?
        /// Messages the client dropped or refused (rate limits, closed links).
        public var sendFailures: Int
        /// An external server's resident memory at the end and its peak (bytes), and the share of one core it used
        /// while messages flowed (percent).
        public var serverResidentMemory: Int64?
        public var serverPeakMemory: Int64?
        public var serverCPUPercent: Double?
        /// The external server's CPU time (user + system, ns) while messages flowed.
        public var serverCPUTime: Int64?
        /// The part of `serverCPUTime` spent in the kernel (system time, ns).
        public var serverKernelCPUTime: Int64?
        /// The external server's open file descriptors at the end, everyone still connected.
        public var serverFileDescriptors: Int?
        /// The load generator's own CPU while messages flowed (percent of one core), when it runs in a process
        /// of its own (then pinned to its own core).
        public var generatorCPUPercent: Double?
        /// Clock probes the participants sent as datagrams while messages flowed, per participant and second
        /// (steady state: 1, as many again over TCP); more means clock estimates started over during the load.
        public var clockProbesPerParticipantSecond: Double?
        /// How late the generator's send timers fired (p99, ns): its own event loop's lag. When that loop is
        /// busy, a message waits there before it is sent or after it arrives, and the latency is the generator's.
        public var generatorLagP99: Int64?
        /// The external server's resident memory before anyone joined (bytes): what the participants add is the
        /// difference (`serverMemoryPerParticipant`).
        public var serverResidentMemoryAtStart: Int64? = nil

        /// Resident memory the server gained per joined participant (bytes), from before the joins to the end.
        public var serverMemoryPerParticipant: Double? {
            guard let end = serverResidentMemory, let start = serverResidentMemoryAtStart, joined > 0 else { return nil }
            return Double(end - start) / Double(joined)
        }

        /// Whether this is the bare relay's run (`BareRelay`): the machine's floor, not Tandem's server.
        public var isFloor: Bool {
            if case .bare = configuration.server { return true }
            return false
        }

        /// Server CPU per delivered message (µs).
        public var serverMicrosecondsPerDelivery: Double? {
            serverCPUTime.map { Double($0) / 1000 / Double(Swift.max(1, received)) }
        }
        /// The kernel's part of it (µs).
        public var serverKernelMicrosecondsPerDelivery: Double? {
            serverKernelCPUTime.map { Double($0) / 1000 / Double(Swift.max(1, received)) }
        }
        /// Whether the generator used more than 90 % of its core: then the figures may be the generator's limit,
        /// not the relay's.
        public var generatorSaturated: Bool { (generatorCPUPercent ?? 0) > 90 }
        /// Whether the generator's timers fired more than 1 ms late at p99: busy in bursts though its average CPU
        /// is low, so the latency figures may be its own.
        public var generatorLagged: Bool { (generatorLagP99 ?? 0) > 1_000_000 }
        /// Messages the load asked for: every joined participant at the rate for the duration.
        public var scheduled: Int {
            Int((Double(joined) * configuration.messagesPerSecond * configuration.duration).rounded())
        }
        /// Whether a generator of its own (standalone runs) sent fewer than 95 % of the scheduled messages (it was
        /// starved or saturated): the run did not offer the load it names.
        public var generatorFellShort: Bool {
            generatorCPUPercent != nil && Double(sent + sendFailures) < 0.95 * Double(scheduled)
        }

        /// Whether the issue's targets hold: p99 ≤ 2 ms, nothing lost, resident memory ≤ 100 MB (growth).
        public var meetsTargets: Bool {
            let memory = serverResidentMemory ?? residentMemory.map { $0 - (residentMemoryBefore ?? 0) }
            return p99 <= 2_000_000 && lost == 0 && connectFailures.isEmpty && !generatorSaturated && !generatorLagged
                && !generatorFellShort
                && (memory.map { $0 <= 100 * 1024 * 1024 } ?? true)
        }

        public var description: String {
            func ms(_ ns: Int64) -> String { String(format: "%.3f ms", Double(ns) / 1e6) }
            let memory = residentMemory.map { String(format: "%.1f MB", Double($0) / 1_048_576) } ?? "unknown"
            let growth = residentMemory.flatMap { end in residentMemoryBefore.map { String(format: " (+%.1f MB)", Double(end - $0) / 1_048_576) } } ?? ""
            return """
            \(isFloor ? "bare relay (the floor: system calls only)" : "relay"): \(joined)/\(configuration.participants) participants in \(configuration.sessions) sessions, \
            \(configuration.messagesPerSecond) msg/s each for \(configuration.duration) s
              sent \(sent), delivered \(received)/\(expected), lost \(lost), send failures \(sendFailures)
              latency p50 \(ms(p50))  p99 \(ms(p99))  max \(ms(max))
              \(serverResidentMemory.map { String(format: "server (own process): resident %.1f MB, peak %.1f MB, CPU %.0f %% of a core", Double($0) / 1_048_576, Double(serverPeakMemory ?? $0) / 1_048_576, serverCPUPercent ?? 0) + (serverMemoryPerParticipant.map { String(format: "\n  server memory: %.1f KB more per participant than before the joins", $0 / 1024) } ?? "") } ?? "resident memory \(memory)\(growth) (server and clients in one process)")\(serverDetail)\(connectFailures.isEmpty ? "" : "\n  connect failures: \(connectFailures.count) (first: \(connectFailures[0]))")
              targets (p99 ≤ 2 ms, no loss, ≤ 100 MB\(generatorCPUPercent == nil ? "" : ", generator neither saturated nor lagging")): \(meetsTargets ? "met" : "NOT met")
            """
        }
    }

    /// Runs one measurement.
    public static func run(_ configuration: Configuration, logger: Logger = Logger(label: "tandem.bench.relay")) async throws -> Result {
        let before = residentMemoryBytes()
        var authority = AuthorityConfiguration()
        authority.maxParticipants = Swift.max(2, (configuration.participants + configuration.sessions - 1) / max(1, configuration.sessions))
        authority.endsWhenHostLeaves = false
        authority.appMessagesPerSecond = Int(configuration.messagesPerSecond.rounded(.up)) * 2 + 10
        authority.appMessageBurst = authority.appMessagesPerSecond * 2
        var serverConfiguration = ServerConfiguration(authority: authority)
        serverConfiguration.threads = configuration.serverThreads
        serverConfiguration.maxSessions = configuration.sessions
        // Everyone connects from 127.0.0.1 within seconds, 50 at a time: above the per-address bound meant for
        // strangers (as the standalone server of `bench relay` is started).
        serverConfiguration.maxUnauthenticatedConnectionsPerAddress = Swift.max(64, serverConfiguration.maxUnauthenticatedConnectionsPerAddress)
        serverConfiguration.maxConnectionsPerAddress = configuration.participants + 64
        serverConfiguration.handshakeTimeout = 30_000_000_000
        // Joins and leaves are logged at info level: a thousand of them would bury the figures.
        var serverLogger = logger
        serverLogger.logLevel = max(logger.logLevel, .warning)
        var server: SessionServer?
        var createdInvites: [Invite] = []
        var serverProcess: Int32?
        var serverMemoryAtStart: Int64?
        switch configuration.server {
        case .inProcess:
            let started = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: serverConfiguration,
                                                        logger: serverLogger)
            server = started
            for index in 0..<configuration.sessions {
                createdInvites.append(try started.createSession(id: "bench-\(index)"))
            }
        case .external(let host, let port, let pid):
            serverProcess = pid
            serverMemoryAtStart = pid.flatMap(processMemory)?.0
            for index in 0..<configuration.sessions {
                createdInvites.append(Invite(host: host, port: port, session: "bench-\(index)", secret: "bench-secret-\(index)"))
            }
        case .bare:
            throw BenchError("the bare relay takes the bare load (BareRelay.load), not Tandem clients")
        }
        let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: Swift.max(1, configuration.clientThreads))
        let invites = createdInvites
        let createsSessions = configuration.server != .inProcess

        // Join everyone, a few at a time.
        var clientOptions = TandemClient.Options()
        clientOptions.eventLoopGroup = clientGroup
        clientOptions.maxMessagesPerSecond = authority.appMessagesPerSecond
        clientOptions.connectTimeout = 20_000_000_000
        // The server sees a long-running party's probes (one a second each way once clocks are steady), but the
        // generator's participants reach the steady rate after 20 probes instead of up to 300 at 10 a second, and
        // keep 32 samples instead of 256: their estimators' refits were most of the generator's own CPU.
        clientOptions.clockSync.acquisitionCount = 20
        // Clients of a relay are far away: a probe a second, not a short path's four, although these are on loopback.
        clientOptions.clockSync.shortPathSteadyInterval = nil
        clientOptions.clockSync.window = 32
        let options = clientOptions
        var connections: [(session: Int, link: TandemClientConnection)] = []
        var failures: [String] = []
        let batch = 50
        // On an external server the first participant of each session creates it; the rest join after.
        let firstRound = createsSessions ? Swift.min(configuration.sessions, configuration.participants) : 0
        let rounds = [(0, firstRound), (firstRound, configuration.participants)].filter { $0.0 < $0.1 }
        for (roundStart, roundEnd) in rounds {
        for start in stride(from: roundStart, to: roundEnd, by: batch) {
            let results = await withTaskGroup(of: (Int, Result_<TandemClientConnection>).self) { group in
                for index in start..<Swift.min(start + batch, roundEnd) {
                    let session = index % configuration.sessions
                    var options = options
                    options.createSession = createsSessions && index < firstRound
                    group.addTask {
                        do {
                            let link = try await TandemClient.connect(invite: invites[session], name: "p\(index)",
                                                                      options: options)
                            return (session, .success(link))
                        } catch {
                            return (session, .failure("\(error)"))
                        }
                    }
                }
                var out: [(Int, Result_<TandemClientConnection>)] = []
                for await result in group { out.append(result) }
                return out
            }
            for (session, result) in results {
                switch result {
                case .success(let link): connections.append((session, link))
                case .failure(let text): failures.append(text)
                }
            }
        }
        }
        var sessionSizes = [Int](repeating: 0, count: configuration.sessions)
        for (session, _) in connections { sessionSizes[session] += 1 }
        let perSession = sessionSizes
        let joinedLinks = connections

        // Receivers and senders run on the clients' event loops, as a load generator should: no task per
        // participant, no stream per connection between the socket and the stopwatch, so the figures are the
        // relay's, not the load generator's. Arrival is stamped when the frame is decoded.
        let clock = SystemMonotonicClock()
        let latencies = LatencyLog(capacity: Int(Double(connections.count) * configuration.messagesPerSecond
                                                 * configuration.duration * 4))
        let lags = LatencyLog(capacity: Int(Double(connections.count) * configuration.messagesPerSecond
                                            * configuration.duration) + 16)
        for (_, link) in connections {
            link.tapAppMessages { message, receivedAt in
                guard message.payload.count >= 8 else { return }
                let sentAt = message.payload.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }
                latencies.record(receivedAt.nanoseconds - sentAt)
            }
        }

        // Clock sync settles first: the load starts once the participants probe at the steady rate (at most 1.5
        // datagram probes a second each over the last second), or after `settle` seconds at the most.
        let settleUntil = clock.now.nanoseconds + Int64(configuration.settle * 1e9)
        /// Datagram clock probes sent so far by all the participants.
        func probesSent() -> Int { joinedLinks.reduce(0) { $0 + $1.link.datagramStatus.clockPingsSent } }
        var settling = probesSent()
        while clock.now.nanoseconds < settleUntil {
            try? await Task.sleep(nanoseconds: UInt64(Swift.min(1e9, Double(settleUntil - clock.now.nanoseconds))))
            let now = probesSent()
            defer { settling = now }
            if Double(now - settling) <= 1.5 * Double(connections.count) { break }
        }
        // The external server's CPU from here on: the load phase, not the joins.
        let loadStart = LoadStart(serverPID: serverProcess)
        let probesAtStart = probesSent()
        if configuration.collectOnlyDuringLoad, let pid = serverProcess { callgrindCollect(true, pid: pid) }
        let sendingStarted = clock.now.nanoseconds
        // Senders: K messages per second each, phases spread so the load is even.
        let sentCounts = Locked<(sent: Int, expected: Int, failed: Int)>((0, 0, 0))
        let interval = Int64(1e9 / Swift.max(0.001, configuration.messagesPerSecond))
        let endAt = sendingStarted + Int64(configuration.duration * 1e9)
        // One timer per event loop for all of its senders (`LoopSenders`), not one per participant; and one for
        // the link reports, a second apart.
        var loops: [ObjectIdentifier: LoopSenders] = [:]
        var reporters: [ObjectIdentifier: LoopSenders] = [:]
        let payloadSize = Swift.max(16, configuration.payloadSize)
        let reportInterval: Int64 = 1_000_000_000
        for (index, entry) in connections.enumerated() {
            let loop = entry.link.eventLoop
            if configuration.linkReports {
                let reporter = reporters[ObjectIdentifier(loop)] ?? LoopSenders(
                    loop: loop, clock: clock, interval: reportInterval, endAt: endAt, traffic: .linkReports,
                    record: { _, _, _ in })
                reporters[ObjectIdentifier(loop)] = reporter
                reporter.add(LoopSenders.Sender(link: entry.link, index: index, others: 0),
                             firstDue: sendingStarted + Int64(index) * reportInterval / Int64(Swift.max(1, connections.count)))
            }
            let senders = loops[ObjectIdentifier(loop)] ?? LoopSenders(
                loop: loop, clock: clock, interval: interval, endAt: endAt, traffic: .appMessages(payloadSize: payloadSize),
                record: { lag, sent, others in
                    lags.record(Swift.max(0, lag))
                    if sent {
                        sentCounts.withLock { $0.sent += 1; $0.expected += others }
                    } else {
                        sentCounts.withLock { $0.failed += 1 }
                    }
                })
            loops[ObjectIdentifier(loop)] = senders
            let phase = Int64(index) * interval / Int64(Swift.max(1, connections.count))
            senders.add(LoopSenders.Sender(link: entry.link, index: index, others: perSession[entry.session] - 1),
                        firstDue: sendingStarted + phase)
        }
        for senders in loops.values { senders.start() }
        for reporter in reporters.values { reporter.start() }
        try? await Task.sleep(nanoseconds: UInt64(Swift.max(0, endAt - clock.now.nanoseconds)))
        for senders in loops.values { senders.stop() }
        for reporter in reporters.values { reporter.stop() }
        let probes = probesSent() - probesAtStart
        let probeRate = Double(probes) / Swift.max(1, Double(connections.count)) / configuration.duration
        // Let the last deliveries drain, then measure memory while everyone is still connected.
        try? await Task.sleep(nanoseconds: 1_000_000_000)
        if configuration.collectOnlyDuringLoad, let pid = serverProcess { callgrindCollect(false, pid: pid) }
        let after = residentMemoryBytes()
        let figures = loadStart.read(elapsed: Double(clock.now.nanoseconds - sendingStarted))
        for (_, link) in connections { await link.abort() }
        await server?.shutdown()
        try? await clientGroup.shutdownGracefully()

        let all = latencies.values
        func percentile(_ p: Double) -> Int64 { Distribution.percentile(p, of: all) ?? 0 }
        let counts = sentCounts.withLock { $0 }
        var result = Result(configuration: configuration, joined: connections.count, connectFailures: failures,
                            sent: counts.sent, expected: counts.expected, received: all.count,
                            p50: percentile(50), p99: percentile(99), max: all.max() ?? 0,
                            residentMemory: after, residentMemoryBefore: before, sendFailures: counts.failed,
                            clockProbesPerParticipantSecond: probeRate,
                            generatorLagP99: Distribution.percentile(99, of: lags.values),
                            serverResidentMemoryAtStart: serverMemoryAtStart)
        figures.write(into: &result)
        return result
    }

    /// Latencies recorded from the event loops.
    private final class LatencyLog: Sendable {
        private let storage: Mutex<[Int64]>
        package init(capacity: Int) {
            var values: [Int64] = []
            values.reserveCapacity(capacity)
            storage = Mutex(values)
        }
        package func record(_ value: Int64) { storage.withLock { $0.append(value) } }
        package var values: [Int64] { storage.withLock { $0 } }
    }

    /// utime + stime of a process (ns), from /proc/PID/stat.
    public static func processCPUTime(_ pid: Int32) -> Int64? {
        processCPUTimes(pid).map { $0.user + $0.system }
    }

    /// utime and stime of a process (ns) apart, from /proc/PID/stat: its own code and the kernel's work for it
    /// (system calls; on loopback also the receiving side's TCP processing of what it sends).
    public static func processCPUTimes(_ pid: Int32) -> (user: Int64, system: Int64)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        let tick = Int64(Swift.max(1, sysconf(Int32(_SC_CLK_TCK))))
        return (user * 1_000_000_000 / tick, system * 1_000_000_000 / tick)
    }

    /// (VmRSS, VmHWM) of a process in bytes, from /proc/PID/status.
    public static func processMemory(_ pid: Int32) -> (Int64, Int64)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        var rss: Int64?, peak: Int64?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2, let kb = Int64(parts[1]) else { continue }
            if line.hasPrefix("VmRSS:") { rss = kb * 1024 }
            if line.hasPrefix("VmHWM:") { peak = kb * 1024 }
        }
        guard let rss, let peak else { return nil }
        return (rss, peak)
    }

    /// VmRSS of this process from /proc/self/status (Linux), in bytes.
    public static func residentMemoryBytes() -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kb = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int64($0) }
            return kb.map { $0 * 1024 }
        }
        return nil
    }

    private enum Result_<T: Sendable>: Sendable {
        case success(T)
        case failure(String)
    }
}
