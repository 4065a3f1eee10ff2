import Foundation
import NIOCore
import NIOPosix
import TandemTLS
import NIOTLS
import Synchronization
import TandemCore

/// Splits a byte stream into lines (without `\n`, `\r` dropped), refusing a line longer than `maxLength`.
struct LineFramer: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    let maxLength: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
            guard buffer.readableBytes <= maxLength else { throw SyncplayProtocolError("a line longer than \(maxLength) bytes") }
            return .needMoreData
        }
        let length = newline - view.startIndex
        guard length <= maxLength else { throw SyncplayProtocolError("a line longer than \(maxLength) bytes") }
        var line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if line.readableBytes > 0, line.getInteger(at: line.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r") {
            line = line.getSlice(at: line.readerIndex, length: line.readableBytes - 1)!
        }
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }
}

/// Why a Syncplay connection failed or ended.
public enum SyncplayConnectionError: Error, Sendable, CustomStringConvertible {
    case unreachable(String)
    case closed(String)
    /// STARTTLS was refused or the TLS handshake failed (a certificate this peer does not trust, a wrong name).
    case tls(String)
    /// The server answered the hello with an error (a wrong room password, a name it does not take).
    case refused(String)

    public var description: String {
        switch self {
        case .unreachable(let detail): return "cannot reach the Syncplay server: \(detail)"
        case .closed(let reason): return "the Syncplay connection ended: \(reason)"
        case .tls(let detail): return "Syncplay over TLS failed: \(detail)"
        case .refused(let message): return "the Syncplay server refused to let this peer in: \(message)"
        }
    }
}

/// Syncplay over TLS (its STARTTLS): the server's certificate is checked against the PEM roots in `trustRootsPath`
/// (default: the system's) and against the host name, or the address when the host is one.
public struct SyncplayTLS: Sendable {
    public var trustRootsPath: String?

    public init(trustRootsPath: String? = nil) {
        self.trustRootsPath = trustRootsPath
    }
}

/// One connection to a Syncplay server, driven by `SyncplayClientState`: lines in, commands decoded, heartbeats
/// answered at once, events out. `local` says where this peer's player is, for the heartbeat (nil: nowhere of its own
/// yet, and the heartbeat repeats the room's state).
public final class SyncplayConnection: Sendable {
    public let events: AsyncStream<SyncplayClientState.Event>
    private let continuation: AsyncStream<SyncplayClientState.Event>.Continuation
    private let state: Mutex<SyncplayClientState>
    private let channel: any Channel
    private let local: @Sendable () -> SyncplayLocalPlaystate?
    private let clock: any MonotonicClock
    private let ended = Mutex<String?>(nil)
    /// The room's members as the server's latest `List` named them (nil before the first).
    private let listed = Mutex<[String: SyncplayListedUser]?>(nil)
    private let done: EventLoopPromise<Void>
    /// The server's first answer to the hello: its welcome, or the error or end that came instead.
    private let answer: FirstAnswer
    /// STARTTLS under way: asked, then (once the server agreed) handshaking.
    private let upgrade = Mutex<TLSUpgrade?>(nil)

    private struct TLSUpgrade {
        let context: TLSContext
        let serverHostname: String?
        let finished: EventLoopPromise<Void>
        var handshaking = false
    }

    /// Connects to `host:port`, upgrades to TLS first when `tls` is given (the server must agree), says hello and
    /// waits (at most `answerTimeout`) for the server's answer: its welcome returns the connection, its error (a wrong
    /// password) is thrown as `refused`, and an end before either as `closed`.
    public static func connect(host: String, port: Int, tls: SyncplayTLS? = nil,
                               configuration: SyncplayClientState.Configuration,
                               clock: any MonotonicClock = SystemMonotonicClock(),
                               group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                               answerTimeout: Duration = .seconds(10),
                               local: @escaping @Sendable () -> SyncplayLocalPlaystate?) async throws(SyncplayConnectionError) -> SyncplayConnection {
        let holder = Mutex<SyncplayConnection?>(nil)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(10))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineFramer(maxLength: SyncplayCodec.maxLineBytes)))
                        try channel.pipeline.syncOperations.addHandler(LineHandler { event in
                            holder.withLock { $0 }?.handle(event)
                        })
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            throw .unreachable("\(host):\(port): \(error)")
        }
        let connection = SyncplayConnection(channel: channel, configuration: configuration, clock: clock, local: local)
        holder.withLock { $0 = connection }
        if let tls {
            do { try await connection.startTLS(tls, host: host) } catch {
                await connection.close()
                throw error
            }
        }
        connection.perform(connection.state.withLock { $0.start(now: clock.now) })
        connection.startTicking()
        do { try await connection.awaitAnswer(within: answerTimeout) } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    /// Waits for the server's first answer to the hello (see `connect`).
    private func awaitAnswer(within timeout: Duration) async throws(SyncplayConnectionError) {
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout / .nanoseconds(1)))) { [weak self] in
            self?.settleAnswer(.closed("no answer to the hello within \(timeout) — is this a Syncplay server?"))
        }
        defer { timer.cancel() }
        do { try await answer.promise.futureResult.get() } catch let error as SyncplayConnectionError { throw error } catch {
            throw .closed("\(error)")
        }
    }

    private func settleAnswer(_ error: SyncplayConnectionError?) { answer.settle(error) }

    /// A promise settled once: welcomed (`nil`) or not.
    private final class FirstAnswer: Sendable {
        let promise: EventLoopPromise<Void>
        private let pending = Mutex(true)

        init(_ promise: EventLoopPromise<Void>) { self.promise = promise }

        func settle(_ error: SyncplayConnectionError?) {
            guard pending.withLock({ value in defer { value = false }; return value }) else { return }
            if let error { promise.fail(error) } else { promise.succeed() }
        }
    }

    private init(channel: any Channel, configuration: SyncplayClientState.Configuration, clock: any MonotonicClock,
                 local: @escaping @Sendable () -> SyncplayLocalPlaystate?) {
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
        self.state = Mutex(SyncplayClientState(configuration: configuration))
        self.channel = channel
        self.clock = clock
        self.local = local
        self.done = channel.eventLoop.makePromise()
        self.answer = FirstAnswer(channel.eventLoop.makePromise())
        channel.closeFuture.whenComplete { [continuation, done] _ in
            continuation.finish()
            done.succeed()
        }
        // Settled even should this object be gone, so that the promise is never left open.
        channel.closeFuture.whenComplete { [answer, weak self] _ in
            answer.settle(.closed(self?.endReason ?? "the server closed the connection before answering the hello"))
        }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.finishUpgrade(.tls("the connection closed: \(self?.endReason ?? "by the server")"))
        }
    }

    /// The name the server gave this peer, the smoothed round trip (s) and the room's other users.
    public var username: String { state.withLock { $0.username } }
    public var averageRTT: Double { state.withLock { $0.averageRTT } }
    public var users: [String: SyncplayFile?] { state.withLock { $0.users } }
    /// Why the connection ended (nil while it is open).
    public var endReason: String? { ended.withLock { $0 } }

    /// Tells the room this player paused, played or seeked.
    public func localChange(_ playstate: SyncplayLocalPlaystate, seek: Bool) {
        let now = clock.now
        perform(state.withLock { $0.localChange(playstate, seek: seek, now: now) })
    }

    /// Sends a chat line (Syncplay cuts it to the server's limit, 150 characters by default).
    public func chat(_ text: String) { send(.chat(username: nil, message: SyncplayCodec.text(text))) }

    /// Says whether this peer is ready.
    public func setReady(_ ready: Bool) { send(.set([.ready(username: nil, isReady: ready, manuallyInitiated: false)])) }

    /// Sends one setting to the room: a playlist (`playlistChange`), the entry selected in it (`playlistIndex`), the
    /// file this player now plays (`file`). Texts are bounded as the codec bounds what it reads.
    public func set(_ setting: SyncplaySetting) {
        switch setting {
        case .playlistChange(let user, let files):
            send(.set([.playlistChange(user: user, files: files.prefix(SyncplayCodec.maxPlaylistEntries).map(SyncplayCodec.text))]))
        case .file(var file):
            file.name = SyncplayCodec.text(file.name)
            send(.set([.file(file)]))
        default:
            send(.set([setting]))
        }
    }

    /// The room's members (this peer among them) from the server's first answer to the `List` this connection asks
    /// for after the hello; nil when none came within `timeout` or the connection ended first.
    public func listing(within timeout: Duration) async -> [String: SyncplayListedUser]? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, endReason == nil {
            if let members = listed.withLock({ $0 }) { return members }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return listed.withLock { $0 }
    }

    /// Closes the connection.
    public func close() async {
        ended.withLock { $0 = $0 ?? "closed here" }
        try? await channel.close()
        try? await done.futureResult.get()
    }

    // MARK: Inside

    private func handle(_ event: LineHandler.Event) {
        switch event {
        case .line(let text) where upgrade.withLock({ $0.map { !$0.handshaking } ?? false }):
            answerUpgrade(text)
        case .secured:
            finishUpgrade(nil)
        case .line(let text):
            let commands: [SyncplayCommand]
            do { commands = try SyncplayCodec.decode(text) } catch {
                fail("a bad line from the server (\(error))")
                return
            }
            let playstate = local()
            let now = clock.now
            perform(state.withLock { $0.receive(commands, now: now, local: playstate) })
        case .failed(let error):
            finishUpgrade(.tls("the handshake failed (\(error)) — the server's certificate must be signed by one of "
                + "the trust roots (--trust-roots, or the system's) and name this host"))
            fail("\(error)")
        }
    }

    // MARK: STARTTLS

    /// Asks the server to switch to TLS and waits (at most 10 s) until the handshake is done.
    private func startTLS(_ tls: SyncplayTLS, host: String) async throws(SyncplayConnectionError) {
        let context: TLSContext
        do {
            context = try TLSContext.client(trustRootsPath: tls.trustRootsPath)
        } catch {
            throw .tls("cannot use the trust roots \(tls.trustRootsPath ?? "of the system"): \(error)")
        }
        // A host name, or a literal address (the certificate is then checked against the address).
        let finished = channel.eventLoop.makePromise(of: Void.self)
        upgrade.withLock { $0 = TLSUpgrade(context: context, serverHostname: host, finished: finished) }
        send(.tls("send"))
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(10)) { [weak self] in
            self?.finishUpgrade(.tls("no TLS within 10 s of asking"))
        }
        defer { timeout.cancel() }
        do { try await finished.futureResult.get() } catch let error as SyncplayConnectionError { throw error } catch {
            throw .tls("\(error)")
        }
    }

    /// The server's answer to STARTTLS: on "true" the TLS handler goes in front of everything (on the event loop).
    private func answerUpgrade(_ text: String) {
        let commands = (try? SyncplayCodec.decode(text)) ?? []
        guard commands.contains(.tls("true")) else {
            finishUpgrade(.tls("the Syncplay server does not offer TLS — use syncplay:// to join it without TLS"))
            return
        }
        // Marked first and added outside the lock: the handshake starts as the handler is added.
        guard let pending = upgrade.withLock({ value in value?.handshaking = true; return value }) else { return }
        do {
            let handler = try TLSHandler.client(context: pending.context, serverName: pending.serverHostname)
            try channel.pipeline.syncOperations.addHandler(handler, position: .first)
        } catch {
            finishUpgrade(.tls("cannot start TLS: \(error)"))
        }
    }

    /// Ends STARTTLS once: done (`nil`) or failed, which closes the connection.
    private func finishUpgrade(_ error: SyncplayConnectionError?) {
        guard let pending = upgrade.withLock({ value in defer { value = nil }; return value }) else { return }
        if let error {
            pending.finished.fail(error)
            fail("\(error)")
        } else {
            pending.finished.succeed()
        }
    }

    private func perform(_ actions: [SyncplayClientState.Action]) {
        for action in actions {
            switch action {
            case .send(let command): send(command)
            case .event(let event):
                switch event {
                case .usersListed(let members): listed.withLock { $0 = members }
                case .welcomed: settleAnswer(nil)
                case .serverError(let message): settleAnswer(.refused(message))
                default: break
                }
                continuation.yield(event)
            case .close(let reason): fail(reason)
            }
        }
    }

    private func send(_ command: SyncplayCommand) {
        var buffer = channel.allocator.buffer(capacity: 256)
        buffer.writeString(SyncplayCodec.encode(command))
        buffer.writeString("\r\n")
        channel.writeAndFlush(buffer, promise: nil)
    }

    private func fail(_ reason: String) {
        ended.withLock { $0 = $0 ?? reason }
        channel.close(promise: nil)
    }

    private func startTicking() {
        let task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [weak self] task in
            guard let self else { task.cancel(); return }
            let now = self.clock.now
            self.perform(self.state.withLock { $0.tick(now: now) })
        }
        channel.closeFuture.whenComplete { _ in task.cancel() }
    }
}

/// Hands each framed line (or the failure that ends the connection) to its owner, on the event loop.
private final class LineHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    enum Event { case line(String), secured, failed(any Error) }
    let onEvent: @Sendable (Event) -> Void

    init(onEvent: @escaping @Sendable (Event) -> Void) { self.onEvent = onEvent }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        onEvent(.line(String(decoding: buffer.readableBytesView, as: UTF8.self)))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { onEvent(.secured) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        onEvent(.failed(error))
        context.close(promise: nil)
    }
}
