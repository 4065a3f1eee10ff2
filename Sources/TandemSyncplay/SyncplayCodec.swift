import Foundation

/// Why a line from a Syncplay peer was refused. Syncplay answers such a line with `Error` and drops the peer.
public struct SyncplayProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Lines to commands and back. Every line from the network is hostile: bounded in length (by the framer), in the
/// number of commands, users and playlist entries, and in the length of every text kept.
public enum SyncplayCodec {
    /// The longest line accepted (Syncplay's own line receiver stops at 16 KiB; a long user list may need more).
    public static let maxLineBytes = 64 * 1024
    /// The most users of one room kept from a `List`, and the most playlist entries kept.
    public static let maxUsers = 256
    public static let maxPlaylistEntries = 250
    /// Texts (names, file names, chat lines, messages of the day) are cut to this many characters.
    public static let maxTextCharacters = 1024

    /// The commands of one line, in order (an empty line has none).
    public static func decode(_ line: String) throws(SyncplayProtocolError) -> [SyncplayCommand] {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return [] }
        guard trimmed.utf8.count <= maxLineBytes else {
            throw SyncplayProtocolError("a line of \(trimmed.utf8.count) bytes is longer than \(maxLineBytes)")
        }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: Data(trimmed.utf8), options: [.fragmentsAllowed]) } catch {
            throw SyncplayProtocolError("not JSON: \(String(trimmed.prefix(80)))")
        }
        guard let commands = object as? [String: Any] else {
            throw SyncplayProtocolError("a message must be a JSON object of commands")
        }
        guard commands.count <= 8 else { throw SyncplayProtocolError("\(commands.count) commands in one line") }
        // Syncplay handles the commands of a line in order; JSON objects lose it, so use the protocol's own order.
        let order = ["TLS", "Hello", "Set", "List", "State", "Error", "Chat"]
        var decoded: [SyncplayCommand] = []
        for key in commands.keys.sorted(by: { (order.firstIndex(of: $0) ?? 99) < (order.firstIndex(of: $1) ?? 99) }) {
            let value = commands[key]!
            switch key {
            case "Hello": decoded.append(.hello(try hello(value)))
            case "Set": decoded.append(.set(try settings(value)))
            case "List": decoded.append(.list(try list(value)))
            case "State": decoded.append(.state(try state(value)))
            case "Error":
                let message = (value as? [String: Any])?["message"].flatMap { $0 as? String } ?? "\(value)"
                decoded.append(.error(text(message)))
            case "Chat":
                if let message = value as? String {
                    decoded.append(.chat(username: nil, message: text(message)))
                } else if let chat = value as? [String: Any], let message = chat["message"] as? String {
                    decoded.append(.chat(username: (chat["username"] as? String).map(text), message: text(message)))
                } else {
                    throw SyncplayProtocolError("a Chat must be a text, or a username and a message")
                }
            case "TLS":
                decoded.append(.tls(((value as? [String: Any])?["startTLS"] as? String).map(text) ?? ""))
            default:
                throw SyncplayProtocolError("unknown command \(text(key))")
            }
        }
        return decoded
    }

    /// One line (without the newline) carrying `command`.
    public static func encode(_ command: SyncplayCommand) -> String {
        let object: [String: Any]
        switch command {
        case .hello(let h):
            var hello: [String: Any] = ["username": h.username, "room": ["name": h.room], "version": h.version,
                                        "features": h.features.mapValues(\.json)]
            if let p = h.password { hello["password"] = p }
            if let r = h.realVersion { hello["realversion"] = r }
            if let m = h.motd { hello["motd"] = m }
            object = ["Hello": hello]
        case .set(let settings):
            var set: [String: Any] = [:]
            for setting in settings {
                switch setting {
                case .room(let name): set["room"] = ["name": name]
                case .file(let file): set["file"] = fileJSON(file)
                case .user(let name, let room, let file, let event):
                    var user: [String: Any] = [:]
                    if let room { user["room"] = ["name": room] }
                    if let file { user["file"] = fileJSON(file) }
                    if let event { user["event"] = [event == .joined ? "joined" : "left": true] }
                    set["user"] = [name: user]
                case .ready(let username, let isReady, let manually):
                    var ready: [String: Any] = ["isReady": isReady.map { $0 as Any } ?? NSNull(), "manuallyInitiated": manually]
                    if let username { ready["username"] = username }
                    set["ready"] = ready
                case .playlistChange(let user, let files):
                    var change: [String: Any] = ["files": files]
                    if let user { change["user"] = user }
                    set["playlistChange"] = change
                case .playlistIndex(let user, let index):
                    var change: [String: Any] = ["index": index.map { $0 as Any } ?? NSNull()]
                    if let user { change["user"] = user }
                    set["playlistIndex"] = change
                case .other: break
                }
            }
            object = ["Set": set]
        case .list:
            object = ["List": NSNull()]
        case .state(let s):
            var state: [String: Any] = [:]
            if let p = s.playstate {
                var playstate: [String: Any] = ["position": p.position, "paused": p.paused.map { $0 as Any } ?? NSNull()]
                if p.doSeek { playstate["doSeek"] = true }
                if let setBy = p.setBy { playstate["setBy"] = setBy }
                state["playstate"] = playstate
            }
            if let ping = s.ping {
                var p: [String: Any] = [:]
                if let v = ping.latencyCalculation { p["latencyCalculation"] = v }
                if let v = ping.clientLatencyCalculation { p["clientLatencyCalculation"] = v }
                if let v = ping.serverRtt { p["serverRtt"] = v }
                if let v = ping.clientRtt { p["clientRtt"] = v }
                state["ping"] = p
            }
            if s.ignoringServer != nil || s.ignoringClient != nil {
                var ignoring: [String: Any] = [:]
                if let v = s.ignoringServer { ignoring["server"] = v }
                if let v = s.ignoringClient { ignoring["client"] = v }
                state["ignoringOnTheFly"] = ignoring
            }
            object = ["State": state]
        case .error(let message):
            object = ["Error": ["message": message]]
        case .chat(let username, let message):
            object = username.map { ["Chat": ["username": $0, "message": message]] } ?? ["Chat": message]
        case .tls(let value):
            object = ["TLS": ["startTLS": value]]
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Reading

    static func text(_ s: String) -> String {
        let cleaned = String(String.UnicodeScalarView(s.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        return cleaned.count > maxTextCharacters ? String(cleaned.prefix(maxTextCharacters)) : cleaned
    }

    static func number(_ any: Any?) -> Double? {
        guard let n = any as? NSNumber, String(cString: n.objCType) != "c" else { return nil }
        let value = n.doubleValue
        return value.isFinite ? value : nil
    }

    static func bool(_ any: Any?) -> Bool? {
        guard let n = any as? NSNumber, String(cString: n.objCType) == "c" else { return nil }
        return n.boolValue
    }

    static func hello(_ value: Any) throws(SyncplayProtocolError) -> SyncplayHello {
        guard let h = value as? [String: Any], let username = h["username"] as? String,
              let room = (h["room"] as? [String: Any])?["name"] as? String else {
            throw SyncplayProtocolError("a Hello needs a username and a room name")
        }
        let version = (h["version"] as? String).map(text) ?? ""
        var features: [String: SyncplayValue] = [:]
        for (key, value) in ((h["features"] as? [String: Any]) ?? [:]).prefix(32) { features[text(key)] = SyncplayValue(value) }
        return SyncplayHello(username: text(username), password: (h["password"] as? String).map(text), room: text(room),
                             version: version, realVersion: (h["realversion"] as? String).map(text),
                             motd: (h["motd"] as? String).map(text), features: features)
    }

    static func file(_ value: Any?) -> SyncplayFile? {
        guard let f = value as? [String: Any], let name = f["name"] as? String else { return nil }
        // An offered Tandem session is an invite: a short string or nothing (it is parsed again before any use).
        let offer = (f["tandemSession"] as? String).flatMap { $0.utf8.count <= maxTandemSessionBytes ? $0 : nil }
        return SyncplayFile(name: text(name), duration: number(f["duration"]) ?? 0, size: f["size"].map(SyncplayValue.init) ?? .null,
                            tandemSession: offer)
    }

    /// The longest `tandemSession` kept (an invite is about 100 bytes).
    public static let maxTandemSessionBytes = 512

    static func fileJSON(_ file: SyncplayFile) -> [String: Any] {
        var json: [String: Any] = ["name": file.name, "duration": file.duration, "size": file.size.json]
        if let offer = file.tandemSession { json["tandemSession"] = offer }
        return json
    }

    static func settings(_ value: Any) throws(SyncplayProtocolError) -> [SyncplaySetting] {
        guard let set = value as? [String: Any] else { throw SyncplayProtocolError("a Set must be an object") }
        var settings: [SyncplaySetting] = []
        for (key, value) in set.prefix(16) {
            let v = value as? [String: Any] ?? [:]
            switch key {
            case "room":
                settings.append(.room(name: text(v["name"] as? String ?? "")))
            case "file":
                if let f = file(value) { settings.append(.file(f)) }
            case "user":
                for (name, info) in v.prefix(maxUsers) {
                    let info = info as? [String: Any] ?? [:]
                    let event = info["event"] as? [String: Any]
                    settings.append(.user(name: text(name), room: ((info["room"] as? [String: Any])?["name"] as? String).map(text),
                                          file: file(info["file"]),
                                          event: event?["joined"] != nil ? .joined : event?["left"] != nil ? .left : nil))
                }
            case "ready":
                settings.append(.ready(username: (v["username"] as? String).map(text), isReady: bool(v["isReady"]),
                                       manuallyInitiated: bool(v["manuallyInitiated"]) ?? false))
            case "playlistChange":
                let files = (v["files"] as? [Any] ?? []).prefix(maxPlaylistEntries).compactMap { ($0 as? String).map(text) }
                settings.append(.playlistChange(user: (v["user"] as? String).map(text), files: files))
            case "playlistIndex":
                settings.append(.playlistIndex(user: (v["user"] as? String).map(text), index: number(v["index"]).map { Int(max(-1, min($0, 1e6))) }))
            default:
                settings.append(.other(text(key)))
            }
        }
        return settings
    }

    static func list(_ value: Any) throws(SyncplayProtocolError) -> [String: [String: SyncplayListedUser]] {
        guard let rooms = value as? [String: Any] else { return [:] }  // a client's `null`
        var list: [String: [String: SyncplayListedUser]] = [:]
        var users = 0
        for (room, members) in rooms {
            for (name, info) in (members as? [String: Any] ?? [:]) where users < maxUsers {
                let info = info as? [String: Any] ?? [:]
                list[text(room), default: [:]][text(name)] = SyncplayListedUser(
                    file: file(info["file"]), isReady: bool(info["isReady"]), controller: bool(info["controller"]) ?? false)
                users += 1
            }
        }
        return list
    }

    static func state(_ value: Any) throws(SyncplayProtocolError) -> SyncplayState {
        guard let s = value as? [String: Any] else { throw SyncplayProtocolError("a State must be an object") }
        var state = SyncplayState()
        if let p = s["playstate"] as? [String: Any] {
            state.playstate = SyncplayPlaystate(position: number(p["position"]) ?? 0, paused: bool(p["paused"]),
                                                doSeek: bool(p["doSeek"]) ?? false, setBy: (p["setBy"] as? String).map(text))
        }
        if let p = s["ping"] as? [String: Any] {
            state.ping = SyncplayPing(latencyCalculation: number(p["latencyCalculation"]),
                                      clientLatencyCalculation: number(p["clientLatencyCalculation"]),
                                      serverRtt: number(p["serverRtt"]), clientRtt: number(p["clientRtt"]))
        }
        if let i = s["ignoringOnTheFly"] as? [String: Any] {
            state.ignoringServer = number(i["server"]).map { Int(max(0, min($0, 1e9))) }
            state.ignoringClient = number(i["client"]).map { Int(max(0, min($0, 1e9))) }
        }
        return state
    }
}
