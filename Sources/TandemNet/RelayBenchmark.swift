import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore

/// Measures the relay: N participants in M sessions on one in-process server over loopback, each sending K
/// small reliable messages per second to everyone in its session while clock-syncing at the normal rate.
///
/// Latency is measured end to end (sender's `CLOCK_MONOTONIC` in the payload, receiver's on arrival; one
/// machine, one clock), so it is the relay's added latency plus loopback and client overhead — an upper bound
/// on what the server adds. The server runs on its own event loop thread(s); the clients on another group.
public enum RelayBenchmark {
    public struct Configuration: Sendable, Hashable {
        public var participants: Int = 40
        public var sessions: Int = 10
        public var messagesPerSecond: Double = 10
        /// Seconds of sending (after everyone has joined).
        public var duration: Double = 5
        /// Payload bytes per message (at least 16: send time and sender index).
        public var payloadSize: Int = 64
        /// Threads of the server's event loop group (1 = "one core").
        public var serverThreads: Int = 1
        /// Threads of the clients' event loop group.
        public var clientThreads: Int = 2
        public init() {}
    }

    public struct Result: Sendable, Hashable, CustomStringConvertible {
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

        /// Whether the issue's targets hold: p99 ≤ 2 ms, nothing lost, resident memory ≤ 100 MB (growth).
        public var meetsTargets: Bool {
            p99 <= 2_000_000 && lost == 0 && connectFailures.isEmpty
                && (residentMemory.map { $0 - (residentMemoryBefore ?? 0) <= 100 * 1024 * 1024 } ?? true)
        }

        public var description: String {
            func ms(_ ns: Int64) -> String { String(format: "%.3f ms", Double(ns) / 1e6) }
            let memory = residentMemory.map { String(format: "%.1f MB", Double($0) / 1_048_576) } ?? "unknown"
            let growth = residentMemory.flatMap { end in residentMemoryBefore.map { String(format: " (+%.1f MB)", Double(end - $0) / 1_048_576) } } ?? ""
            return """
            relay: \(joined)/\(configuration.participants) participants in \(configuration.sessions) sessions, \
            \(configuration.messagesPerSecond) msg/s each for \(configuration.duration) s
              sent \(sent), delivered \(received)/\(expected), lost \(lost), send failures \(sendFailures)
              latency p50 \(ms(p50))  p99 \(ms(p99))  max \(ms(max))
              resident memory \(memory)\(growth)\(connectFailures.isEmpty ? "" : "\n  connect failures: \(connectFailures.count) (first: \(connectFailures[0]))")
              targets (p99 ≤ 2 ms, no loss, ≤ 100 MB): \(meetsTargets ? "met" : "NOT met")
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
        serverConfiguration.handshakeTimeout = 30_000_000_000
        // Joins and leaves are logged at info level: a thousand of them would bury the figures.
        var serverLogger = logger
        serverLogger.logLevel = max(logger.logLevel, .warning)
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: serverConfiguration,
                                                   logger: serverLogger)
        let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: Swift.max(1, configuration.clientThreads))
        var createdInvites: [Invite] = []
        for index in 0..<configuration.sessions {
            createdInvites.append(try server.createSession(id: "bench-\(index)"))
        }
        let invites = createdInvites

        // Join everyone, a few at a time.
        var clientOptions = TandemClient.Options()
        clientOptions.eventLoopGroup = clientGroup
        clientOptions.maxMessagesPerSecond = authority.appMessagesPerSecond
        clientOptions.connectTimeout = 20_000_000_000
        let options = clientOptions
        var connections: [(session: Int, link: TandemClientConnection)] = []
        var failures: [String] = []
        let batch = 50
        for start in stride(from: 0, to: configuration.participants, by: batch) {
            let results = await withTaskGroup(of: (Int, Result_<TandemClientConnection>).self) { group in
                for index in start..<Swift.min(start + batch, configuration.participants) {
                    let session = index % configuration.sessions
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
        var sessionSizes = [Int](repeating: 0, count: configuration.sessions)
        for (session, _) in connections { sessionSizes[session] += 1 }
        let perSession = sessionSizes
        let joinedLinks = connections

        // Receivers: record the latency of every delivery.
        let clock = SystemMonotonicClock()
        let latencies = NIOLockedValueBox<[Int64]>([])
        let streams = connections.map { $0.link.serverMessages() }
        let receivers = Task {
            await withTaskGroup(of: [Int64].self) { group in
                for stream in streams {
                    group.addTask {
                        var local: [Int64] = []
                        for await message in stream {
                            guard case .appMessage(let app) = message, app.payload.count >= 8 else { continue }
                            let sentAt = app.payload.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }
                            local.append(clock.now() - sentAt)
                        }
                        return local
                    }
                }
                for await local in group { latencies.withLockedValue { $0.append(contentsOf: local) } }
            }
        }

        // Senders: K messages per second each, phases spread so the load is even.
        let sentCounts = NIOLockedValueBox<(sent: Int, expected: Int, failed: Int)>((0, 0, 0))
        let interval = UInt64(1e9 / Swift.max(0.001, configuration.messagesPerSecond))
        let endAt = clock.now() + Int64(configuration.duration * 1e9)
        await withTaskGroup(of: Void.self) { group in
            for (index, entry) in joinedLinks.enumerated() {
                let others = perSession[entry.session] - 1
                group.addTask {
                    try? await Task.sleep(nanoseconds: UInt64(index) * interval / UInt64(Swift.max(1, joinedLinks.count)))
                    var next = clock.now()
                    var sent = 0, failed = 0
                    while next < endAt {
                        var payload = Data(count: Swift.max(16, configuration.payloadSize))
                        let now = clock.now()
                        payload.withUnsafeMutableBytes { raw in
                            raw.storeBytes(of: now, as: Int64.self)
                            raw.storeBytes(of: Int64(index), toByteOffset: 8, as: Int64.self)
                        }
                        do {
                            try await entry.link.sendAppMessage(payload)
                            sent += 1
                        } catch {
                            failed += 1
                        }
                        next += Int64(interval)
                        let wait = next - clock.now()
                        if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait)) }
                    }
                    let (s, f) = (sent, failed)
                    sentCounts.withLockedValue { $0.sent += s; $0.expected += s * others; $0.failed += f }
                }
            }
        }
        // Let the last deliveries drain, then measure memory while everyone is still connected.
        try? await Task.sleep(nanoseconds: 1_000_000_000)
        let after = residentMemoryBytes()
        for (_, link) in connections { await link.abort() }
        await server.shutdown()
        _ = await receivers.value
        try? await clientGroup.shutdownGracefully()

        var all = latencies.withLockedValue { $0 }
        all.sort()
        func percentile(_ p: Double) -> Int64 {
            all.isEmpty ? 0 : all[Swift.min(all.count - 1, Int((Double(all.count - 1) * p).rounded()))]
        }
        let counts = sentCounts.withLockedValue { $0 }
        return Result(configuration: configuration, joined: connections.count, connectFailures: failures,
                      sent: counts.sent, expected: counts.expected, received: all.count,
                      p50: percentile(0.5), p99: percentile(0.99), max: all.last ?? 0,
                      residentMemory: after, residentMemoryBefore: before, sendFailures: counts.failed)
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
