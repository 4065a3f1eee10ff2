import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import TandemCore
import TandemNet

/// The operator's HTTP listener beside a relay (`tandem serve --metrics HOST:PORT`): `GET /healthz` and
/// `GET /metrics` (the Prometheus text format), nothing else.
///
/// It is for the operator's monitoring, not for the public: bind it to loopback or a private network. It is
/// bounded like everything else that faces a socket — few connections at once, a small request head, one
/// request per connection within a short timeout — and runs on an event loop of its own, so a busy relay still
/// answers its health check and a stuck scraper cannot slow the relay.
public final class OperatorListener: Sendable {
    /// The listener's bounds.
    public struct Limits: Sendable, Hashable {
        /// Connections open at once; one more is closed at once.
        public var connections = 16
        /// A connection that has not sent a whole request head this long after it opened is closed. Each
        /// connection carries one request (the answer says `Connection: close`), so this bounds its whole life
        /// short of writing the answer.
        public var idleTimeout: TimeSpan = .seconds(5)
        /// Bytes of a request head (request line and header fields) and header fields in it; more is answered 400.
        public var requestHeadBytes = 4 * 1024
        public var headerFields = 32

        public init() {}
    }

    /// The address asked for and the port bound (the one picked when 0 was asked for).
    public let address: OperatorAddress
    /// The metrics the listener serves (in the registry of this listener's server).
    public let metrics: RelayMetrics
    public let limits: Limits
    private let group: MultiThreadedEventLoopGroup
    private let listener: any Channel
    private let open: OpenConnections

    /// The base of the listener's URLs: `http://HOST:PORT`.
    public var url: String { "http://\(address.hostForURL):\(address.port)" }

    /// Listens on `address` as `--metrics` gives it (`HOST:PORT`) for `server`'s health and metrics; nil without one.
    public static func start(at address: String?, serving server: SessionServer,
                             limits: Limits = Limits()) async throws(OperatorListenerError) -> OperatorListener? {
        guard let address else { return nil }
        return try await start(at: OperatorAddress(parsing: address), serving: server, limits: limits)
    }

    /// Listens on `address` (port 0 picks a free one) for `server`'s health and metrics, in a registry of its own.
    public static func start(at address: OperatorAddress, serving server: SessionServer,
                             limits: Limits = Limits()) async throws(OperatorListenerError) -> OperatorListener {
        try await start(at: address, metrics: RelayMetrics(server: server), limits: limits)
    }

    /// Listens on `address` for the health and metrics `metrics` reads.
    public static func start(at address: OperatorAddress, metrics: RelayMetrics,
                             limits: Limits = Limits()) async throws(OperatorListenerError) -> OperatorListener {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let open = OpenConnections()
        let decoderLimits = {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = limits.requestHeadBytes
            decoderLimits.maxHeaderListSize = limits.requestHeadBytes
            decoderLimits.maxHeaderFieldCount = limits.headerFields
            return decoderLimits
        }()
        let idleTimeout = TimeAmount.nanoseconds(limits.idleTimeout.nanoseconds)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard open.take(below: limits.connections) else { return channel.close() }
                channel.closeFuture.whenComplete { _ in open.release() }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // Malformed or oversized request heads: NIO's error handler answers 400 and the connection closes.
                    try sync.configureHTTPServerPipeline(withPipeliningAssistance: false, withServerUpgrade: nil,
                                                         withErrorHandling: true, withOutboundHeaderValidation: true,
                                                         withEncoderConfiguration: .init(),
                                                         withDecoderLimitConfiguration: decoderLimits)
                    try sync.addHandler(OperatorHTTPHandler(metrics: metrics, idleTimeout: idleTimeout))
                }
            }
        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: address.host, port: address.port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw .bindFailed(address: address.description, detail: "\(error)")
        }
        var bound = address
        bound.port = listener.localAddress?.port ?? address.port
        return OperatorListener(address: bound, metrics: metrics, limits: limits, group: group, listener: listener,
                                open: open)
    }

    private init(address: OperatorAddress, metrics: RelayMetrics, limits: Limits, group: MultiThreadedEventLoopGroup,
                 listener: any Channel, open: OpenConnections) {
        self.address = address
        self.metrics = metrics
        self.limits = limits
        self.group = group
        self.listener = listener
        self.open = open
    }

    /// Connections open now.
    public var connectionCount: Int { open.count }

    /// What `tandem serve` prints about the listener: where to scrape, and a warning when the address is
    /// reachable from outside a private network.
    public var announcement: [String] {
        var lines = ["tandem serve: metrics at \(url)/metrics, health at \(url)/healthz (for the operator only)"]
        if !address.isPrivate {
            lines.append("tandem serve: warning: \(address.host) is not a loopback or private address; anyone who "
                + "reaches it reads the relay's metrics (--metrics 127.0.0.1:PORT, or a firewall, keeps them private)")
        }
        return lines
    }

    /// Stops listening and closes every connection. Calling it again does nothing more.
    public func close() async {
        try? await listener.close()
        try? await group.shutdownGracefully()
    }
}

/// Why the operator's listener could not start, in words for the operator.
public enum OperatorListenerError: Error, Sendable, Hashable, CustomStringConvertible {
    case badAddress(String)
    case bindFailed(address: String, detail: String)

    public var description: String {
        switch self {
        case .badAddress(let text):
            return "--metrics takes HOST:PORT (e.g. 127.0.0.1:9464, or [::1]:9464; port 0 picks a free one), not \"\(text)\""
        case .bindFailed(let address, let detail):
            return "cannot listen for metrics on \(address): \(detail) (is the port taken? pick another, or 0)"
        }
    }
}

/// Connections the listener holds open, within its bound.
private final class OpenConnections: Sendable {
    private let open = Atomic<Int>(0)

    /// Takes a place when fewer than `limit` are taken.
    func take(below limit: Int) -> Bool {
        if open.wrappingAdd(1, ordering: .relaxed).newValue <= limit { return true }
        open.wrappingSubtract(1, ordering: .relaxed)
        return false
    }

    func release() { open.wrappingSubtract(1, ordering: .relaxed) }
    var count: Int { open.load(ordering: .relaxed) }
}
