import TandemCrypto
import Foundation
import TandemCore

/// Where this peer's player is, as a Syncplay client reports it in every heartbeat.
public struct SyncplayLocalPlaystate: Sendable, Equatable {
    /// Seconds into the file.
    public var position: Double
    public var paused: Bool

    public init(position: Double, paused: Bool) {
        self.position = position
        self.paused = paused
    }
}

/// A Tandem peer's side of a Syncplay connection, with Syncplay's client rules (version 1.6.9–1.7.x): the hello, the
/// heartbeat answered on every server `State`, latency from echoed timestamps (smoothed, forward delay = RTT / 2),
/// "ignoring on the fly" counters so a local change is not undone by a heartbeat already on its way, and the 12.5 s
/// silence limit. Pure: it takes the time and what arrived, and returns what to send and what happened.
public struct SyncplayClientState: Sendable {
    public struct Configuration: Sendable {
        public var username: String
        public var room: String
        /// md5 hex of the server's password, when it has one (`--room-password`).
        public var passwordMD5: String?
        /// What this peer plays, announced after the hello.
        public var file: SyncplayFile?

        /// What the hello carries for a server password: its md5, in hex (Syncplay's rule).
        public static func passwordHash(_ password: String) -> String {
            Insecure.MD5.hash(data: Data(password.utf8)).map { String(format: "%02x", $0) }.joined()
        }

        public init(username: String, room: String, passwordMD5: String? = nil, file: SyncplayFile? = nil) {
            self.username = username
            self.room = room
            self.passwordMD5 = passwordMD5
            self.file = file
        }
    }

    public enum Event: Sendable, Equatable {
        /// The server accepted the hello; `username` may differ from the one asked for (it was taken).
        case welcomed(username: String, room: String, motd: String?)
        case usersListed([String: SyncplayListedUser])
        case userJoined(String, file: SyncplayFile?)
        case userLeft(String)
        case userFile(String, SyncplayFile)
        /// The room's play state, `position` already corrected for the message's age when playing. Sent for every
        /// heartbeat that is not being ignored; `doSeek` marks a seek, `setBy` who caused it.
        case roomState(paused: Bool, position: Double, doSeek: Bool, setBy: String?)
        case ready(String, isReady: Bool)
        case chat(from: String, message: String)
        case playlist(files: [String], by: String?)
        case playlistIndex(Int, by: String?)
        /// The server refused something (then it drops the connection).
        case serverError(String)
    }

    public enum Action: Sendable, Equatable {
        case send(SyncplayCommand)
        case event(Event)
        /// Close the connection, and why.
        case close(String)
    }

    /// Syncplay drops a peer it has not heard from for this long; so does this client.
    public static let silenceLimit = TimeSpan.milliseconds(12_500)
    /// Weight of the old value in the smoothed round trip (Syncplay's `PING_MOVING_AVERAGE_WEIGHT`).
    static let rttSmoothing = 0.85

    public let configuration: Configuration
    public private(set) var username: String
    public private(set) var isWelcomed = false
    /// Users of the room (not this peer), with their files.
    public private(set) var users: [String: SyncplayFile?] = [:]
    /// The latest smoothed round trip and forward delay to the server (s).
    public private(set) var averageRTT = 0.0
    public private(set) var forwardDelay = 0.0
    private var lastRTT = 0.0
    private var clientIgnoring = 0
    private var serverIgnoring = 0
    /// This peer's latest change while the server has not confirmed it: what it was, and when.
    private var unconfirmed: (playstate: SyncplayLocalPlaystate, seek: Bool, at: LocalInstant)?
    private var lastHeard: LocalInstant?

    public init(configuration: Configuration) {
        self.configuration = configuration
        self.username = configuration.username
    }

    /// The hello, on connecting.
    public mutating func start(now: LocalInstant) -> [Action] {
        lastHeard = now
        let features: [String: SyncplayValue] = [
            "sharedPlaylists": .bool(true), "chat": .bool(true), "featureList": .bool(true), "readiness": .bool(true),
            "managedRooms": .bool(false), "uiMode": .string("CLI"),
        ]
        return [.send(.hello(SyncplayHello(username: configuration.username, password: configuration.passwordMD5,
                                           room: configuration.room, realVersion: "1.7.3", features: features)))]
    }

    /// The commands of one line from the server. `local` is where this peer's player is now (for the heartbeat); nil
    /// while it has no position of its own (nothing loaded yet), when the answer repeats the room's state.
    public mutating func receive(_ commands: [SyncplayCommand], now: LocalInstant,
                                 local: SyncplayLocalPlaystate?) -> [Action] {
        lastHeard = now
        var actions: [Action] = []
        for command in commands {
            switch command {
            case .hello(let hello):
                username = hello.username
                isWelcomed = true
                actions.append(.event(.welcomed(username: hello.username, room: hello.room, motd: hello.motd)))
                if let file = configuration.file { actions.append(.send(.set([.file(file)]))) }
                actions.append(.send(.list([:])))
            case .set(let settings):
                for setting in settings { actions += apply(setting) }
            case .list(let rooms):
                let members = rooms[configuration.room] ?? [:]
                users = Dictionary(uniqueKeysWithValues: members.filter { $0.key != username }.map { ($0.key, $0.value.file) })
                actions.append(.event(.usersListed(members)))
            case .state(let state):
                actions += heartbeat(state, now: now, local: local)
            case .error(let message):
                actions.append(.event(.serverError(message)))
                actions.append(.close("the Syncplay server said: \(message)"))
            case .chat(let from, let message):
                actions.append(.event(.chat(from: from ?? "?", message: message)))
            case .tls:
                break  // STARTTLS is answered by the connection before the hello
            }
        }
        return actions
    }

    /// This peer paused, played or seeked: tell the room now, and ignore heartbeats sent before the server saw it.
    public mutating func localChange(_ local: SyncplayLocalPlaystate, seek: Bool, now: LocalInstant) -> [Action] {
        guard isWelcomed else { return [] }
        clientIgnoring += 1
        unconfirmed = (local, seek, now)
        let state = SyncplayState(playstate: SyncplayPlaystate(position: local.position, paused: local.paused, doSeek: seek),
                                  ping: SyncplayPing(clientLatencyCalculation: now.seconds, clientRtt: lastRTT),
                                  ignoringServer: nil, ignoringClient: clientIgnoring)
        return [.send(.state(state))]
    }

    /// Closes a connection the server has gone silent on.
    public func tick(now: LocalInstant) -> [Action] {
        guard let lastHeard, now - lastHeard > Self.silenceLimit else { return [] }
        return [.close("the Syncplay server has said nothing for \(Int(Self.silenceLimit.seconds)) s")]
    }

    // MARK: Parts

    private mutating func apply(_ setting: SyncplaySetting) -> [Action] {
        switch setting {
        case .user(let name, let room, let file, let event):
            guard name != username else { return [] }
            if event == .left || (room != nil && room != configuration.room) {
                guard users.removeValue(forKey: name) != nil || event == .left else { return [] }
                return [.event(.userLeft(name))]
            }
            if event == .joined {
                guard users.count < SyncplayCodec.maxUsers else { return [] }
                users[name] = file
                return [.event(.userJoined(name, file: file))]
            }
            if let file {
                guard users[name] != nil || users.count < SyncplayCodec.maxUsers else { return [] }
                users[name] = file
                return [.event(.userFile(name, file))]
            }
            return []
        case .ready(let name, let isReady, _):
            guard let name, let isReady, name != username else { return [] }
            return [.event(.ready(name, isReady: isReady))]
        case .playlistChange(let user, let files):
            return [.event(.playlist(files: files, by: user))]
        case .playlistIndex(let user, let index):
            guard let index else { return [] }
            return [.event(.playlistIndex(index, by: user))]
        case .room, .file, .other:
            return []
        }
    }

    private mutating func heartbeat(_ state: SyncplayState, now: LocalInstant, local: SyncplayLocalPlaystate?) -> [Action] {
        var actions: [Action] = []
        // A forced state that does not confirm this peer's latest change was sent before the server saw that change,
        // and the server ignores what a peer says until it echoes the forced state: the change was, or will be,
        // dropped. The answer says it again with the echo (as Syncplay's own client does by answering with its
        // player's state), so a pause or play crossing a forced state (often the room's echo of this peer's own seek
        // just before) is not lost.
        var repeated: SyncplayPlaystate?
        if let server = state.ignoringServer {
            serverIgnoring = server
            if clientIgnoring != 0, state.ignoringClient != clientIgnoring, let change = unconfirmed {
                let position = change.playstate.paused ? change.playstate.position
                    : change.playstate.position + max(0, (now - change.at).seconds)
                repeated = SyncplayPlaystate(position: position, paused: change.playstate.paused, doSeek: change.seek)
            } else {
                clientIgnoring = 0
            }
        } else if let client = state.ignoringClient, client == clientIgnoring {
            clientIgnoring = 0
        }
        if clientIgnoring == 0 { unconfirmed = nil }
        var echo: Double?
        if let ping = state.ping {
            echo = ping.latencyCalculation
            if let sent = ping.clientLatencyCalculation, let senderRTT = ping.serverRtt { measure(sent: sent, senderRTT: senderRTT, now: now) }
        }
        // The player follows the room at once (the owner of this connection applies `roomState`), so the answer
        // already says what it will be doing: answering with the state from before would read to the server as
        // this peer pausing or playing, and two peers would toggle each other for ever.
        // A peer with no position of its own repeats the room's (Syncplay's own client sends none before it has heard
        // the room, then starts where the room is): a position it has not played would move everyone there.
        var answer = local
        if let playstate = state.playstate, let paused = playstate.paused, clientIgnoring == 0 {
            let position = paused ? playstate.position : playstate.position + forwardDelay
            actions.append(.event(.roomState(paused: paused, position: position, doSeek: playstate.doSeek,
                                             setBy: playstate.setBy)))
            if let local {
                answer?.paused = paused
                if playstate.doSeek || paused != local.paused { answer?.position = position }
            } else {
                answer = SyncplayLocalPlaystate(position: position, paused: paused)
            }
        }
        // The answer: where this player is, unless a change of ours is still unconfirmed (or it has nothing to say).
        var reply = SyncplayState(ping: SyncplayPing(latencyCalculation: echo, clientLatencyCalculation: now.seconds,
                                                     clientRtt: lastRTT))
        if let repeated {
            reply.playstate = repeated
        } else if let answer, clientIgnoring == 0 || serverIgnoring != 0 {
            reply.playstate = SyncplayPlaystate(position: answer.position, paused: answer.paused)
        }
        if serverIgnoring != 0 {
            reply.ignoringServer = serverIgnoring
            serverIgnoring = 0
        }
        if clientIgnoring != 0 { reply.ignoringClient = clientIgnoring }
        actions.append(.send(.state(reply)))
        return actions
    }

    /// Syncplay's ping service: RTT from our echoed timestamp, smoothed; forward delay half of it, plus the
    /// difference when the server measured a shorter round trip.
    private mutating func measure(sent: Double, senderRTT: Double, now: LocalInstant) {
        let rtt = now.seconds - sent
        guard rtt >= 0, rtt < 60, senderRTT >= 0 else { return }
        lastRTT = rtt
        averageRTT = averageRTT == 0 ? rtt : averageRTT * Self.rttSmoothing + rtt * (1 - Self.rttSmoothing)
        forwardDelay = senderRTT < rtt ? averageRTT / 2 + (rtt - senderRTT) : averageRTT / 2
    }
}
