import TandemCrypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import TandemTLS
import Synchronization
import TandemCore

/// Connects peers to sessions on a `SessionServer`.
public enum TandemClient {
    /// Options for one connection.
    public struct Options: Sendable {
        /// Join as the session's host (an embedded server's session ends when its host leaves).
        public var asHost = false
        /// Create the session on the server if it does not exist (standalone relays that allow it).
        public var createSession = false
        /// Enter the session without taking part (protocol 3): until `GroupSession.join()` (the link sends
        /// `takePart`), the server sends this peer the activity and the participants only, and refuses anything else
        /// it sends. False takes part at once, as protocol 2 did.
        public var waitsToJoin = false
        /// Receive complete attachments as announcements and fetch their bytes only when asked
        /// (`GroupSessionJournal.Attachment.load()`); false receives every attachment's bytes as they are sent.
        public var lazyAttachments = false
        /// The server's creation token, for servers that require one to create sessions (`tandem serve
        /// --create-token-file`).
        public var createToken: String?
        /// Rejoin as this participant (within the server's grace period the identity is kept).
        public var reconnectAs: ParticipantID?
        /// The token the welcome gave `reconnectAs`; without it the server gives the joiner a new identity.
        public var reconnectToken: String?
        /// How this participant follows the session when it is not a Tandem player (`syncplay`); everyone sees it.
        public var via: String?
        /// This peer's preroll estimate, for the authority's scheduling.
        public var prerollEstimate: TimeSpan = .milliseconds(300)
        /// PEM file of CA certificates to verify a TLS server against (when the invite has no pin); nil uses the
        /// system's trust roots.
        public var trustRootsPath: String?
        /// Give up connecting and authenticating after this long.
        public var connectTimeout: TimeSpan = .seconds(5)
        /// After the link is lost without the server ending the session (silence past the heartbeat timeout, a
        /// reset, an unannounced close), keep reconnecting as the same participant for this long before the
        /// session ends for this peer with `connectionLost`; 0 ends it at once. While reconnecting, subscribers
        /// keep their streams (a notice says what happens, and a fresh `.welcome` follows the reconnect), reliable
        /// sends wait for the new link and unreliable app messages are dropped (see `send(_:)`).
        public var reconnectGracePeriod: TimeSpan = .zero
        /// The pause before the first reconnect attempt; it doubles after every failed attempt…
        public var reconnectFirstDelay: TimeSpan = .milliseconds(250)
        /// …up to this.
        public var reconnectMaxDelay: TimeSpan = .seconds(2)
        /// Most sends that may wait for a reconnect at once; beyond it `send` throws `reconnecting`.
        public var maxSendsWaitingForReconnect = 1024
        /// Clock-sync schedule.
        public var clockSync = ClockSyncEstimator.Configuration()
        /// Largest payload of `sendAppMessage` (bytes); bigger sends throw `messageTooLarge`. (A
        /// `GroupSessionMessenger` checks its own `Limits`; the connection passes its messages on as they are.)
        public var maxMessageSize = 256 * 1024
        /// Messages per second `sendAppMessage` may send; more throw `rateLimited`.
        public var maxMessagesPerSecond = 200
        /// Send unreliable app messages as UDP datagrams to the server's port when the server offers it (falling
        /// back to TCP while UDP gets no answer).
        public var datagrams = true
        /// Send clock-sync probes as UDP datagrams while the UDP path works, so that they do not wait behind a
        /// busy TCP stream (a large attachment); over TCP otherwise, and over TCP too while datagram probes go
        /// unanswered for `datagramAckTimeout`. The same estimator takes the samples of either path.
        public var clockProbesOverDatagrams = true
        /// With `clockProbesOverDatagrams`: send every probe over TCP as well while the UDP path works, so that the
        /// estimator also has the TCP path's samples (often the best ones while that connection is quiet). Measured
        /// with `tandem bench clock --transfer` (docs/BENCHMARKS.md): both paths gave the lowest median error.
        public var clockProbesAlsoOverTCP = true
        /// Take a datagram clock answer's arrival from the kernel's receive stamp (`SIOCGSTAMPNS`) rather than from
        /// the clock when the event loop reads it; applies only while `clock` is the machine's CLOCK_MONOTONIC, and
        /// falls back to the loop's reading wherever a stamp is missing (`DatagramStatus.clockStamps` says which).
        public var kernelReceiveStamps = true
        /// With `kernelReceiveStamps`: send datagram clock probes from a socket whose sends the kernel stamps, and ask
        /// the server to follow each answer with the kernel's stamp of when it left, so that both send times (`t1`,
        /// `t3`) are the kernels' too; falls back to the clock readings written into the datagrams wherever a stamp
        /// is missing (`DatagramStatus.sendStamps` says which). Not on a simulated path (`datagramDelays`).
        public var kernelSendStamps = true
        /// Ask the server for a copy of every timeline (start, pause, seek, rate change) as a datagram beside its TCP
        /// frame, and act on whichever comes first, so that a command is not held back by a TCP retransmission on a
        /// lossy link or by a busy stream; and send this peer's own timeline requests both ways too (to a server that
        /// takes them), the server acting on the first. Only while the UDP path works; everything else about
        /// timelines is unchanged (`TimelineCopies`).
        public var timelinesOverDatagrams = true
        /// Share this peer's UDP endpoint with the session's other participants that share theirs (the server lists
        /// them to each other), ping them directly and send them proposed starts straight (`directPaths()`,
        /// `sendDirect(_:to:)`). Only with the invite's secret (not with a handshake key alone) and while
        /// `datagrams` is on. The cost: the others learn this peer's address and port (docs/SECURITY.md).
        public var directPaths = true
        /// How often the UDP side says hello (its keep-alive and probe).
        public var datagramHelloInterval: TimeSpan = .seconds(1)
        /// Without an answer over UDP for this long, unreliable messages go over TCP until answers come back.
        public var datagramAckTimeout: TimeSpan = .seconds(2.5)
        /// Chunk size for journal uploads.
        public var attachmentChunkSize = 64 * 1024
        /// This peer's local monotonic clock: clock-sync timestamps and the clock mapping's local axis. Benchmarks
        /// give a peer a skewed clock here (offset and drift) so that clock sync has a real error to correct.
        public var clock: any MonotonicClock = SystemMonotonicClock()
        /// Extra channel handlers between the socket (and TLS) and the frame codec, made afresh for every channel
        /// (reconnects included): whole frames pass through them, and arrival times are taken above them. Tests and
        /// benchmarks put a simulated network path here (`TandemTesting`'s `impair(with:)`).
        public var transportHandlers: (@Sendable () -> [any ChannelHandler])?
        /// A simulated path for the UDP side, as `transportHandlers` is for TCP: the extra delay (ns) of the next
        /// datagram to the server (`toServer` true) or from it, or nil when it is lost. Benchmarks set it with
        /// `TandemTesting`'s `impair(with:)`.
        package var datagramDelays: (@Sendable (_ toServer: Bool) -> Int64?)?
        /// The event loops to use; nil shares one process-wide loop group.
        public var eventLoopGroup: (any EventLoopGroup)?
        public var logger = Logger(label: "tandem.client")
        /// With `createSession`: only ask whether the server would create the session (`prepareForActivation`).
        var creationProbe = false
        /// Authenticate with this handshake key instead of the invite's secret (`connect(to:handshakeKey:name:options:)`).
        var handshakeKey: HandshakeKey?
        public init() {}
    }

    /// Connects to the session named by `invite`, authenticates with its secret and joins as `name`.
    public static func connect(invite: Invite, name: String,
                               options: Options = Options()) async throws(TandemClientError) -> TandemClientConnection {
        do {
            return try await TandemClientConnection.open(invite: invite, name: name, options: options)
        } catch let error as TandemClientError {
            throw error
        } catch let error as TandemTLSError {
            throw .tls("\(error)")
        } catch {
            throw .unreachable("\(invite.host):\(invite.port): \(error)")
        }
    }
}

/// A shared loop group for clients that bring none.
let sharedClientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

/// A live, authenticated connection to a session: the network implementation of `SessionLink`.
///
/// Clock sync runs inside it (pings answered by the server on its event loop); `clockMapping()` gives the
/// current local → session time estimate.
///
/// With `Options.reconnectGracePeriod` > 0 a lost link does not end it: it reconnects as the same participant (see
/// `ConnectionEvent`), swapping in a new channel, and delivers the new welcome to its subscribers.
public final class TandemClientConnection: SessionLink {
    public let localParticipantID: ParticipantID
    /// The snapshot of the latest join (a reconnect brings a fresh one).
    public var welcome: SessionSnapshot { current.withLock { $0.welcome } }
    public let invite: Invite
    /// The current channel (a reconnect replaces it).
    var channel: any Channel { current.withLock { $0.channel } }
    var handler: NIOLoopBound<ClientConnectionHandler> { current.withLock { $0.handler } }
    let shared: ClientShared
    let options: TandemClient.Options
    /// Limits and numbers this connection's own app messages (`sendAppMessage`).
    let appMessageGate: AppMessageGate
    /// Seals app data end to end with the key derived from the invite (none for a connection made with the
    /// handshake key alone: `NoAppDataKey`).
    let appDataCipher: any PayloadCipher
    var clock: any MonotonicClock { options.clock }
    let name: String
    let current: Mutex<CurrentChannel>
    let phase = Mutex<Phase>(.connected)
    let reconnectTask = Mutex<Task<Void, Never>?>(nil)
    let lastEpoch = Mutex<Int>(0)

    /// The channel in use and what its join brought.
    struct CurrentChannel {
        var channel: any Channel
        var handler: NIOLoopBound<ClientConnectionHandler>
        var welcome: SessionSnapshot
    }

    enum Phase {
        case connected
        /// The link was lost at `since` (local clock); it was last heard from at `silentSince`.
        case reconnecting(since: LocalInstant, silentSince: LocalInstant)
        /// Closed (or closing) by its owner: no reconnecting any more.
        case closing
    }

    fileprivate init(invite: Invite, name: String, welcome: SessionSnapshot, channel: any Channel,
                     handler: NIOLoopBound<ClientConnectionHandler>, shared: ClientShared, options: TandemClient.Options) {
        self.invite = invite
        self.name = name
        current = Mutex(CurrentChannel(channel: channel, handler: handler, welcome: welcome))
        self.localParticipantID = welcome.localParticipant.id
        self.shared = shared
        self.options = options
        self.appDataCipher = shared.appData?.cipher ?? NoAppDataKey()
        appMessageGate = AppMessageGate(maxSize: options.maxMessageSize, messagesPerSecond: options.maxMessagesPerSecond,
                                        burst: options.maxMessagesPerSecond, clock: options.clock)
    }

    static func open(invite: Invite, name: String, options: TandemClient.Options) async throws -> TandemClientConnection {
        // Without the secret (a relay's Syncplay clients hold the handshake key alone) there is no app-data key.
        let seal = options.handshakeKey == nil ? AppMessageSeal(cipher: AppDataCipher(invite: invite)) : nil
        let shared = ClientShared(appData: seal, clock: options.clock)
        let (channel, bound, welcome) = try await establish(invite: invite, name: name, options: options, shared: shared)
        let connection = TandemClientConnection(invite: invite, name: name, welcome: welcome, channel: channel,
                                                handler: bound, shared: shared, options: options)
        if options.reconnectGracePeriod > .zero {
            shared.hooks.withLock { hooks in
                hooks = ClientShared.ReconnectHooks(
                    lost: { [weak connection] reason, silentSince in
                        connection?.channelLost(reason, silentSince: silentSince)
                    },
                    resumed: { [weak connection] epoch, welcome, channel, handler in
                        connection?.resumed(epoch: epoch, welcome: welcome, channel: channel, handler: handler) ?? false
                    })
            }
        }
        return connection
    }

    /// Opens a channel, authenticates and joins; returns once the welcome has arrived. When the invite's host
    /// cannot be connected to and the invite names the server's address on the host's network (`?lan=`), that is
    /// dialled instead (a joiner in the host's home behind a router that does not take its own public address back
    /// in); the first failure is the one reported when both fail.
    static func establish(invite: Invite, name: String, options: TandemClient.Options, shared: ClientShared,
                          epoch: Int = 0, resuming: Bool = false)
        async throws -> (any Channel, NIOLoopBound<ClientConnectionHandler>, SessionSnapshot) {
        do {
            return try await establish(at: (invite.host, invite.port), invite: invite, name: name, options: options,
                                       shared: shared, epoch: epoch, resuming: resuming)
        } catch let failed as ConnectFailure {
            guard let lan = invite.localNetworkAddress else { throw failed.underlying }
            do {
                return try await establish(at: lan, invite: invite, name: name, options: options, shared: shared,
                                           epoch: epoch, resuming: resuming)
            } catch is ConnectFailure {
                throw failed.underlying
            }
        }
    }

    /// A connection that could not be opened at all (as against one that opened and then failed).
    struct ConnectFailure: Error {
        var underlying: any Error
    }

    private static func establish(at address: (host: String, port: Int), invite: Invite, name: String,
                                  options: TandemClient.Options, shared: ClientShared, epoch: Int, resuming: Bool)
        async throws -> (any Channel, NIOLoopBound<ClientConnectionHandler>, SessionSnapshot) {
        let group = options.eventLoopGroup ?? sharedClientGroup
        let welcomePromise = group.next().makePromise(of: SessionSnapshot.self)
        let handler = ClientConnectionHandler(invite: invite, name: name, options: options, shared: shared,
                                              welcome: welcomePromise, clock: options.clock, epoch: epoch,
                                              resuming: resuming)
        let bootstrap = try makeBootstrap(invite: invite, options: options, handler: handler,
                                          eventLoop: welcomePromise.futureResult.eventLoop)
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: address.host, port: address.port).get()
        } catch {
            throw ConnectFailure(underlying: error)
        }
        let timeout = channel.eventLoop.scheduleTask(in: TimeAmount(options.connectTimeout)) {
            welcomePromise.fail(TandemClientError.timedOut)
            channel.close(promise: nil)
        }
        let welcome: SessionSnapshot
        do {
            welcome = try await welcomePromise.futureResult.get()
            timeout.cancel()
        } catch {
            timeout.cancel()
            channel.close(promise: nil)
            throw error
        }
        let bound = try await channel.pipeline.handler(type: ClientConnectionHandler.self).map { handler in
            NIOLoopBound(handler, eventLoop: channel.eventLoop)
        }.get()
        return (channel, bound, welcome)
    }

    // MARK: SessionLink

    /// While the connection reconnects, reliable messages wait for the new link (at most
    /// `Options.maxSendsWaitingForReconnect` at once; beyond that this throws `TandemClientError.reconnecting`) and
    /// go out after it, in the order their senders resumed; unreliable app messages are dropped. When the grace
    /// period runs out, waiting sends throw the `InvalidationReason`. What the lost channel had not yet written to
    /// the network when it died is lost with it.
    public func send(_ message: ClientMessage) async throws {
        if let reason = shared.closedReason { throw reason }
        var message = message
        if case .timelineRequest(var request) = message, options.timelinesOverDatagrams,
           shared.serverTakesRequestCopies.load(ordering: .relaxed), let link = shared.datagramLink {
            // A copy as a datagram first, so that a lost TCP segment does not hold the command back; the server acts
            // on whichever comes first.
            request.copy = shared.lastRequestCopy.wrappingAdd(1, ordering: .relaxed).newValue
            message = .timelineRequest(request)
            link.sendRequestCopy(message)
        }
        if case .appMessage(let app) = message, app.delivery == .unreliable {
            if isReconnecting { return }
            // As a datagram while the UDP path works: it does not wait behind the TCP stream.
            if let link = shared.datagramLink, link.sendUnreliable(message) { return }
        }
        try await shared.waitForChannel(limit: options.maxSendsWaitingForReconnect)
        let channel = self.channel
        // App messages arrive checked against their sender's limits and numbered (`AppMessageGate`): a messenger's,
        // or `sendAppMessage`'s. Passed on as they are; the server enforces its own limits.
        if case .appMessage(let app) = message, app.delivery == .unreliable, !channel.isWritable {
            return  // Best effort: dropped rather than queued behind reliable traffic.
        }
        let frame = try SessionCodec.encode(message, allocator: channel.allocator,
                                            linkReportFrames: shared.linkReportFrames.load(ordering: .relaxed))
        if !channel.isWritable {
            let handler = self.handler
            try await channel.eventLoop.flatSubmit { handler.value.whenWritable() }.get()
        }
        channel.writeAndFlush(frame, promise: nil)
    }

    public func serverMessages() -> AsyncStream<ServerMessage> { shared.messages.subscribe() }

    public func clockMapping() -> ClockMapping? { shared.clock.withLock { $0.mapping } }

    /// The server checks every attachment's SHA-256 as it passes; journals hash with the same function.
    public var attachmentHasher: (@Sendable (Data) -> String)? {
        { SHA256Hex.digest($0) }
    }

    /// Messenger payloads and journal attachments are sealed with a key derived from the invite's secret (a
    /// connection made with the handshake key alone can neither seal nor open them: see `NoAppDataKey`).
    public var payloadCipher: (any PayloadCipher)? { appDataCipher }

    /// Every clock exchange from now on, as it completes (`t1`, `t4` on this peer's clock; `t2`, `t3` on session
    /// time). For code that wants the raw samples rather than the estimate, such as the benchmarks' baselines.
    public func clockSamples() -> AsyncStream<ClockSample> { shared.samples.subscribe() }

    public func clockQuality() -> (errorBound: TimeSpan, roundTrip: TimeSpan)? {
        shared.clock.withLock { state in
            guard let bound = state.errorBound, let rt = state.roundTrip else { return nil }
            return (bound, rt)
        }
    }

    /// How much the clock probes' answers were delayed beyond the least, at about the 99th percentile
    /// (`ClockSyncEstimator.returnDelaySpread`); nil until enough have come.
    public func returnDelaySpread() -> TimeSpan? {
        shared.clock.withLock { $0.returnDelaySpread }
    }

    public func close() async {
        let wasReconnecting = phase.withLock { phase -> Bool in
            defer { phase = .closing }
            if case .reconnecting = phase { return true }
            return false
        }
        if wasReconnecting {
            reconnectTask.withLock { $0 }?.cancel()
            shared.finish(InvalidationReason(code: .left, message: "left the session"), announce: true)
            return
        }
        if shared.closedReason == nil {
            try? await send(.leave)
            let handler = self.handler
            try? await channel.eventLoop.submit {
                handler.value.closeAfterSending(.left, "left the session")
            }.get()
        }
        try? await channel.closeFuture.get()
    }

    // MARK: Beyond SessionLink

    /// The path unreliable app messages take now: `.udp`, or `.tcp(reason:)` while UDP is not offered or gets no
    /// answer.
    public var unreliablePath: UnreliablePath { shared.datagramStatus.path }

    /// The path and what became of this connection's datagrams (sent, received, rejected, fallbacks to TCP).
    public var datagramStatus: DatagramStatus { shared.datagramStatus }

    /// Why the link closed, or nil while it is open.
    public var closedReason: InvalidationReason? { shared.closedReason }

    /// Closes the socket abruptly, without a goodbye (tests and fault drills); no reconnect follows.
    public func abort() async {
        phase.withLock { $0 = .closing }
        reconnectTask.withLock { $0 }?.cancel()
        try? await channel.close()
        shared.finish(InvalidationReason(code: .connectionLost, message: "the connection was aborted"), announce: true)
    }

    /// The next per-sender sequence number for app messages.
    public func nextMessageSequence() -> UInt64 { appMessageGate.nextSequence() }

    /// Stops (or resumes) reading the TCP connection, as a peer whose TCP path is stalled: what the server sends
    /// over TCP waits in the socket buffers meanwhile (fault drills and tests).
    @_spi(Testing) public func setTCPReadingPaused(_ paused: Bool) async {
        try? await channel.setOption(.autoRead, value: !paused).get()
    }

    // MARK: On the event loop (load generators)

    /// The event loop of the current channel, for work that must run beside the connection (load generators).
    @_spi(EventLoopAccess) public var eventLoop: any EventLoop { channel.eventLoop }

    /// Hands every app message from now on to `tap` on the connection's event loop, with the time its frame was
    /// decoded, instead of to `serverMessages()` subscribers: for load generators, which must not measure their
    /// own queues.
    @_spi(EventLoopAccess) public func tapAppMessages(_ tap: @escaping @Sendable (IncomingAppMessage, LocalInstant) -> Void) {
        shared.appTap.withLock { $0 = AppMessageTap(handler: tap) }
    }

    /// Writes a reliable app message to everyone, on the connection's event loop (which the caller must be on).
    /// Returns false when the connection cannot take it.
    @_spi(EventLoopAccess) public func writeAppMessageOnLoop(_ payload: Data) -> Bool {
        writeOnLoop(.appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable,
                                                   sequence: nextMessageSequence(), payload: payload)))
    }

    /// Writes `message` on the connection's event loop (which the caller must be on), encoded as `send` encodes
    /// it. Returns false when the connection cannot take it.
    @_spi(EventLoopAccess) public func writeOnLoop(_ message: ClientMessage) -> Bool {
        channel.eventLoop.preconditionInEventLoop()
        guard shared.closedReason == nil, channel.isWritable,
              let frame = try? SessionCodec.encode(message, allocator: channel.allocator,
                                                   linkReportFrames: shared.linkReportFrames.load(ordering: .relaxed))
        else { return false }
        channel.writeAndFlush(frame, promise: nil)
        return true
    }

    /// Removes an attachment this peer owns, for everyone.
    public func removeAttachment(id: String) async throws {
        try await send(.journal(.remove(id: id)))
    }
}
