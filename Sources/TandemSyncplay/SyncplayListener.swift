import Foundation
import NIOCore
import NIOPosix
import TandemTLS
import NIOTLS
import Synchronization
import TandemCore

/// How many Syncplay connections are open, in all and per address; refuses one past either bound.
public struct SyncplayAdmission: Sendable {
    public let maxTotal: Int
    public let maxPerAddress: Int
    public private(set) var total = 0
    private var perAddress: [String: Int] = [:]

    public init(maxTotal: Int, maxPerAddress: Int) {
        self.maxTotal = maxTotal
        self.maxPerAddress = maxPerAddress
    }

    /// Counts a new connection from `address`, or says why it is refused.
    public mutating func open(from address: String) -> String? {
        guard total < maxTotal else { return "this server has \(maxTotal) Syncplay connections already — try again later" }
        guard perAddress[address, default: 0] < maxPerAddress else {
            return "\(maxPerAddress) Syncplay connections from your address already — close one first"
        }
        total += 1
        perAddress[address, default: 0] += 1
        return nil
    }

    public mutating func close(from address: String) {
        guard let count = perAddress[address] else { return }
        total -= 1
        perAddress[address] = count > 1 ? count - 1 : nil
    }
}

/// A Syncplay-protocol listener: TCP, one JSON object per line, each connection driven by `SyncplayServerState`.
/// A hello goes to the owner's gate (which room, which password); an admitted client is handed over as a
/// `SyncplayGuest`. Bounded in connections (in all and per address), and per connection as `Limits` say. With
/// `Configuration.tls`, a client that asks for STARTTLS before its hello gets TLS on the same connection.
public final class SyncplayListener: Sendable {
    public struct Configuration: Sendable {
        public var limits = SyncplayServerState.Limits()
        public var maxConnections = 64
        public var maxConnectionsPerAddress = 8
        public var motd: String?
        /// Hello features beyond or instead of the defaults (`SyncplayServerState.admit`); `chat: false` keeps chat
        /// out both ways.
        public var features: [String: SyncplayValue] = [:]
        /// The server's certificate and key (`SessionServer.tlsContext`): STARTTLS is answered "true" with it,
        /// "false" without.
        public var tls: TLSContext?
        public init() {}
    }

    /// What the owner answers a hello with.
    public enum Admission: Sendable {
        /// Welcome, under this name, into a room with these other users (and whether each is ready).
        case admit(username: String, members: [String: Bool?])
        case refuse(String)
    }

    public typealias Gate = @Sendable (_ room: String, _ passwordMD5: String?, _ username: String) -> Admission

    public let port: Int
    private let channel: any Channel
    private let admission: Locked<SyncplayAdmission>

    /// Listens on `host:port` (0 picks a free port). `gate` decides on each hello, on an event loop (keep it quick);
    /// `welcomed` receives each admitted client.
    public static func start(host: String, port: Int, configuration: Configuration = Configuration(),
                             clock: any MonotonicClock = SystemMonotonicClock(),
                             group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                             gate: @escaping Gate, welcomed: @escaping @Sendable (SyncplayGuest) -> Void) async throws -> SyncplayListener {
        let admission = Locked(SyncplayAdmission(maxTotal: configuration.maxConnections,
                                                 maxPerAddress: configuration.maxConnectionsPerAddress))
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { child in
                let address = child.remoteAddress?.ipAddress ?? "?"
                if let refusal = admission.withLock({ $0.open(from: address) }) {
                    return child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.addHandler(RefusingHandler(message: refusal))
                    }
                }
                child.closeFuture.whenComplete { _ in admission.withLock { $0.close(from: address) } }
                let guest = SyncplayGuest(channel: child, address: address, limits: configuration.limits,
                                          motd: configuration.motd, features: configuration.features, tls: configuration.tls,
                                          clock: clock, gate: gate, welcomed: welcomed)
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineFramer(maxLength: configuration.limits.lineBytes)))
                    try child.pipeline.syncOperations.addHandler(GuestLineHandler(guest: guest))
                    guest.startTicking()
                }
            }
            .bind(host: host, port: port).get()
        return SyncplayListener(channel: channel, admission: admission)
    }

    private init(channel: any Channel, admission: Locked<SyncplayAdmission>) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
        self.admission = admission
    }

    /// Syncplay connections open now.
    public var connectionCount: Int { admission.withLock { $0.total } }

    /// Stops listening (open connections are left to their owners).
    public func close() async { try? await channel.close() }
}

/// One Syncplay client on the listener: its lines go through `SyncplayServerState`; once admitted, its owner
/// follows `events` and tells it about the room.
public final class SyncplayGuest: Sendable {
    public let address: String
    public let events: AsyncStream<SyncplayServerState.Event>
    private let continuation: AsyncStream<SyncplayServerState.Event>.Continuation
    private let channel: any Channel
    private let state: Mutex<SyncplayServerState>
    private let clock: any MonotonicClock
    private let motd: String?
    private let features: [String: SyncplayValue]
    private let tls: TLSContext?
    private let gate: SyncplayListener.Gate
    private let welcomed: @Sendable (SyncplayGuest) -> Void
    private let roomNow = Mutex<@Sendable () -> SyncplayRoomPlaystate>({ SyncplayRoomPlaystate(position: 0, paused: true) })
    private let ended = Mutex<String?>(nil)

    init(channel: any Channel, address: String, limits: SyncplayServerState.Limits, motd: String?,
         features: [String: SyncplayValue], tls: TLSContext?, clock: any MonotonicClock,
         gate: @escaping SyncplayListener.Gate, welcomed: @escaping @Sendable (SyncplayGuest) -> Void) {
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
        self.channel = channel
        self.address = address
        self.state = Mutex(SyncplayServerState(limits: limits, offersTLS: tls != nil, now: clock.now))
        self.tls = tls
        self.clock = clock
        self.motd = motd
        self.features = features
        self.gate = gate
        self.welcomed = welcomed
        channel.closeFuture.whenComplete { [continuation] _ in continuation.finish() }
    }

    public var username: String { state.withLock { $0.username } }
    public var room: String { state.withLock { $0.room } }
    public var averageRTT: Double { state.withLock { $0.averageRTT } }
    /// Why the connection ended (nil while it is open).
    public var endReason: String? { ended.withLock { $0 } }
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Where the room is now, asked at every heartbeat.
    public func followRoom(_ now: @escaping @Sendable () -> SyncplayRoomPlaystate) { roomNow.withLock { $0 = now } }

    /// The room paused, played or seeked: a forced state at once.
    public func roomChanged(_ playstate: SyncplayRoomPlaystate, doSeek: Bool) {
        let now = clock.now
        perform(state.withLock { $0.roomChanged(playstate, doSeek: doSeek, now: now) })
    }

    public func userJoined(_ name: String) { perform(state.withLock { $0.userJoined(name) }) }
    public func userLeft(_ name: String) { perform(state.withLock { $0.userLeft(name) }) }
    public func userReady(_ name: String, isReady: Bool) { perform(state.withLock { $0.userReady(name, isReady: isReady) }) }
    public func chat(from name: String, _ message: String) { perform(state.withLock { $0.chat(from: name, message) }) }

    /// Ends the connection with Syncplay's `Error` saying why.
    public func close(_ reason: String) {
        perform(state.withLock { $0.refuse(reason) })
    }

    // MARK: Inside

    func line(_ text: String) {
        let room = roomNow.withLock { $0 }()
        let now = clock.now
        perform(state.withLock { $0.receive(line: text, now: now, room: room) })
    }

    func failed(_ error: any Error) {
        if error is SyncplayProtocolError {
            perform(state.withLock { $0.oversized() })
        } else if case .uncleanShutdown? = error as? TandemTLSError {
            // The client closed without TLS's goodbye (Syncplay's often do): closed, as a plain connection would be.
            ended.withLock { $0 = $0 ?? "closed by the client" }
            channel.close(promise: nil)
        } else if error is TandemTLSError {
            perform(state.withLock { $0.tlsFailed("\(error)") })
        } else {
            ended.withLock { $0 = $0 ?? "\(error)" }
            channel.close(promise: nil)
        }
    }

    func tlsEstablished() {
        let now = clock.now
        perform(state.withLock { $0.tlsEstablished(now: now) })
    }

    func startTicking() {
        let task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { [weak self] task in
            guard let self else { task.cancel(); return }
            let room = self.roomNow.withLock { $0 }()
            let now = self.clock.now
            self.perform(self.state.withLock { $0.tick(now: now, room: room) })
        }
        channel.closeFuture.whenComplete { _ in task.cancel() }
    }

    private func perform(_ actions: [SyncplayServerState.Action]) {
        var lastWrite: EventLoopFuture<Void>?
        for action in actions {
            switch action {
            case .send(let command):
                var buffer = channel.allocator.buffer(capacity: 256)
                buffer.writeString(SyncplayCodec.encodeForClient(command))
                buffer.writeString("\r\n")
                lastWrite = channel.writeAndFlush(buffer)
            case .event(.hello(let username, let room, let password)):
                switch gate(room, password, username) {
                case .admit(let name, let members):
                    let now = clock.now
                    perform(state.withLock { $0.admit(as: name, members: members, features: features, motd: motd, now: now) })
                    welcomed(self)
                case .refuse(let message):
                    perform(state.withLock { $0.refuse(message) })
                }
            case .event(let event):
                continuation.yield(event)
            case .close(let reason):
                ended.withLock { $0 = $0 ?? reason }
                // What was sent (Syncplay's Error saying why) goes out first, for at most 2 s (a TLS handshake that
                // never ends holds it back); then only the way out is closed, and what the client still sends is read
                // and dropped (the state is closed) until it closes too: closing with unread input resets the
                // connection, and a reset can take the Error with it before the client reads it.
                let channel = channel
                if let lastWrite {
                    lastWrite.whenComplete { _ in
                        // Where the way out alone cannot be closed, everything is.
                        channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
                    }
                    channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
                } else {
                    channel.close(promise: nil)
                }
            case .startTLS:
                startTLS()
            }
        }
    }
}

extension SyncplayGuest {
    /// The "true" was written in the clear (it is past the front of the pipeline): TLS goes in front of everything,
    /// and the client starts the handshake.
    fileprivate func startTLS() {
        guard let tls else { return }
        let channel = channel
        let insert = { [weak self] in
            do {
                try channel.pipeline.syncOperations.addHandler(TLSHandler.server(context: tls), position: .first)
            } catch {
                self?.perform(self?.state.withLock { $0.tlsFailed("\(error)") } ?? [])
            }
        }
        if channel.eventLoop.inEventLoop { insert() } else { channel.eventLoop.execute(insert) }
    }
}

private final class GuestLineHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let guest: SyncplayGuest

    init(guest: SyncplayGuest) { self.guest = guest }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guest.line(String(decoding: buffer.readableBytesView, as: UTF8.self))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guest.failed(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { guest.tlsEstablished() }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Tells a connection past the bounds why (Syncplay's `Error`) and closes it.
private final class RefusingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let message: String

    init(message: String) { self.message = message }

    func channelActive(context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 128)
        buffer.writeString(SyncplayCodec.encode(.error(message)) + "\r\n")
        let channel = context.channel
        // Closed at once (not only the way out, as for an admitted client): a connection past the bounds holds
        // nothing of ours a moment longer than it must.
        context.writeAndFlush(NIOAny(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
