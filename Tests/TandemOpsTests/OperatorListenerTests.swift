import Foundation
import Logging
import TandemCore
import TandemNet
import TandemOps
import TandemTestHTTP
import Testing

/// A relay on loopback (clients may create sessions) with its operator's listener beside it, both on free ports.
struct Relay {
    let server: SessionServer
    let listener: OperatorListener

    static func start(limits: OperatorListener.Limits = .init()) async throws -> Relay {
        var configuration = ServerConfiguration()
        configuration.allowsRemoteSessionCreation = true
        var logger = Logger(label: "tandem.test.relay")
        logger.logLevel = .warning
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: logger)
        do {
            let listener = try await OperatorListener.start(at: OperatorAddress(host: "127.0.0.1", port: 0), serving: server,
                                                            limits: limits)
            return Relay(server: server, listener: listener)
        } catch {
            await server.shutdown()
            throw error
        }
    }

    var port: Int { listener.address.port }

    func stop() async {
        await server.shutdown()
        await listener.close()
    }

    /// A client that creates a session of its own on the relay and joins it as its host.
    func createAndJoin(name: String = "ann") async throws -> (TandemClientConnection, Invite) {
        let invite = Invite.random(host: "127.0.0.1", port: server.port)
        var options = TandemClient.Options()
        options.createSession = true
        options.asHost = true
        return (try await TandemClient.connect(invite: invite, name: name, options: options), invite)
    }

    /// `GET /metrics`, which must answer 200 in the Prometheus text format.
    func metrics() async throws -> PrometheusText {
        let answer = try await HTTPProbe.get("/metrics", port: port)
        #expect(answer.status == 200, "\(answer.raw.prefix(300))")
        #expect(answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        return PrometheusText(answer.body)
    }
}

/// The samples of a Prometheus text exposition, by series (`name` or `name{label="value"}`).
struct PrometheusText {
    let text: String
    let samples: [String: Double]

    init(_ text: String) {
        self.text = text
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        self.samples = samples
    }

    subscript(series: String) -> Double? { samples[series] }
}

@Suite("Operator listener: health and Prometheus metrics over real sockets")
struct OperatorListenerTests {
    @Test("GET /healthz answers 200 with JSON while the server accepts connections, 503 once it shuts down")
    func health() async throws {
        let relay = try await Relay.start()
        #expect(relay.port != 0)
        #expect(relay.listener.url == "http://127.0.0.1:\(relay.port)")
        let answer = try await HTTPProbe.get("/healthz", port: relay.port)
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "application/json")
        #expect(answer.headers["connection"] == "close")
        let health = try JSONDecoder().decode(RelayHealth.self, from: Data(answer.body.utf8))
        #expect(health.status == "ok" && health.sessions == 0 && health.uptime >= 0 && health.uptime < 60)

        let head = try await HTTPProbe.get("/healthz", port: relay.port, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)

        await relay.server.shutdown()
        let stopping = try await HTTPProbe.get("/healthz", port: relay.port)
        #expect(stopping.status == 503)
        #expect(try JSONDecoder().decode(RelayHealth.self, from: Data(stopping.body.utf8)).status == "shutting down")
        await relay.listener.close()
    }

    @Test("after a client creates a session and joins, /metrics shows one session, one participant, its connection")
    func sessionAndParticipant() async throws {
        let relay = try await Relay.start()
        let before = try await relay.metrics()
        #expect(before["tandem_sessions"] == 0 && before["tandem_participants"] == 0)
        #expect(before["tandem_refusals_total{reason=\"authentication_failed\"}"] == 0, "every reason is there from the start")
        #expect(before.text.contains("# TYPE tandem_messages_delivered_total counter"))
        #expect(before.text.contains("# TYPE tandem_sessions gauge"))

        let (client, _) = try await relay.createAndJoin()
        let after = try await relay.metrics()
        #expect(after["tandem_sessions"] == 1)
        #expect(after["tandem_participants"] == 1)
        #expect((after["tandem_connections"] ?? 0) >= 1)
        #expect(after["tandem_connections_unauthenticated"] == 0)
        #expect((after["tandem_messages_delivered_total"] ?? 0) >= 1, "the welcome at least")
        #expect(after["tandem_queued_bytes"] != nil && after["tandem_journal_bytes"] == 0)
        let health = try JSONDecoder().decode(RelayHealth.self, from: Data(try await HTTPProbe.get("/healthz", port: relay.port).body.utf8))
        #expect(health.sessions == 1)

        // The participant leaves: the level falls back, the count of deliveries does not.
        await client.close()
        var left = after
        for _ in 0..<50 where left["tandem_participants"] != 0 {
            try await Task.sleep(for: .milliseconds(100))
            left = try await relay.metrics()
        }
        #expect(left["tandem_participants"] == 0)
        #expect((left["tandem_messages_delivered_total"] ?? 0) >= (after["tandem_messages_delivered_total"] ?? .infinity))
        await relay.stop()
    }

    @Test("a wrong secret counts one refusal under authentication_failed, in this server's registry alone")
    func refusalsByReasonPerServer() async throws {
        let relay = try await Relay.start()
        let other = try await Relay.start()
        let (client, invite) = try await relay.createAndJoin()
        var wrong = invite
        wrong.secret = "not-the-secret"
        await #expect(throws: TandemClientError.wrongSecret) {
            _ = try await TandemClient.connect(invite: wrong, name: "eve")
        }
        let metrics = try await relay.metrics()
        #expect(metrics["tandem_refusals_total{reason=\"authentication_failed\"}"] == 1, "\(metrics.text)")
        #expect(metrics["tandem_refusals_total{reason=\"connections_per_address\"}"] == 0)
        // Counted once: a second exposition adds nothing.
        #expect(try await relay.metrics()["tandem_refusals_total{reason=\"authentication_failed\"}"] == 1)

        // The other server's metrics saw none of it.
        let untouched = try await other.metrics()
        #expect(untouched["tandem_sessions"] == 0 && untouched["tandem_participants"] == 0)
        #expect(untouched["tandem_refusals_total{reason=\"authentication_failed\"}"] == 0)
        #expect(untouched["tandem_messages_delivered_total"] == 0)
        await client.close()
        await relay.stop()
        await other.stop()
    }

    @Test("wrong methods, unknown paths, bodies, malformed and oversized requests get 4xx; the listener keeps serving")
    func badRequests() async throws {
        let relay = try await Relay.start()
        let port = relay.port
        let post = try await HTTPProbe.get("/metrics", port: port, method: "POST")
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
        #expect(try await HTTPProbe.get("/", port: port).status == 404)
        #expect(try await HTTPProbe.get("/metrics/../healthz", port: port).status == 404)
        let withBody = try await HTTPProbe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", port: port)
        #expect(withBody.status == 400)
        #expect(try await HTTPProbe.send("NOT HTTP AT ALL\r\n\r\n", port: port).status == 400)
        let huge = String(repeating: "a", count: 16 * 1024)
        #expect(try await HTTPProbe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: \(huge)\r\n\r\n", port: port).status == 400)
        #expect(try await HTTPProbe.send("GET /\(huge) HTTP/1.1\r\nHost: x\r\n\r\n", port: port).status == 400)
        let manyFields = (0..<100).map { "X-F\($0): y\r\n" }.joined()
        #expect(try await HTTPProbe.send("GET /healthz HTTP/1.1\r\n\(manyFields)\r\n", port: port).status == 400)
        #expect(try await HTTPProbe.get("/healthz", port: port).status == 200)
        #expect(try await HTTPProbe.get("/metrics?x=1", port: port).status == 200)
        await relay.stop()
    }

    @Test("connections over the bound are closed at once; an idle one is closed after the timeout, and room is made")
    func connectionBoundAndIdleTimeout() async throws {
        var limits = OperatorListener.Limits()
        limits.connections = 2
        limits.idleTimeout = .milliseconds(800)
        let relay = try await Relay.start(limits: limits)
        let port = relay.port
        // Two connections that send half a request and then nothing: they hold both places.
        async let first = HTTPProbe.send("GET /healthz HTTP/1.1\r\n", port: port, timeout: 20)
        async let second = HTTPProbe.send("GET /healthz HTTP/1.1\r\n", port: port, timeout: 20)
        var held = false
        for _ in 0..<100 where !held {
            held = relay.listener.connectionCount == 2
            if !held { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(held)
        let started = ContinuousClock.now
        // A third is closed without an answer while they hold their places.
        let refused = try await HTTPProbe.get("/healthz", port: port)
        #expect(refused.status == 0 && refused.raw.isEmpty)
        // The idle ones are closed by the timeout (without an answer), well before the probes' own 20 s.
        let (a, b) = try await (first, second)
        #expect(a.raw.isEmpty && b.raw.isEmpty)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(try await HTTPProbe.get("/healthz", port: port).status == 200)
        await relay.stop()
    }

    @Test("HOST:PORT as --metrics takes it; loopback and private addresses are told apart from public ones")
    func addresses() throws {
        let v4 = try OperatorAddress(parsing: "127.0.0.1:0")
        #expect(v4.host == "127.0.0.1" && v4.port == 0 && v4.isPrivate)
        let v6 = try OperatorAddress(parsing: "[::1]:9464")
        #expect(v6.host == "::1" && v6.port == 9464 && v6.isPrivate && v6.description == "[::1]:9464")
        for text in ["127.0.0.1", "127.0.0.1:65536", ":9464", "::1:9464", "host:port", "a b:1", ""] {
            #expect(throws: OperatorListenerError.badAddress(text)) { try OperatorAddress(parsing: text) }
        }
        for host in ["10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.10", "localhost", "fd00::1", "fe80::1"] {
            #expect(OperatorAddress(host: host, port: 1).isPrivate, "\(host)")
        }
        for host in ["0.0.0.0", "::", "172.32.0.1", "8.8.8.8", "example.com", "fdroid.example"] {
            #expect(!OperatorAddress(host: host, port: 1).isPrivate, "\(host)")
        }
    }
}
