import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

/// A server on loopback with timings short enough for tests.
func startTestServer(maxParticipants: Int = 8, maxSessions: Int = 16, handshakeTimeout: TimeSpan = .milliseconds(1_500),
                     maxFramesPerSecond: Int = 20_000, remoteCreation: Bool = false,
                     tls: ServerTLSFiles? = nil) async throws -> SessionServer {
    var authority = AuthorityConfiguration()
    authority.maxParticipants = maxParticipants
    authority.endsWhenHostLeaves = false
    authority.appMessagesPerSecond = 10_000
    authority.appMessageBurst = 10_000
    var configuration = ServerConfiguration(authority: authority)
    configuration.maxSessions = maxSessions
    configuration.handshakeTimeout = handshakeTimeout
    configuration.maxFramesPerSecond = maxFramesPerSecond
    configuration.allowsRemoteSessionCreation = remoteCreation
    var logger = Logger(label: "tandem.test.server")
    logger.logLevel = .warning
    return try await SessionServer.start(host: "127.0.0.1", port: 0, tls: tls, configuration: configuration,
                                         logger: logger)
}

func clientOptions(asHost: Bool = false, reconnectAs: ParticipantID? = nil) -> TandemClient.Options {
    var options = TandemClient.Options()
    options.asHost = asHost
    options.reconnectAs = reconnectAs
    options.maxMessagesPerSecond = 10_000
    return options
}

/// Waits for the first element of `stream` satisfying `predicate`, or nil after `timeout` seconds.
func firstElement<Element: Sendable>(in stream: AsyncStream<Element>, within timeout: Double,
                                     where predicate: @escaping @Sendable (Element) -> Bool = { _ in true }) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await element in stream where predicate(element) { return element }
            return nil
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Waits for the first message satisfying `predicate`, or nil after `timeout` seconds.
func firstMessage(in stream: AsyncStream<ServerMessage>, within timeout: Double,
                  where predicate: @escaping @Sendable (ServerMessage) -> Bool) async -> ServerMessage? {
    await firstElement(in: stream, within: timeout, where: predicate)
}

/// `app`'s payload opened in its place with `receiver`'s cipher, the header taken off (without the order checks
/// `appMessages()` makes), or nil when it does not open.
func openedPayload(_ app: IncomingAppMessage, with receiver: TandemClientConnection) -> Data? {
    let place = SealedPlace.message(sender: app.source, delivery: app.delivery, sequence: app.sequence)
    guard let plaintext = try? receiver.payloadCipher?.open(app.payload, at: place),
          let (_, payload) = AppMessageHeader.split(plaintext) else { return nil }
    return payload
}

/// Collects app messages from `stream` until `count` have arrived or `timeout` passes. With `receiver`, each
/// payload is opened with its `payloadCipher` (one that does not open stays sealed).
func collectAppMessages(_ stream: AsyncStream<ServerMessage>, count: Int, within timeout: Double,
                        opening receiver: TandemClientConnection? = nil) async -> [IncomingAppMessage] {
    await withTaskGroup(of: [IncomingAppMessage]?.self) { group in
        group.addTask {
            var out: [IncomingAppMessage] = []
            for await message in stream {
                if case .appMessage(var app) = message {
                    if let receiver, let opened = openedPayload(app, with: receiver) { app.payload = opened }
                    out.append(app)
                    if out.count == count { break }
                }
            }
            return out
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            return nil
        }
        var result: [IncomingAppMessage] = []
        if let first = await group.next(), let value = first { result = value }
        group.cancelAll()
        return result
    }
}

/// Connects to `port` on 127.0.0.1 (from `source`, another loopback address, when given; with a small receive
/// buffer when `receiveBuffer` is given) with the handler `make` builds. The handler goes in before the
/// connection is up, so a server that closes at once is seen closing.
func loopbackConnection<Handler: ChannelInboundHandler & Sendable>(
    port: Int, from source: String? = nil, receiveBuffer: Int? = nil,
    make: @escaping @Sendable (any Channel) -> Handler
) async throws -> Handler {
    var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
    if let receiveBuffer { bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer)) }
    let made = NIOLockedValueBox<Handler?>(nil)
    bootstrap = bootstrap.channelInitializer { channel in
        let handler = make(channel)
        made.withLockedValue { $0 = handler }
        return channel.pipeline.addHandler(handler)
    }
    _ = try await bootstrap.connect(host: "127.0.0.1", port: port).get()
    return made.withLockedValue { $0! }
}

/// A raw TCP peer for feeding the server bytes a real client never would.
final class RawPeer: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    private let received: EventLoopPromise<ByteBuffer>
    private let buffer = NIOLockedValueBox(ByteBuffer())
    let channel: any Channel

    private init(channel: any Channel, received: EventLoopPromise<ByteBuffer>) {
        self.channel = channel
        self.received = received
    }

    /// Connects from `source` (another loopback address, e.g. 127.0.0.2) when given, with a small receive
    /// buffer when `receiveBuffer` is given.
    static func connect(port: Int, from source: String? = nil, receiveBuffer: Int? = nil) async throws -> RawPeer {
        try await loopbackConnection(port: port, from: source, receiveBuffer: receiveBuffer) { channel in
            RawPeer(channel: channel, received: channel.eventLoop.makePromise())
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer.withLockedValue { $0.writeBuffer(&incoming) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        received.succeed(buffer.withLockedValue { $0 })
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    func sendFrame(_ kind: UInt8, _ body: [UInt8]) async throws {
        var bytes: [UInt8] = []
        let length = UInt32(body.count + 1)
        bytes += [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)]
        bytes.append(kind)
        bytes += body
        try await send(bytes)
    }

    func sendJSONFrame<T: Encodable>(_ kind: FrameKind, _ value: T) async throws {
        try await sendFrame(kind.rawValue, Array(try JSONEncoder().encode(value)))
    }

    /// Everything the server sent until it closed the connection (nil if it is still open after `timeout`).
    func bytesUntilClosed(within timeout: Double) async -> ByteBuffer? {
        let loop = channel.eventLoop
        let deadline = loop.scheduleTask(in: .nanoseconds(Int64(timeout * 1e9))) {}
        let timedOut = loop.makePromise(of: ByteBuffer?.self)
        deadline.futureResult.whenSuccess { timedOut.succeed(nil) }
        received.futureResult.whenSuccess { timedOut.succeed($0) }
        let result = try? await timedOut.futureResult.get()
        deadline.cancel()
        return result ?? nil
    }

    /// Waits (polling) until the server has sent a frame of `kind`; returns its body.
    func waitForFrame(_ kind: FrameKind, within timeout: Double = 3) async throws -> ByteBuffer {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            let bytes = buffer.withLockedValue { $0 }
            if let frame = RawPeer.frames(in: bytes).first(where: { $0.kind == kind.rawValue }) { return frame.body }
            if !channel.isActive { break }  // closed: no more frames will come
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        throw FrameError.truncated(missing: 1)
    }

    /// Authenticates and joins like a client, then does nothing more (not even answer heartbeats).
    func joinAndGoSilent(invite: Invite, name: String) async throws {
        try await sendJSONFrame(.hello, Hello(protocolVersion: tandemProtocolVersion, session: invite.session))
        let challenge = try JSONDecoder().decode(Challenge.self, from: try await waitForFrame(.challenge))
        let clientNonce = SessionAuth.nonce()
        let proof = SessionAuth.proof(key: SessionAuth.key(forSecret: invite.secret), serverNonce: challenge.nonce,
                                      session: invite.session, clientNonce: clientNonce)
        try await sendJSONFrame(.authProof, AuthProof(clientNonce: clientNonce, proof: proof))
        _ = try await waitForFrame(.accepted)
        try await sendJSONFrame(.session, ClientMessage.join(name: name, reconnectAs: nil, reconnectToken: nil, prerollEstimate: 0))
        _ = try await waitForFrame(.session)
    }

    /// Every byte received so far.
    var receivedBytes: ByteBuffer { buffer.withLockedValue { $0 } }

    /// App-message frames received so far.
    func appMessageCount() -> Int { count(of: .appMessage) }

    /// Frames of `kind` received so far.
    func count(of kind: FrameKind) -> Int {
        RawPeer.frames(in: buffer.withLockedValue { $0 }).filter { $0.kind == kind.rawValue }.count
    }

    /// Sends an app message to everyone, as a client would frame it.
    func sendAppMessage(sequence: UInt64, payload: Data = Data(count: 24)) async throws {
        let message = ClientMessage.appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable,
                                                                  sequence: sequence, payload: payload))
        let frame = try SessionCodec.encode(message, allocator: channel.allocator)
        try await sendFrame(frame.kind.rawValue, Array(frame.body.readableBytesView))
    }

    /// The app messages received so far, decoded.
    func appMessages() throws -> [IncomingAppMessage] {
        try RawPeer.frames(in: buffer.withLockedValue { $0 }).filter { $0.kind == FrameKind.appMessage.rawValue }.map {
            guard case .appMessage(let message) = try SessionCodec.decodeServerMessage(Frame(kind: .appMessage, body: $0.body)) else {
                throw FrameError.malformedBody(kind: .appMessage, detail: "not an app message")
            }
            return message
        }
    }

    /// The frames in `bytes`, as (kind, body) pairs.
    static func frames(in bytes: ByteBuffer) -> [(kind: UInt8, body: ByteBuffer)] {
        var b = bytes
        var out: [(UInt8, ByteBuffer)] = []
        while let length = b.getInteger(at: b.readerIndex, as: UInt32.self), b.readableBytes >= 4 + Int(length) {
            b.moveReaderIndex(forwardBy: 4)
            let kind = b.readInteger(as: UInt8.self)!
            out.append((kind, b.readSlice(length: Int(length) - 1)!))
        }
        return out
    }

    /// The error code of the last error or close frame the server sent before closing.
    func closingErrorCode(within timeout: Double) async -> WireErrorCode? {
        guard let bytes = await bytesUntilClosed(within: timeout) else { return nil }
        for frame in RawPeer.frames(in: bytes).reversed()
        where frame.kind == FrameKind.error.rawValue || frame.kind == FrameKind.close.rawValue {
            return try? JSONDecoder().decode(ErrorBody.self, from: frame.body).code
        }
        return nil
    }
}
