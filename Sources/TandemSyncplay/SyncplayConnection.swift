import Foundation
import NIOCore
import NIOPosix
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

    public var description: String {
        switch self {
        case .unreachable(let detail): return "cannot reach the Syncplay server: \(detail)"
        case .closed(let reason): return "the Syncplay connection ended: \(reason)"
        }
    }
}

/// One connection to a Syncplay server, driven by `SyncplayClientState`: lines in, commands decoded, heartbeats
/// answered at once, events out. `local` says where this peer's player is, for the heartbeat.
public final class SyncplayConnection: Sendable {
    public let events: AsyncStream<SyncplayClientState.Event>
    private let continuation: AsyncStream<SyncplayClientState.Event>.Continuation
    private let state: Mutex<SyncplayClientState>
    private let channel: any Channel
    private let local: @Sendable () -> SyncplayLocalPlaystate
    private let clock: any MonotonicClock
    private let ended = Mutex<String?>(nil)
    private let done: EventLoopPromise<Void>

    /// Connects to `host:port` and says hello.
    public static func connect(host: String, port: Int, configuration: SyncplayClientState.Configuration,
                               clock: any MonotonicClock = SystemMonotonicClock(),
                               group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                               local: @escaping @Sendable () -> SyncplayLocalPlaystate) async throws(SyncplayConnectionError) -> SyncplayConnection {
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
        connection.perform(connection.state.withLock { $0.start(now: clock.now) })
        connection.startTicking()
        return connection
    }

    private init(channel: any Channel, configuration: SyncplayClientState.Configuration, clock: any MonotonicClock,
                 local: @escaping @Sendable () -> SyncplayLocalPlaystate) {
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
        self.state = Mutex(SyncplayClientState(configuration: configuration))
        self.channel = channel
        self.clock = clock
        self.local = local
        self.done = channel.eventLoop.makePromise()
        channel.closeFuture.whenComplete { [continuation, done] _ in
            continuation.finish()
            done.succeed()
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

    /// Closes the connection.
    public func close() async {
        ended.withLock { $0 = $0 ?? "closed here" }
        try? await channel.close()
        try? await done.futureResult.get()
    }

    // MARK: Inside

    private func handle(_ event: LineHandler.Event) {
        switch event {
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
            fail("\(error)")
        }
    }

    private func perform(_ actions: [SyncplayClientState.Action]) {
        for action in actions {
            switch action {
            case .send(let command): send(command)
            case .event(let event): continuation.yield(event)
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
    enum Event { case line(String), failed(any Error) }
    let onEvent: @Sendable (Event) -> Void

    init(onEvent: @escaping @Sendable (Event) -> Void) { self.onEvent = onEvent }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        onEvent(.line(String(decoding: buffer.readableBytesView, as: UTF8.self)))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        onEvent(.failed(error))
        context.close(promise: nil)
    }
}
