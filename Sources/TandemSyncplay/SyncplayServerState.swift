import TandemCrypto
import Foundation
import TandemCore

/// The room's play state as a server tells a Syncplay client: where it is now (seconds into the file), whether
/// it is paused, and who caused the latest change.
public struct SyncplayRoomPlaystate: Sendable, Equatable {
    public var position: Double
    public var paused: Bool
    public var setBy: String?

    public init(position: Double, paused: Bool, setBy: String? = nil) {
        self.position = position
        self.paused = paused
        self.setBy = setBy
    }
}

/// A Syncplay client's connection as a Syncplay server sees it (version 1.6.9–1.7.x): the hello and its answer,
/// a `State` heartbeat every second with Syncplay's ping fields and "ignoring on the fly" counters, forced states
/// when the room changes, `Set` for users joining and leaving and for readiness, `List`, `Chat`, and `Error` for
/// anything refused (followed by a drop). STARTTLS, once and before the hello: "true" when `offersTLS` (the owner
/// then starts TLS, and `tlsEstablished` opens the greeting again), "false" otherwise. Bounded: the length of a
/// line (by the framer, see `Limits`), the lines per second, and the silence allowed (12.5 s, as Syncplay servers;
/// it bounds a TLS handshake too). Pure: it takes the time and what arrived, and returns what to send and what
/// happened; whoever owns it checks the hello (`admit` / `refuse`).
public struct SyncplayServerState: Sendable {
    public struct Limits: Sendable {
        /// The longest line accepted (Syncplay's own servers stop at 16 KiB).
        public var lineBytes = 16 * 1024
        /// Lines per second a client may send on average, and at once.
        public var linesPerSecond = 20.0
        public var lineBurst = 60.0
        /// A client silent for this long is dropped.
        public var silence = TimeSpan.milliseconds(12_500)
        /// Heartbeats go out this often.
        public var heartbeat = TimeSpan.seconds(1)
        /// Syncplay's display limits, announced in the hello answer and applied to what is received.
        public var maxUsernameCharacters = 150
        public var maxChatCharacters = 150
        /// The most users a `List` answer carries.
        public var maxListedUsers = 64

        public init() {}
    }

    public enum Event: Sendable, Equatable {
        /// The client said hello: check the room and password, then `admit` or `refuse`.
        case hello(username: String, room: String, passwordMD5: String?)
        /// The client paused, played or seeked (its position corrected for the message's age when playing).
        case changed(paused: Bool, position: Double, seek: Bool)
        case file(SyncplayFile)
        case ready(Bool)
        case chat(String)
    }

    public enum Action: Sendable, Equatable {
        case send(SyncplayCommand)
        case event(Event)
        /// Close the connection (after what was sent), and why.
        case close(String)
        /// Switch the connection to TLS, the server's side, once what was sent (the "true") is out.
        case startTLS
    }

    enum Phase: Equatable { case greeting, upgrading, checking, welcomed, closed }

    /// The furthest position taken from a client (seconds; about four months), so that no number from the
    /// network overflows a time.
    public static let maxPosition = 10_000_000.0

    /// Syncplay's ping rules: smoothed round trip (0.85 old weight), forward delay half of it.
    static let rttSmoothing = 0.85

    public let limits: Limits
    public private(set) var username = ""
    public private(set) var room = ""
    public private(set) var forwardDelay = 0.0
    public private(set) var averageRTT = 0.0
    /// Who else is in the room (for `List`), and whether each is ready.
    public private(set) var members: [String: Bool?] = [:]
    var phase = Phase.greeting
    private var clientVersion = "1.2.255"
    private var lastRTT = 0.0
    private var serverIgnoring = 0
    private var clientIgnoring = 0
    private var clientTimestamp: Double?
    private var clientTimestampArrival: LocalInstant?
    private var lastHeard: LocalInstant
    private var lastHeartbeat: LocalInstant?
    private var tokens: Double
    private var tokensAt: LocalInstant
    /// The client's own change, told back to it until the room reflects it (the session takes a moment).
    private var pending: (state: SyncplayRoomPlaystate, at: LocalInstant)?
    private var file: SyncplayFile?
    private var isReady: Bool?
    /// False once the hello's features said `chat: false`: chat lines are then neither echoed nor passed on.
    public private(set) var offersChat = true
    /// Whether STARTTLS is answered "true" (a certificate is at hand), whether it was asked, and whether TLS is up.
    public let offersTLS: Bool
    private var askedTLS = false
    public private(set) var usesTLS = false

    public init(limits: Limits = Limits(), offersTLS: Bool = false, now: LocalInstant) {
        self.limits = limits
        self.offersTLS = offersTLS
        lastHeard = now
        tokens = limits.lineBurst
        tokensAt = now
    }

    public var isWelcomed: Bool { phase == .welcomed }
    public var isClosed: Bool { phase == .closed }

    /// A line from the client; `room` is the room's play state now.
    public mutating func receive(line: String, now: LocalInstant, room playstate: SyncplayRoomPlaystate) -> [Action] {
        guard phase != .closed else { return [] }
        lastHeard = now
        tokens = min(limits.lineBurst, tokens + (now - tokensAt).seconds * limits.linesPerSecond)
        tokensAt = now
        guard tokens >= 1 else {
            return fail("too many messages: at most \(Int(limits.linesPerSecond)) a second — this server dropped you")
        }
        tokens -= 1
        guard line.utf8.count <= limits.lineBytes else { return oversized() }
        let commands: [SyncplayCommand]
        do { commands = try SyncplayCodec.decode(line) } catch { return fail("\(error)") }
        var actions: [Action] = []
        for command in commands {
            actions += handle(command, now: now, room: playstate)
            if phase == .closed { break }
        }
        return actions
    }

    /// A line longer than `limits.lineBytes` (the framer refuses it before it is read whole).
    public mutating func oversized() -> [Action] {
        fail("a line longer than \(limits.lineBytes) bytes")
    }

    /// The TLS handshake that STARTTLS began is over: the client says hello next (in TLS).
    public mutating func tlsEstablished(now: LocalInstant) -> [Action] {
        guard phase == .upgrading else { return [] }
        phase = .greeting
        usesTLS = true
        lastHeard = now
        return []
    }

    /// The connection failed under TLS (or while it began): an `Error` and a drop.
    public mutating func tlsFailed(_ detail: String) -> [Action] {
        guard phase == .upgrading else { return fail("TLS failed (\(detail))") }
        return fail("the TLS handshake failed (\(detail)) — use a Syncplay client of 1.6.9 or later, or connect without TLS")
    }

    /// Accepts the hello: the answer, under `username` (the name the client asked for, or a free one).
    public mutating func admit(as username: String, members: [String: Bool?], features extra: [String: SyncplayValue] = [:],
                               motd: String?, now: LocalInstant) -> [Action] {
        guard phase == .checking else { return [] }
        phase = .welcomed
        self.username = username
        self.members = members.filter { $0.key != username }
        var features: [String: SyncplayValue] = [
            "isolateRooms": .bool(true), "readiness": .bool(true), "managedRooms": .bool(false),
            "persistentRooms": .bool(false), "chat": .bool(true), "sharedPlaylists": .bool(false),
            "maxChatMessageLength": .number(Double(limits.maxChatCharacters)),
            "maxUsernameLength": .number(Double(limits.maxUsernameCharacters)),
            "maxRoomNameLength": .number(35), "maxFilenameLength": .number(250), "setOthersReadiness": .bool(false),
        ]
        features.merge(extra) { $1 }
        offersChat = features["chat"] != .bool(false)
        // The room's (empty) shared playlist and its index, as Syncplay's servers send on joining a room: a client
        // opens its own file only once it has had a playlist index.
        return [.send(.hello(SyncplayHello(username: username, room: room, version: clientVersion, realVersion: "1.7.3",
                                           motd: motd, features: features))),
                .send(.set([.playlistChange(user: nil, files: [])])), .send(.set([.playlistIndex(user: nil, index: nil)]))]
    }

    /// Refuses the hello with `message` (Syncplay's `Error`), and drops the client.
    public mutating func refuse(_ message: String) -> [Action] { fail(message) }

    /// Once a second (or more often): the heartbeat when it is due, and a drop after `limits.silence` of silence.
    public mutating func tick(now: LocalInstant, room playstate: SyncplayRoomPlaystate) -> [Action] {
        guard phase != .closed else { return [] }
        if now - lastHeard > limits.silence {
            return fail("nothing heard for \(limits.silence.seconds) s — this server dropped you")
        }
        guard phase == .welcomed else { return [] }
        if let last = lastHeartbeat, now - last < limits.heartbeat { return [] }
        return heartbeat(shown(playstate, now: now), doSeek: false, forced: false, now: now)
    }

    /// The room changed (a pause, play or seek in the session): a forced state, at once.
    public mutating func roomChanged(_ playstate: SyncplayRoomPlaystate, doSeek: Bool, now: LocalInstant) -> [Action] {
        guard phase == .welcomed else { return [] }
        if playstate.setBy != username { pending = nil }
        return heartbeat(shown(playstate, now: now), doSeek: doSeek, forced: true, now: now)
    }

    public mutating func userJoined(_ name: String) -> [Action] {
        guard phase == .welcomed, name != username else { return [] }
        guard members[name] != nil || members.count < limits.maxListedUsers else { return [] }
        members[name] = .some(nil)
        return [.send(.set([.user(name: name, room: room, file: nil, event: .joined)]))]
    }

    public mutating func userLeft(_ name: String) -> [Action] {
        guard phase == .welcomed, members.removeValue(forKey: name) != nil else { return [] }
        return [.send(.set([.user(name: name, room: room, file: nil, event: .left)]))]
    }

    public mutating func userReady(_ name: String, isReady: Bool) -> [Action] {
        guard phase == .welcomed, members[name] != nil else { return [] }
        members[name] = isReady
        return [.send(.set([.ready(username: name, isReady: isReady, manuallyInitiated: false)]))]
    }

    public func chat(from name: String, _ message: String) -> [Action] {
        guard phase == .welcomed, offersChat else { return [] }
        return [.send(.chat(username: name, message: String(SyncplayCodec.text(message).prefix(limits.maxChatCharacters))))]
    }

    /// The users of the room as `List` answers it (this client included).
    public var list: [String: [String: SyncplayListedUser]] {
        var users = members.mapValues { SyncplayListedUser(file: nil, isReady: $0, controller: false) }
        users[username] = SyncplayListedUser(file: file, isReady: isReady, controller: false)
        return [room: users]
    }

    /// What md5 of `secret` is, in hex, compared with `presented` in constant time (Syncplay sends md5 of the room
    /// password in its hello).
    public static func passwordMatches(_ presented: String?, secret: String) -> Bool {
        let expected = Array(SyncplayClientState.Configuration.passwordHash(secret).utf8)
        let given = Array((presented ?? "").lowercased().utf8)
        var difference = UInt8(expected.count == given.count ? 0 : 1)
        for i in expected.indices { difference |= expected[i] ^ (i < given.count ? given[i] : 0) }
        return difference == 0
    }

    // MARK: Parts

    private mutating func fail(_ message: String) -> [Action] {
        guard phase != .closed else { return [] }
        phase = .closed
        return [.send(.error(message)), .close(message)]
    }

    private mutating func handle(_ command: SyncplayCommand, now: LocalInstant, room playstate: SyncplayRoomPlaystate) -> [Action] {
        switch (phase, command) {
        case (.greeting, .tls(let inquiry)):
            // Syncplay's servers answer "send" alone.
            guard inquiry == "send" else { return [] }
            guard !askedTLS else { return fail("STARTTLS asked twice") }
            askedTLS = true
            guard offersTLS else { return [.send(.tls("false"))] }
            phase = .upgrading
            return [.send(.tls("true")), .startTLS]
        case (.upgrading, _):
            return fail("a message in the clear after STARTTLS: start the TLS handshake")
        case (.checking, .tls), (.welcomed, .tls):
            return fail("STARTTLS after Hello: ask for TLS before saying Hello")
        case (.greeting, .hello(let hello)):
            let name = hello.username.trimmingCharacters(in: .whitespaces)
            let room = hello.room.trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !room.isEmpty, !hello.version.isEmpty || hello.realVersion != nil else {
                return fail("a Hello needs a username, a room name and a version")
            }
            phase = .checking
            self.room = room
            clientVersion = hello.version.isEmpty ? "1.2.255" : hello.version
            return [.event(.hello(username: String(name.prefix(limits.maxUsernameCharacters)), room: room,
                                  passwordMD5: hello.password))]
        case (.greeting, _), (.checking, _):
            return fail("say Hello first (with the session id as the room and its secret as the password)")
        case (.welcomed, .hello):
            return fail("a second Hello")
        case (.welcomed, .set(let settings)):
            var actions: [Action] = []
            for setting in settings { actions += apply(setting) }
            return actions
        case (.welcomed, .list):
            return [.send(.list(list))]
        case (.welcomed, .state(let state)):
            return clientState(state, now: now, room: playstate)
        case (.welcomed, .chat(_, let message)):
            guard offersChat else { return [] }
            let text = String(message.prefix(limits.maxChatCharacters))
            guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return [] }
            return [.send(.chat(username: username, message: text)), .event(.chat(text))]
        case (.welcomed, .error(let message)):
            return fail("the client said: \(message)")
        case (.closed, _):
            return []
        }
    }

    private mutating func apply(_ setting: SyncplaySetting) -> [Action] {
        switch setting {
        case .file(let file):
            self.file = file
            return [.event(.file(file))]
        case .ready(_, let isReady, _):
            // Setting another user's readiness is not offered (the hello says so): only one's own counts.
            guard let isReady else { return [] }
            self.isReady = isReady
            return [.send(.set([.ready(username: username, isReady: isReady, manuallyInitiated: true)])), .event(.ready(isReady))]
        case .room(let name):
            guard name == room else { return fail("this server has one room per session: reconnect with another room") }
            return []
        case .user, .playlistChange, .playlistIndex, .other:
            return []
        }
    }

    private mutating func clientState(_ state: SyncplayState, now: LocalInstant, room playstate: SyncplayRoomPlaystate) -> [Action] {
        if let echoed = state.ignoringServer, echoed == serverIgnoring { serverIgnoring = 0 }
        if let client = state.ignoringClient { clientIgnoring = client }
        if let ping = state.ping {
            clientTimestamp = ping.clientLatencyCalculation
            clientTimestampArrival = now
            if let sent = ping.latencyCalculation { measure(sent: sent, senderRTT: ping.clientRtt ?? 0, now: now) }
        }
        guard serverIgnoring == 0, let reported = state.playstate else { return [] }
        let paused = reported.paused ?? playstate.paused
        let current = shown(playstate, now: now)
        let pauseChanged = reported.paused != nil && paused != current.paused
        guard reported.doSeek || pauseChanged else { return [] }
        let position = min(Self.maxPosition, max(0, paused ? reported.position : reported.position + forwardDelay))
        let mine = SyncplayRoomPlaystate(position: position, paused: paused, setBy: username)
        pending = (mine, now)
        // As Syncplay's servers do, the change goes back to its sender as a forced state set by it.
        return [.event(.changed(paused: paused, position: position, seek: reported.doSeek))]
            + heartbeat(mine, doSeek: reported.doSeek, forced: true, now: now)
    }

    /// The room as this client should see it: its own unconfirmed change for up to 5 s, then the room's.
    private mutating func shown(_ playstate: SyncplayRoomPlaystate, now: LocalInstant) -> SyncplayRoomPlaystate {
        guard let pending else { return playstate }
        let (state, at) = (pending.state, pending.at)
        let elapsed = (now - at).seconds
        let expected = state.paused ? state.position : state.position + elapsed
        if elapsed > 5 || (playstate.paused == state.paused && abs(playstate.position - expected) < 1) {
            self.pending = nil
            return playstate
        }
        return SyncplayRoomPlaystate(position: expected, paused: state.paused, setBy: state.setBy)
    }

    private mutating func heartbeat(_ playstate: SyncplayRoomPlaystate, doSeek: Bool, forced: Bool, now: LocalInstant) -> [Action] {
        lastHeartbeat = now
        if forced { serverIgnoring += 1 }
        guard serverIgnoring == 0 || forced else { return [] }
        var ping = SyncplayPing(latencyCalculation: now.seconds, serverRtt: lastRTT)
        if let sent = clientTimestamp, let arrival = clientTimestampArrival {
            ping.clientLatencyCalculation = sent + (now - arrival).seconds
            clientTimestamp = nil
        }
        var state = SyncplayState(playstate: SyncplayPlaystate(position: max(0, playstate.position), paused: playstate.paused,
                                                               doSeek: doSeek, setBy: playstate.setBy),
                                  ping: ping)
        if serverIgnoring != 0 { state.ignoringServer = serverIgnoring }
        if clientIgnoring != 0 {
            state.ignoringClient = clientIgnoring
            clientIgnoring = 0
        }
        return [.send(.state(state))]
    }

    private mutating func measure(sent: Double, senderRTT: Double, now: LocalInstant) {
        let rtt = now.seconds - sent
        guard rtt >= 0, rtt < 60, senderRTT >= 0 else { return }
        lastRTT = rtt
        averageRTT = averageRTT == 0 ? rtt : averageRTT * Self.rttSmoothing + rtt * (1 - Self.rttSmoothing)
        forwardDelay = senderRTT < rtt ? averageRTT / 2 + (rtt - senderRTT) : averageRTT / 2
    }
}
