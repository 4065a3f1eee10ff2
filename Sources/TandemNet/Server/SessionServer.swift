import TandemCrypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TandemCore
import TandemTLS

/// Hosts sessions over TCP (optionally TLS): embedded in a hosting peer, or standalone as a relay.
///
/// Each session lives on one event loop, where its `SessionAuthority` sees every input in order. Session time
/// is this machine's `CLOCK_MONOTONIC`.
public final class SessionServer: Sendable {
    /// The address the server listens on (the port is the bound one when 0 was asked for).
    public let host: String
    public let port: Int
    /// Whether connections are TLS.
    public let usesTLS: Bool
    /// SHA-256 of the server certificate (DER) when TLS is on, for pinning in invites.
    public let certificateSHA256: [UInt8]?
    /// The TLS context built from `--tls-cert`/`--tls-key` (nil without).
    public let tlsContext: TLSContext?
    /// Whether the certificate's issuer is its subject: Tandem's invites pin it, roots-checking clients refuse it.
    public let certificateIsSelfSigned: Bool
    /// What to offer clients that check certificates against their roots (Syncplay's STARTTLS): nil for a
    /// self-signed certificate, which they would refuse and then not join at all (they get plain TCP instead).
    public var tlsContextForVerifyingClients: TLSContext? { certificateIsSelfSigned ? nil : tlsContext }

    /// The address hosts give `tandem host --server`: tandem(s)://HOST:PORT, with the certificate's pin under TLS.
    public func address(advertising host: String) -> String {
        let url = "\(usesTLS ? "tandems" : "tandem")://\(host):\(port)"
        return certificateSHA256.map { url + "?pin=" + SHA256Hex.hex($0) } ?? url
    }
    public let configuration: ServerConfiguration

    /// The address a client on this machine dials: 127.0.0.1 when listening on every interface, else the host.
    public var localHost: String { host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host }

    let group: MultiThreadedEventLoopGroup
    let listener: any Channel
    let sessions: Mutex<[String: HostedSession]>
    private let connections: Mutex<[ObjectIdentifier: any Channel]>
    let stopped = Mutex(false)
    private let stopping = Mutex<Task<Void, Never>?>(nil)
    private let nextLoop = Mutex(0)
    let clock: any MonotonicClock
    let logger: Logger
    /// Live `ServerConnectionHandler` objects (a leak shows as a count that does not return to 0).
    private let liveHandlers = Atomic<Int>(0)
    /// The bounds on connections per address and on unauthenticated ones, and who gives way when they are full.
    let admission: ConnectionAdmission
    /// Recent session creations per source address, for the per-minute quota.
    let creations = Mutex<[String: [LocalInstant]]>([:])
    let refusals = Mutex<[String: RefusalLogState]>([:])
    private let queuedBytes = Atomic<Int>(0)
    private let peakQueuedBytes = Atomic<Int>(0)
    private let droppedUnreliableCount = Atomic<Int>(0)
    private let slowConsumerCount = Atomic<Int>(0)
    /// The UDP socket beside the listener, when it is bound (`ServerConfiguration.datagrams`).
    let datagrams: DatagramRelay?
    /// Journal bytes held across sessions, per uploading address and in all.
    let journalLedger: JournalLedger
    /// Where attachments' bytes are kept when not in memory (`ServerConfiguration.spoolDirectory`).
    let spool: AttachmentSpool?
    /// What the server counts for its statistics (participants, deliveries, refusals), and when it started.
    let counters = ServerCounters()
    let startedAt: LocalInstant

    struct RefusalLogState {
        var lastLogged: LocalInstant
        var suppressed: Int
    }

    /// Starts a server listening on `host:port` (port 0 picks a free one; read `port` afterwards).
    public static func start(host: String = "0.0.0.0", port: Int = Invite.defaultPort, tls: ServerTLSFiles? = nil,
                             configuration: ServerConfiguration = ServerConfiguration(),
                             logger: Logger = Logger(label: "tandem.server")) async throws -> SessionServer {
        var sslContext: TLSContext?
        var (fingerprint, selfSigned): ([UInt8]?, Bool) = (nil, false)
        if let tls {
            do {
                let context = try TLSContext.server(certificateChainPath: tls.certificateChainPath,
                                                    privateKeyPath: tls.privateKeyPath)
                guard let leaf = context.leafSHA256 else {
                    throw SessionServerError.tls("no certificate in \(tls.certificateChainPath)")
                }
                sslContext = context
                fingerprint = leaf
                selfSigned = context.leafIsSelfSigned
            } catch let error as SessionServerError {
                throw error
            } catch {
                throw SessionServerError.tls("cannot load \(tls.certificateChainPath) / \(tls.privateKeyPath): \(error)")
            }
        }
        let kept = configuration.stateStore != nil
        let spool = try configuration.spoolDirectory.map { root throws(SessionServerError) in
            try AttachmentSpool.open(root: root, kept: kept)
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        let holder = ServerHolder()
        let clock = SystemMonotonicClock()
        let mediaStreams = WebMedia.StreamCount(limit: configuration.web?.maxMediaStreams ?? 0,
                                                perParticipant: configuration.web?.maxMediaStreamsPerParticipant ?? 0)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { channel in
                guard let server = holder.server.withLock({ $0 }) else {
                    return channel.close()
                }
                let address = channel.remoteAddress?.ipAddress ?? "unknown"
                // Over a bound on connections: closed at once, before TLS or any buffering (or an idle
                // unauthenticated connection gives way to this one, and is closed instead).
                guard let admission = server.admit(channel, from: address) else {
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in admission.release() }
                // The handshake (TLS, an HTTP upgrade, hello and proof) must be over this long after the connection began.
                let deadline = NIODeadline.now() + TimeAmount(configuration.handshakeTimeout)
                let tandem: @Sendable (any Channel) throws -> Void = { channel in
                    let limit = FrameSizeLimit(min(configuration.maxUnauthenticatedFrameSize, configuration.maxFrameSize))
                    try channel.pipeline.syncOperations.addHandler(
                        ServerConnectionHandler(server: server, configuration: configuration, clock: clock,
                                                logger: logger, address: address, frameLimit: limit,
                                                admission: admission, handshakeDeadline: deadline))
                }
                return channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(TLSHandler.server(context: sslContext))
                    }
                    if let web = configuration.web {
                        // The page and the session protocol share the port: the first byte tells them apart.
                        let media = WebMedia(lookup: { [weak server] id, item in
                            let offered = if let item { web.sharedMedia?.path(session: id, item: item) } else { web.mediaFiles[id] }
                            guard let path = offered, let session = server?.session(named: id) else { return nil }
                            return (path, session.key, item.flatMap { web.sharedMedia?.contentID(session: id, item: $0) })
                        }, streams: mediaStreams, admission: admission,
                           pacing: .init(bytesPerSecond: web.mediaBytesPerSecond, idleTimeout: TimeAmount(web.mediaIdleTimeout)))
                        let setup = TransportSniffer.Setup(native: tandem, web: { channel in
                            try SessionServer.addWebHandlers(to: channel, web: web, deadline: deadline, media: media,
                                                             tandem: tandem)
                        })
                        try channel.pipeline.syncOperations.addHandler(TransportSniffer(setup: setup, deadline: deadline))
                    } else {
                        try tandem(channel)
                    }
                    server.track(channel)
                }
            }
        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            try? await group.shutdownGracefully()
            if !kept { spool?.removeAll() }
            throw SessionServerError.bindFailed(host: host, port: port, detail: "\(error)")
        }
        let boundPort = listener.localAddress?.port ?? port
        let datagrams = configuration.datagrams
            ? await DatagramRelay.start(host: host, port: boundPort, group: group, configuration: configuration,
                                        clock: clock, logger: logger)
            : nil
        let server = SessionServer(host: host, port: boundPort, tlsContext: sslContext, selfSigned: selfSigned,
                                   certificateSHA256: fingerprint, configuration: configuration, group: group,
                                   listener: listener, datagrams: datagrams, spool: spool, clock: clock, logger: logger)
        do {
            // Before the first connection is served: a peer coming back must find its session.
            try await server.restoreSessions()
        } catch {
            try? await listener.close()
            await datagrams?.close()
            try? await group.shutdownGracefully()
            throw error
        }
        holder.server.withLock { $0 = server }
        logger.info("listening", metadata: ["host": "\(host)", "port": "\(server.port)", "tls": "\(tls != nil)"])
        return server
    }

    private init(host: String, port: Int, tlsContext: TLSContext?, selfSigned: Bool, certificateSHA256: [UInt8]?,
                 configuration: ServerConfiguration, group: MultiThreadedEventLoopGroup, listener: any Channel, datagrams: DatagramRelay?,
                 spool: AttachmentSpool?, clock: any MonotonicClock, logger: Logger) {
        self.datagrams = datagrams
        self.spool = spool
        self.journalLedger = JournalLedger(perAddress: configuration.maxJournalBytesPerAddress,
                                           total: configuration.maxJournalBytes)
        self.host = host
        self.port = port
        self.usesTLS = tlsContext != nil
        self.tlsContext = tlsContext
        self.certificateIsSelfSigned = selfSigned
        self.certificateSHA256 = certificateSHA256
        self.configuration = configuration
        self.group = group
        self.listener = listener
        self.clock = clock
        self.startedAt = clock.now
        self.logger = logger
        self.sessions = Mutex([:])
        self.connections = Mutex([:])
        self.admission = ConnectionAdmission(limits: .init(
            unauthenticated: configuration.maxUnauthenticatedConnections,
            unauthenticatedPerAddress: configuration.maxUnauthenticatedConnectionsPerAddress,
            connectionsPerAddress: configuration.maxConnectionsPerAddress))
    }

    /// Creates a session and returns its invite. `advertisedHost` is the name clients should dial
    /// (defaults to the listening host, or 127.0.0.1 when listening on every interface). `activity` is what the
    /// session starts with, so that everyone's welcome already names it.
    @discardableResult
    public func createSession(id: String? = nil, secret: String? = nil, advertisedHost: String? = nil,
                              activity: ActivityEnvelope? = nil) throws(SessionServerError) -> Invite {
        var invite = Invite.random(host: advertisedHost ?? localHost,
                                   port: port, tls: usesTLS, pinnedCertificateSHA256: certificateSHA256)
        if let id { invite.session = id }
        if let secret { invite.secret = secret }
        try createSession(id: invite.session, key: SessionAuth.key(forSecret: invite.secret), activity: activity)
        return invite
    }

    /// Ends a session for everyone in it with `reason`.
    public func endSession(_ id: String, reason: InvalidationReason) async {
        guard let session = self.session(named: id) else { return }
        try? await session.loop.submit { session.shutdown(reason: reason) }.get()
    }

    /// The handshake key (`SHA-256(secret)`) of session `id` while it is hosted here: it lets its holder join the
    /// session (`TandemClient.connect(to:handshakeKey:name:options:)`), so it must not leave this process.
    public func handshakeKey(ofSession id: String) -> HandshakeKey? { session(named: id).map { HandshakeKey($0.key) } }

    /// Names of the sessions currently hosted.
    public var sessionIDs: [String] { sessions.withLock { Array($0.keys) }.sorted() }

    /// Connections currently open (authenticated or not).
    public var connectionCount: Int { connections.withLock { $0.count } }

    /// Connection handler objects alive (open connections, plus any not yet freed after closing).
    public var liveConnectionObjects: Int { liveHandlers.load(ordering: .relaxed) }

    /// Connections that have not authenticated yet.
    public var unauthenticatedConnectionCount: Int { admission.unauthenticatedCount }

    /// Connections (authenticated or not) open from `address`.
    public func connectionCount(from address: String) -> Int { admission.openConnections(from: address) }

    /// Connections refused at a bound, and unauthenticated ones closed to make room for a newer one.
    public var admissionCounters: (refused: Int, evicted: Int) {
        let counters = admission.counters
        return (counters.refused, counters.evicted)
    }

    /// Bytes queued for all connections beyond what their sockets took.
    public var queuedOutboundBytes: Int { queuedBytes.load(ordering: .relaxed) }

    /// The most bytes ever queued for one connection.
    public var peakQueuedBytesPerConnection: Int { peakQueuedBytes.load(ordering: .relaxed) }

    /// Connections closed as slow consumers, and unreliable messages dropped for them.
    public var slowConsumersDisconnected: Int { slowConsumerCount.load(ordering: .relaxed) }
    public var unreliableMessagesShed: Int { droppedUnreliableCount.load(ordering: .relaxed) }

    /// What happened to datagrams on the UDP socket (nil when the server has none): received, sent, and the ones
    /// dropped by reason.
    public var datagramStatistics: DatagramStatistics? {
        datagrams.map { DatagramStatistics($0.statistics) }
    }

    /// Drops every datagram arriving on the UDP socket while true, as a blocked UDP path would (fault drills).
    @_spi(Testing) public func setDropsIncomingDatagrams(_ drops: Bool) {
        datagrams?.dropsIncoming.store(drops, ordering: .relaxed)
    }

    /// Sends no send stamp after clock answers while true, as if each were lost on the way (fault drills).
    @_spi(Testing) public func setWithholdsSendStamps(_ withholds: Bool) {
        datagrams?.withholdsSendStamps.store(withholds, ordering: .relaxed)
    }

    /// Returns once the server has stopped listening (after `shutdown`); a standalone server's main task waits here.
    public func waitUntilStopped() async {
        try? await listener.closeFuture.get()
    }

    /// Stops accepting connections, invalidates every session with `reason` (each participant receives it
    /// before its connection closes), and releases the event loops. Calling it again waits for the first call to
    /// finish.
    public func shutdown(reason: InvalidationReason = InvalidationReason(code: .serverShutdown,
                                                                        message: "the server is shutting down")) async {
        let task: Task<Void, Never> = stopping.withLock { stopping in
            if let running = stopping { return running }
            let task = Task { await self.stop(reason: reason) }
            stopping = task
            return task
        }
        await task.value
    }

    private func stop(reason: InvalidationReason) async {
        stopped.withLock { $0 = true }
        try? await listener.close()
        await datagrams?.close()
        // With a state store, sessions outlive the process: their peers see a lost link and reconnect to the next
        // start (nothing final is sent to them).
        let kept = configuration.stateStore != nil
        let all = kept ? [] : sessions.withLock { Array($0.values) }
        for session in all {
            try? await session.loop.submit { session.shutdown(reason: reason) }.get()
        }
        // Let the close frames reach the sockets, then close whatever is left (e.g. unauthenticated peers).
        let open = connections.withLock { Array($0.values) }
        for channel in open where kept { channel.close(promise: nil) }
        for channel in open where !kept {
            channel.eventLoop.execute {
                let frame = FrameCodec.error(WireErrorCode(reason.code), reason.message, kind: .close,
                                             allocator: channel.allocator)
                // A write that never completes (a peer that does not read, or a TLS handshake that never
                // happened) must not hold the shutdown: close after 1 s regardless.
                let deadline = channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
                channel.writeAndFlush(FrameWriter.bytes(of: frame, allocator: channel.allocator)).whenComplete { result in
                    // Plain TCP: end our side after the last byte and let the peer close (it does on the close
                    // frame). A full close while frames it sent lie unread here would reset the connection, and a
                    // reset discards what the peer has not yet received — on a real path, the session's `ended`
                    // just before. The deadline closes it within 1 s regardless.
                    let viaTLS = (try? channel.pipeline.syncOperations.handler(type: TLSHandler.self)) != nil
                    switch result {
                    case .success where !viaTLS: channel.close(mode: .output, promise: nil)
                    case .success:
                        deadline.cancel()
                        channel.close(promise: nil)
                    case .failure: break  // its output already ended (the session's close): the deadline ends it
                    }
                }
            }
        }
        for channel in open { try? await channel.closeFuture.get() }
        try? await group.shutdownGracefully()
        if !kept { spool?.removeAll() }
        logger.info("server stopped", metadata: ["reason": "\(reason.message)"])
    }

    // MARK: - Internal

    func session(named id: String) -> HostedSession? {
        sessions.withLock { $0[id] }
    }

    /// Creates a session; `creator` is the address of a client that creates it remotely (bounded per address).
    @discardableResult
    func createSession(id: String, key: SymmetricKey, activity: ActivityEnvelope? = nil, creator: String? = nil,
                       restoring: StoredSession? = nil) throws(SessionServerError) -> HostedSession {
        guard Invite.isValidSessionID(id) else { throw .invalidSessionID(id) }
        guard !stopped.withLock({ $0 }) else { throw .notRunning }
        let loop = nextEventLoop()
        let sessionSpool = restoring?.spoolName.flatMap { spool?.session(named: $0) } ?? spool?.session(id)
        let keeping = configuration.stateStore.map {
            StateKeeping(store: $0, key: key.withUnsafeBytes { Data($0) }, spoolName: sessionSpool?.name)
        }
        let session = HostedSession(id: id, key: key, loop: loop, configuration: configuration, clock: clock,
                                    activity: activity, datagrams: datagrams, creator: creator,
                                    journal: .init(ledger: journalLedger, spool: sessionSpool),
                                    counters: counters, logger: logger, keeping: keeping,
                                    restoring: restoring?.authority) { [weak self] id in
            self?.sessions.withLock { _ = $0.removeValue(forKey: id) }
        }
        let result: Result<Void, SessionServerError> = sessions.withLock { sessions in
            if sessions[id] != nil { return .failure(.sessionExists(id)) }
            if sessions.count >= configuration.maxSessions { return .failure(.serverFull(limit: configuration.maxSessions)) }
            if let creator, sessions.values.lazy.filter({ $0.creator == creator }).count >= configuration.maxSessionsPerAddress {
                return .failure(.tooManySessionsFromAddress(limit: configuration.maxSessionsPerAddress))
            }
            // Kept before anyone can reach it (and before its creator hears of it).
            if restoring == nil { session.persist() }
            sessions[id] = session
            return .success(())
        }
        try result.get()
        return session
    }

    /// Journal bytes held in all sessions, and by uploads from `address`.
    public var journalBytesHeld: Int64 { journalLedger.totalHeld }
    public func journalBytesHeld(from address: String) -> Int64 { journalLedger.held(by: address) }

    /// Bytes in the attachment spool's files (0 without a spool).
    public var spooledBytes: Int64 { spool?.bytesOnDisk ?? 0 }

    /// A session created by a client that proved its key; it expires if nobody joins it in time.
    func createRemoteSession(id: String, key: SymmetricKey, address: String) throws(SessionServerError) -> HostedSession {
        let session = try createSession(id: id, key: key, creator: address)
        let now = clock.now
        creations.withLock { creations in
            if creations.count > 10_000 { creations = creations.filter { $0.value.contains { now - $0 < .seconds(60) } } }
            creations[address, default: []].append(now)
        }
        logger.info("session created", metadata: ["session": "\(id)", "address": "\(address)"])
        let logger = self.logger
        session.loop.scheduleTask(in: TimeAmount(configuration.unjoinedSessionLifetime)) { [weak session] in
            guard let session, session.expireIfUnjoined() else { return }
            logger.info("session expired: nobody joined", metadata: ["session": "\(session.id)"])
        }
        return session
    }

    func connectionObjectCreated() { liveHandlers.add(1, ordering: .relaxed) }
    func connectionObjectFreed() { liveHandlers.subtract(1, ordering: .relaxed) }

    func queuedBytesChanged(by delta: Int, connectionTotal: Int) {
        queuedBytes.add(delta, ordering: .relaxed)
        var peak = peakQueuedBytes.load(ordering: .relaxed)
        while connectionTotal > peak {
            let (exchanged, original) = peakQueuedBytes.compareExchange(expected: peak, desired: connectionTotal,
                                                                        ordering: .relaxed)
            if exchanged { break }
            peak = original
        }
    }

    func noteDroppedUnreliable(_ count: Int) {
        if count > 0 { droppedUnreliableCount.add(count, ordering: .relaxed) }
    }

    func noteSlowConsumer() { slowConsumerCount.add(1, ordering: .relaxed) }

    private func nextEventLoop() -> any EventLoop {
        let loops = Array(group.makeIterator())
        let index = nextLoop.withLock { i -> Int in
            defer { i += 1 }
            return i
        }
        return loops[index % loops.count]
    }

    fileprivate func track(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        connections.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.connections.withLock { _ = $0.removeValue(forKey: key) }
        }
    }
}

/// Lets the channel initializer reach the server, which exists only once the listener is bound.
private final class ServerHolder: Sendable {
    let server = Mutex<SessionServer?>(nil)
}
