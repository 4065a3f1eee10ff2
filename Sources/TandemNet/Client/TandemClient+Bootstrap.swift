import TandemCrypto
import Foundation
import NIOCore
import NIOPosix
import TandemTLS
import TandemCore

extension TandemClientConnection {
    /// The bootstrap of one channel to `invite`'s server: TLS (pinned, or against the trust roots) when the invite
    /// asks for it, the options' transport handlers, the frame codec and `handler`.
    static func makeBootstrap(invite: Invite, options: TandemClient.Options, handler: ClientConnectionHandler,
                              eventLoop: any EventLoop) throws -> ClientBootstrap {
        var tlsContext: TLSContext?
        if invite.tls {
            tlsContext = invite.pinnedCertificateSHA256 != nil ? try TLSContext.pinningClient()
                : try TLSContext.client(trustRootsPath: options.trustRootsPath)
        }
        let sslContext = tlsContext
        let transportHandlers = options.transportHandlers
        let pin = invite.pinnedCertificateSHA256
        // A host name or a literal address: the certificate is checked against it (unless pinned), and a name is
        // sent to the server (SNI).
        let serverName = invite.host
        return ClientBootstrap(group: eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .connectTimeout(TimeAmount(options.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(
                            TLSHandler.client(context: sslContext, serverName: serverName, pinnedSHA256: pin))
                    }
                    if let transportHandlers {
                        try channel.pipeline.syncOperations.addHandlers(transportHandlers())
                    }
                    try channel.pipeline.syncOperations.addHandlers([
                        MessageToByteHandler(FrameEncoder()),
                        handler,
                    ])
                }
            }
    }

    /// Asks `invite`'s server whether it would create that session (`options.createSession`, with its token),
    /// over a real connection that creates nothing: the handshake up to the proof, marked as a probe, which the
    /// server answers with a `close` (`creationAllowed`) or its refusal. Returns normally when creation would work;
    /// throws the refusal, `TandemClientError` for what went wrong on the way, or `CancellationError` when the
    /// calling task is cancelled (the connection is closed at once). Bounded by `options.connectTimeout`.
    static func probeCreation(invite: Invite, options: TandemClient.Options) async throws {
        var options = options
        options.createSession = true
        options.creationProbe = true
        options.datagrams = false
        options.reconnectGracePeriod = .zero
        let group = options.eventLoopGroup ?? sharedClientGroup
        let eventLoop = group.next()
        let answer = eventLoop.makePromise(of: SessionSnapshot.self)
        let handler = ClientConnectionHandler(invite: invite, name: "probe", options: options, shared: ClientShared(),
                                              welcome: answer, clock: options.clock)
        let bootstrap = try makeBootstrap(invite: invite, options: options, handler: handler, eventLoop: eventLoop)
        let connecting = bootstrap.connect(host: invite.host, port: invite.port)
        connecting.whenFailure { answer.fail($0) }
        let timeout = eventLoop.scheduleTask(in: TimeAmount(options.connectTimeout)) { answer.fail(TandemClientError.timedOut) }
        // Whatever the answer, the channel closes.
        answer.futureResult.whenComplete { _ in
            timeout.cancel()
            connecting.whenSuccess { $0.close(promise: nil) }
        }
        do {
            _ = try await withTaskCancellationHandler {
                try await answer.futureResult.get()
            } onCancel: {
                answer.fail(CancellationError())
            }
        } catch CreationProbeAnswer.created {
            return
        } catch TandemClientError.refused(let code, _) where code == WireErrorCode.creationAllowed.rawValue {
            return
        }
    }
}
