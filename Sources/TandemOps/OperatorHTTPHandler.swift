import NIOCore
import NIOHTTP1

/// One connection to the operator's listener: one request, answered from `OperatorRoutes`, then closed.
final class OperatorHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let metrics: RelayMetrics
    private let idleTimeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var answered = false

    init(metrics: RelayMetrics, idleTimeout: TimeAmount) {
        self.metrics = metrics
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The answer goes at the head: a body (refused anyway) is not waited for.
        guard case .head(let head) = unwrapInboundIn(data), !answered else { return }
        answered = true
        timer?.cancel()
        let hasBody = head.headers.contains(name: "transfer-encoding")
            || (head.headers.first(name: "content-length").flatMap { Int($0) } ?? 0) > 0
        let answer = OperatorRoutes.answer(method: head.method, uri: head.uri, hasBody: hasBody, metrics: metrics)
        var headers = HTTPHeaders([("Content-Type", answer.contentType), ("Content-Length", "\(answer.body.utf8.count)"),
                                   ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                                   ("Connection", "close")])
        for (name, value) in answer.extraHeaders { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: answer.status, headers: headers))),
                      promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: answer.body)))),
                          promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed request has had its 400 from NIO's error handler before this; nothing more to say.
        context.close(promise: nil)
    }
}

/// What the operator's listener answers, by method and path.
enum OperatorRoutes {
    struct Answer {
        var status: HTTPResponseStatus
        var contentType = "text/plain; charset=utf-8"
        var body: String
        var extraHeaders: [(String, String)] = []
    }

    /// The Prometheus text exposition format's content type.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    static func answer(method: HTTPMethod, uri: String, hasBody: Bool, metrics: RelayMetrics) -> Answer {
        guard method == .GET || method == .HEAD else {
            return Answer(status: .methodNotAllowed, body: "only GET and HEAD are served here\n",
                          extraHeaders: [("Allow", "GET, HEAD")])
        }
        guard !hasBody else { return Answer(status: .badRequest, body: "a request here carries no body\n") }
        switch uri.prefix(while: { $0 != "?" && $0 != "#" }) {
        case "/healthz":
            let health = metrics.health()
            return Answer(status: health.isHealthy ? .ok : .serviceUnavailable, contentType: "application/json",
                          body: health.json + "\n")
        case "/metrics":
            return Answer(status: .ok, contentType: metricsContentType, body: metrics.exposition())
        default:
            return Answer(status: .notFound, body: "not found: this listener serves /healthz and /metrics\n")
        }
    }
}
