import NIOCore
import NIOHTTP1

/// Answers a browser's plain HTTP requests: the page and its scripts (embedded in the binary), the session's
/// media for members when the host offers it (`WebMedia`), 404 and 405 for anything else. One request per connection: the answer
/// says `Connection: close` and the connection closes once it is written, so a browser holds a place among the
/// unauthenticated connections only while it is served. Until then it is bounded by the handshake deadline.
///
/// A WebSocket upgrade (`GET /ws`) never reaches this handler: the upgrader takes it first and removes it.
final class WebHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let deadline: NIODeadline
    private let media: WebMedia
    private let servesPage: Bool
    private var timer: Scheduled<Void>?
    private var answered = false

    init(deadline: NIODeadline, media: WebMedia, servesPage: Bool = true) {
        self.deadline = deadline
        self.media = media
        self.servesPage = servesPage
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data), !answered else { return }
        answered = true
        let hasBody = head.headers.contains(name: "transfer-encoding")
            || (head.headers.first(name: "content-length").flatMap { Int($0) } ?? 0) > 0
        guard head.method == .GET || head.method == .HEAD, !hasBody else {
            respond(context: context, head: head, status: .methodNotAllowed, type: "text/plain; charset=utf-8",
                    body: "only GET and HEAD are served here\n", extra: [("Allow", "GET, HEAD")])
            return
        }
        let path = String(head.uri.prefix { $0 != "?" && $0 != "#" })
        if path.hasPrefix("/media/") {
            let query = String(head.uri.drop { $0 != "?" }.dropFirst())
            // A member's stream outlives the page's deadline: it proved membership with its token.
            let served = media.serve(context: context, head: head, target: String(path.dropFirst(7)), query: query) {
                timer?.cancel()
                timer = nil
            }
            if !served {
                respond(context: context, head: head, status: .notFound, type: "text/plain; charset=utf-8",
                        body: "no media here, or the link is not this session's\n")
            }
            return
        }
        guard servesPage, let asset = WebPage.asset(at: path) else {
            respond(context: context, head: head, status: .notFound, type: "text/plain; charset=utf-8",
                    body: "not found: the page is at /join/SESSION#SECRET (the browser link tandem prints)\n")
            return
        }
        respond(context: context, head: head, status: .ok, type: asset.contentType, body: asset.body)
    }

    /// Writes a whole answer and closes the connection after it.
    private func respond(context: ChannelHandlerContext, head request: HTTPRequestHead, status: HTTPResponseStatus,
                         type: String, body: String, extra: [(String, String)] = []) {
        var headers = WebPage.securityHeaders
        headers.add(name: "Content-Type", value: type)
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))),
                      promise: nil)
        if request.method != .HEAD {
            let buffer = context.channel.allocator.buffer(string: body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
