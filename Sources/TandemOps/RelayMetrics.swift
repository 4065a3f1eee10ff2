import CoreMetrics
import Foundation
import Prometheus
import Synchronization
import TandemCore
import TandemNet

/// One server's statistics as swift-metrics gauges and counters, backed by a Prometheus registry of its own.
///
/// The server counts into its own types (`ServerStatistics`); this binds them to swift-metrics with a factory over
/// `registry`, never through `MetricsSystem.bootstrap` — so two servers in one process (or two tests) keep apart,
/// and an application that bootstraps swift-metrics for itself is not disturbed. The levels are read when they
/// are asked for (`exposition()`), and the server's running counts become counter increments then.
public final class RelayMetrics: Sendable {
    /// Where this server's metrics live; its exposition is what `GET /metrics` answers.
    public let registry: PrometheusCollectorRegistry
    private let read: @Sendable () -> ServerStatistics
    private let sessions, participants, connections, unauthenticated, queuedBytes, journalBytes: CoreMetrics.Gauge
    private let uptime: CoreMetrics.Gauge
    private let delivered: CoreMetrics.Counter
    private let refusals: [ServerRefusal: CoreMetrics.Counter]
    /// The server's counts as last published: each exposition adds what they grew by since.
    private let published = Mutex<(delivered: Int, refusals: [ServerRefusal: Int])>((0, [:]))

    /// The metrics of `server`, in a registry of their own.
    public convenience init(server: SessionServer) {
        self.init(statistics: { server.statistics })
    }

    /// The metrics of whatever `statistics` reads (a server's, or a test's figures).
    public init(statistics: @escaping @Sendable () -> ServerStatistics) {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        func gauge(_ name: RelayMetricName) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: name.rawValue, factory: factory) }
        self.registry = registry
        self.read = statistics
        (sessions, participants) = (gauge(.sessions), gauge(.participants))
        (connections, unauthenticated) = (gauge(.connections), gauge(.unauthenticatedConnections))
        (queuedBytes, journalBytes, uptime) = (gauge(.queuedBytes), gauge(.journalBytes), gauge(.uptime))
        delivered = CoreMetrics.Counter(label: RelayMetricName.messagesDelivered.rawValue, factory: factory)
        // Every reason from the start, at 0: a rate over a series that appears only at its first refusal misses it.
        refusals = Dictionary(uniqueKeysWithValues: ServerRefusal.allCases.map { reason in
            (reason, CoreMetrics.Counter(label: RelayMetricName.refusals.rawValue, dimensions: [("reason", reason.rawValue)],
                             factory: factory))
        })
    }

    /// Reads the server's statistics into the metrics and returns the registry in the Prometheus text format.
    public func exposition() -> String {
        publish(read())
        return registry.emitToString()
    }

    /// The server's health now: whether it accepts connections, its sessions and how long it has been up.
    public func health() -> RelayHealth {
        let statistics = read()
        publish(statistics)
        return RelayHealth(statistics)
    }

    private func publish(_ statistics: ServerStatistics) {
        published.withLock { published in
            sessions.record(statistics.sessions)
            participants.record(statistics.participants)
            connections.record(statistics.connections)
            unauthenticated.record(statistics.unauthenticatedConnections)
            queuedBytes.record(statistics.queuedOutboundBytes)
            journalBytes.record(statistics.journalBytesHeld)
            uptime.record(Double(statistics.uptime.nanoseconds) / 1e9)
            if statistics.messagesDelivered > published.delivered {
                delivered.increment(by: statistics.messagesDelivered - published.delivered)
                published.delivered = statistics.messagesDelivered
            }
            for (reason, count) in statistics.refusals where count > published.refusals[reason, default: 0] {
                refusals[reason]?.increment(by: count - published.refusals[reason, default: 0])
                published.refusals[reason] = count
            }
        }
    }
}

/// The names `GET /metrics` shows (docs/OPERATIONS.md says what each means).
public enum RelayMetricName: String, CaseIterable, Sendable {
    case sessions = "tandem_sessions"
    case participants = "tandem_participants"
    case connections = "tandem_connections"
    case unauthenticatedConnections = "tandem_connections_unauthenticated"
    case messagesDelivered = "tandem_messages_delivered_total"
    case refusals = "tandem_refusals_total"
    case queuedBytes = "tandem_queued_bytes"
    case journalBytes = "tandem_journal_bytes"
    case uptime = "tandem_uptime_seconds"
}

/// What `GET /healthz` answers, as JSON: `{"sessions":1,"status":"ok","uptime":12.5}`, with status 200 while the
/// server accepts connections and `"shutting down"` with status 503 once it stops.
public struct RelayHealth: Codable, Sendable, Hashable {
    public var status: String
    public var sessions: Int
    /// Seconds since the server started.
    public var uptime: Double

    public var isHealthy: Bool { status == "ok" }

    init(_ statistics: ServerStatistics) {
        status = statistics.accepting ? "ok" : "shutting down"
        sessions = statistics.sessions
        uptime = (Double(statistics.uptime.nanoseconds) / 1e6).rounded() / 1e3
    }

    /// The JSON body, one line.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"status":"unknown"}"#
    }
}
