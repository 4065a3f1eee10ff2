import Foundation
import NIOHTTP1

/// The browser page: a small, dependency-free HTML page and its scripts, embedded in the binary so that an
/// installed `tandem` serves it without any other file. docs/PROTOCOL.md ("Browser peers") describes what the page
/// speaks: the native frames inside WebSocket messages.
public enum WebPage {
    /// One file the page is made of.
    public struct Asset: Sendable {
        public var contentType: String
        public var body: String
    }

    /// The path of the WebSocket endpoint.
    public static let webSocketPath = "/ws"

    /// The files, by path. `/join/SESSION` is the page itself (the session is read from the path).
    static let files: [String: Asset] = [
        "/app.css": Asset(contentType: "text/css; charset=utf-8", body: stylesheet),
        "/wire.js": Asset(contentType: "text/javascript; charset=utf-8", body: wireScript),
        "/grid.js": Asset(contentType: "text/javascript; charset=utf-8", body: gridScript),
        "/sync.js": Asset(contentType: "text/javascript; charset=utf-8", body: syncScript),
        "/steer.js": Asset(contentType: "text/javascript; charset=utf-8", body: steerScript),
        "/app.js": Asset(contentType: "text/javascript; charset=utf-8", body: appScript),
    ]

    /// The asset served at `path`, or nil.
    public static func asset(at path: String) -> Asset? {
        if path == "/" || path.hasPrefix("/join/") { return Asset(contentType: "text/html; charset=utf-8", body: html) }
        return files[path]
    }

    static func isWebSocketPath(_ uri: String) -> Bool {
        uri.prefix { $0 != "?" } == webSocketPath
    }

    /// The browser link for an invite: `http(s)://HOST:PORT/join/SESSION#SECRET`. The secret stays in the fragment,
    /// which browsers never send; the page derives from it what native clients derive from the invite.
    public static func link(for invite: Invite) -> String {
        var components = URLComponents()
        components.scheme = invite.tls ? "https" : "http"
        components.host = invite.host.contains(":") ? "[\(invite.host)]" : invite.host
        components.port = invite.port
        components.path = "/join/" + invite.session
        components.fragment = invite.secret
        return components.string ?? "\(components.scheme!)://\(invite.host):\(invite.port)/join/\(invite.session)#\(invite.secret)"
    }

    /// The browser link, and the same on 127.0.0.1 when the link is plain http to another address: browsers give
    /// plain-http pages WebCrypto only on loopback.
    public static func links(for invite: Invite) -> (link: String, loopback: String?) {
        guard !invite.tls, !["127.0.0.1", "localhost", "::1"].contains(invite.host) else { return (link(for: invite), nil) }
        var loopback = invite
        loopback.host = "127.0.0.1"
        return (link(for: invite), link(for: loopback))
    }

    /// Headers on every answer: nothing from elsewhere (no CDN, no inline script), nothing cached, no referrer.
    static var securityHeaders: HTTPHeaders {
        [
            "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                + "connect-src 'self'; media-src 'self' blob: http: https:; img-src 'self' data: blob:; "
                + "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
        ]
    }
}
