import TandemCore

/// The browser page and its WebSocket endpoint, served on the session port beside the native protocol
/// (`ServerConfiguration.web`; nil turns them off and the port speaks only the native protocol).
///
/// A browser is a participant like any other: its WebSocket carries the same frames, and every bound of the
/// native protocol (handshake timeout, unauthenticated connections per address, frame sizes, rates) applies to it.
public struct WebConfiguration: Sendable, Hashable {
    /// Largest WebSocket frame payload a browser may send; a larger one closes the connection (status 1009) as
    /// soon as its header arrives, before anything of it is buffered. The Tandem frames inside are bounded as on
    /// TCP (4 KiB before `accepted`, `maxFrameSize` after) and may span several WebSocket frames.
    public var maxWebSocketFrameSize: Int = 64 * 1024
    /// Largest request head (request line and headers) a browser may send.
    public var maxRequestHeadSize: Int = 8 * 1024
    /// Most header fields in one request.
    public var maxHeaderFields: Int = 64
    /// Media files the page may stream with HTTP range requests (`--web-media`), by session id. Only a request
    /// carrying the session's media token (derived from its key: only members can compute it) gets bytes.
    public var mediaFiles: [String: String] = [:]
    /// The host's queue items its members may stream (`--share-media`, `SharedMedia`), by session and item id.
    public var sharedMedia: SharedMedia?
    /// Whether the page and its WebSocket are served (false: the port answers HTTP only for media, so that sharing
    /// media does not also open the browser page).
    public var servesPage: Bool = true
    /// Media responses streaming at once on the server; one more is answered 503.
    public var maxMediaStreams: Int = 64
    /// Media responses streaming at once for one participant (`SharedMedia`'s `p=`); one more is answered 503.
    public var maxMediaStreamsPerParticipant: Int = 2
    /// Most bytes a second one media response sends (the host's upload for one stream; 0: unpaced).
    public var mediaBytesPerSecond: Int = 8 * 1024 * 1024
    /// A media response whose socket has taken nothing for this long is closed (a reader that stopped reading).
    public var mediaIdleTimeout: TimeSpan = .seconds(60)

    public init() {}
}
