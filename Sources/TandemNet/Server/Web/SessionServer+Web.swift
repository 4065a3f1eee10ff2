import NIOCore
import NIOHTTP1
import NIOWebSocket

extension SessionServer {
    /// Sets up a connection that began with an HTTP request: NIOHTTP1 with bounded request heads, the page, and
    /// the WebSocket upgrade at `/ws`. After the upgrade the connection carries the native frames (`tandem`
    /// adds the same decoder, encoder and `ServerConnectionHandler` as for a native client) inside binary
    /// WebSocket messages, so a browser meets the same handshake, limits and authority as any other participant.
    static func addWebHandlers(to channel: any Channel, web: WebConfiguration, deadline: NIODeadline,
                               media: WebMedia, tandem: @escaping @Sendable (any Channel) throws -> Void) throws {
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: web.maxWebSocketFrameSize,
            automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                channel.eventLoop.makeSucceededFuture(web.servesPage && WebPage.isWebSocketPath(head.uri) ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // The page's handler would read WebSocket bytes as HTTP: it goes before anything arrives.
                    if let page = try? sync.context(handlerType: WebHTTPHandler.self) {
                        sync.removeHandler(context: page, promise: nil)
                    }
                    try sync.addHandler(WebSocketBridge())
                    try tandem(channel)
                }
            }
        )
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = web.maxRequestHeadSize
        limits.maxHeaderListSize = web.maxRequestHeadSize
        limits.maxHeaderFieldCount = web.maxHeaderFields
        let sync = channel.pipeline.syncOperations
        try sync.configureHTTPServerPipeline(
            withPipeliningAssistance: false,
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
            withErrorHandling: true,
            withOutboundHeaderValidation: true,
            withEncoderConfiguration: .init(),
            withDecoderLimitConfiguration: limits
        )
        try sync.addHandler(WebHTTPHandler(deadline: deadline, media: media, servesPage: web.servesPage))
    }

    /// The link a browser opens to join the session of `invite`: the page on this server's port, the session in
    /// the path and the secret in the fragment, which a browser never sends to the server.
    public func webLink(for invite: Invite) -> String? {
        guard configuration.web?.servesPage == true else { return nil }
        return WebPage.link(for: invite)
    }
}
