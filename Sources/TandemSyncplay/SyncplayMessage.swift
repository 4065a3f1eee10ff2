import Foundation

/// Syncplay's wire protocol (version 1.2.255 on the wire, 1.6.9–1.7.x servers): TCP, one UTF-8 JSON object per
/// line whose keys are commands, handled in order. These types carry what Tandem reads and writes; anything else in
/// a message is ignored, as Syncplay itself does.
public enum SyncplayCommand: Sendable, Equatable {
    case hello(SyncplayHello)
    case set([SyncplaySetting])
    /// Client → server: `null` (asks for the list). Server → client: room → user → what the server knows.
    case list([String: [String: SyncplayListedUser]])
    case state(SyncplayState)
    case error(String)
    /// Client → server: the text. Server → client: who said it and the text.
    case chat(username: String?, message: String)
    /// STARTTLS: `send` (client asks), `true` / `false` (server answers).
    case tls(String)
}

public struct SyncplayHello: Sendable, Equatable {
    public var username: String
    /// Client → server: md5 hex of the server password, when the server has one.
    public var password: String?
    public var room: String
    public var version: String
    public var realVersion: String?
    public var motd: String?
    public var features: [String: SyncplayValue]

    public init(username: String, password: String? = nil, room: String, version: String = "1.2.255",
                realVersion: String? = nil, motd: String? = nil, features: [String: SyncplayValue] = [:]) {
        self.username = username
        self.password = password
        self.room = room
        self.version = version
        self.realVersion = realVersion
        self.motd = motd
        self.features = features
    }
}

/// The file a user plays, as Syncplay describes it (name and size may be hashed by privacy settings).
public struct SyncplayFile: Sendable, Equatable {
    public var name: String
    public var duration: Double
    public var size: SyncplayValue
    /// Tandem's extension (key `tandemSession`, ignored by Syncplay's own clients and passed on unchanged by its
    /// server): the invite of the Tandem session this peer offers the room's other Tandem peers.
    public var tandemSession: String?

    public init(name: String, duration: Double, size: SyncplayValue, tandemSession: String? = nil) {
        self.name = name
        self.duration = duration
        self.size = size
        self.tandemSession = tandemSession
    }
}

public struct SyncplayListedUser: Sendable, Equatable {
    public var file: SyncplayFile?
    public var isReady: Bool?
    public var controller: Bool
}

/// One entry of a `Set`.
public enum SyncplaySetting: Sendable, Equatable {
    case room(name: String)
    case file(SyncplayFile)
    /// A user joined, left, or changed file (server → client).
    case user(name: String, room: String?, file: SyncplayFile?, event: UserEvent?)
    /// Client → server: `username` nil. Server → client: whose readiness.
    case ready(username: String?, isReady: Bool?, manuallyInitiated: Bool)
    case playlistChange(user: String?, files: [String])
    case playlistIndex(user: String?, index: Int?)
    /// Any other setting (features, controlled rooms): read and ignored.
    case other(String)

    public enum UserEvent: Sendable, Equatable { case joined, left }
}

public struct SyncplayPlaystate: Sendable, Equatable {
    public var position: Double
    public var paused: Bool?
    public var doSeek: Bool
    public var setBy: String?

    public init(position: Double, paused: Bool?, doSeek: Bool = false, setBy: String? = nil) {
        self.position = position
        self.paused = paused
        self.doSeek = doSeek
        self.setBy = setBy
    }
}

public struct SyncplayPing: Sendable, Equatable {
    /// The other side's timestamp, to echo.
    public var latencyCalculation: Double?
    /// Our own timestamp, echoed back (plus the other side's processing time).
    public var clientLatencyCalculation: Double?
    public var serverRtt: Double?
    public var clientRtt: Double?

    public init(latencyCalculation: Double? = nil, clientLatencyCalculation: Double? = nil, serverRtt: Double? = nil,
                clientRtt: Double? = nil) {
        self.latencyCalculation = latencyCalculation
        self.clientLatencyCalculation = clientLatencyCalculation
        self.serverRtt = serverRtt
        self.clientRtt = clientRtt
    }
}

public struct SyncplayState: Sendable, Equatable {
    public var playstate: SyncplayPlaystate?
    public var ping: SyncplayPing?
    public var ignoringServer: Int?
    public var ignoringClient: Int?

    public init(playstate: SyncplayPlaystate? = nil, ping: SyncplayPing? = nil, ignoringServer: Int? = nil,
                ignoringClient: Int? = nil) {
        self.playstate = playstate
        self.ping = ping
        self.ignoringServer = ignoringServer
        self.ignoringClient = ignoringClient
    }
}

/// A JSON value Tandem passes through without interpreting (features, a possibly hashed file size).
public enum SyncplayValue: Sendable, Equatable {
    case bool(Bool)
    case number(Double)
    case string(String)
    case null
    case other

    init(_ any: Any) {
        switch any {
        // JSON booleans arrive as NSNumbers of type `c`; JSON numbers never do.
        case let n as NSNumber where String(cString: n.objCType) == "c": self = .bool(n.boolValue)
        case let n as NSNumber: self = .number(n.doubleValue)
        case let s as String: self = .string(s)
        case is NSNull: self = .null
        default: self = .other
        }
    }

    var json: Any {
        switch self {
        case .bool(let b): return b
        case .number(let n): return n.rounded() == n && abs(n) < 1e15 ? Int64(n) as Any : n as Any
        case .string(let s): return s
        case .null, .other: return NSNull()
        }
    }
}
