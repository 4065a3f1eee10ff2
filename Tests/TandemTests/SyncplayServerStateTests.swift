import Foundation
import Testing
import TandemCore
@testable import TandemSyncplay

/// The server side of Syncplay's protocol as a pure state machine, on a manual clock.
@Suite("Syncplay server state")
struct SyncplayServerStateTests {
    static let t0 = LocalInstant(nanoseconds: 1_000_000_000_000)
    static func at(_ seconds: Double) -> LocalInstant { t0 + .seconds(seconds) }
    static let paused = SyncplayRoomPlaystate(position: 12, paused: true, setBy: "ann")
    static let hello = #"{"Hello":{"username":"bob","password":"5f4dcc3b5aa765d61d8327deb882cf99","room":{"name":"s1"},"version":"1.2.255","realversion":"1.6.9","features":{}}}"#

    static func sent(_ actions: [SyncplayServerState.Action]) -> [SyncplayCommand] {
        actions.compactMap { if case .send(let c) = $0 { c } else { nil } }
    }

    static func events(_ actions: [SyncplayServerState.Action]) -> [SyncplayServerState.Event] {
        actions.compactMap { if case .event(let e) = $0 { e } else { nil } }
    }

    static func dropped(_ actions: [SyncplayServerState.Action]) -> Bool {
        actions.contains { if case .close = $0 { true } else { false } }
            && sent(actions).contains { if case .error = $0 { true } else { false } }
    }

    static func states(_ actions: [SyncplayServerState.Action]) -> [SyncplayState] {
        sent(actions).compactMap { if case .state(let s) = $0 { s } else { nil } }
    }

    /// A client welcomed as bob, with ann in the room.
    static func welcomed() -> SyncplayServerState {
        var state = SyncplayServerState(now: t0)
        _ = state.receive(line: hello, now: t0, room: paused)
        _ = state.admit(as: "bob", members: ["ann": true], motd: "hi", now: t0)
        return state
    }

    static let startTLS = #"{"TLS":{"startTLS":"send"}}"#

    @Test("STARTTLS: true with a certificate (then nothing in the clear until the handshake), false without; after Hello, twice, or a failed handshake it is an Error and a drop")
    func startTLSOrdering() {
        // With a certificate: "true", then TLS; the greeting opens again once the handshake is over.
        var secure = SyncplayServerState(offersTLS: true, now: Self.t0)
        #expect(secure.receive(line: Self.startTLS, now: Self.t0, room: Self.paused) == [.send(.tls("true")), .startTLS])
        #expect(secure.phase == .upgrading && !secure.usesTLS)
        _ = secure.tlsEstablished(now: Self.at(0.2))
        #expect(secure.phase == .greeting && secure.usesTLS)
        #expect(Self.events(secure.receive(line: Self.hello, now: Self.at(0.3), room: Self.paused)).count == 1)
        _ = secure.admit(as: "bob", members: [:], motd: nil, now: Self.at(0.3))
        #expect(secure.isWelcomed)
        // TLS failing later (a bad record) is no handshake failure, but still an Error and a drop.
        let broken = secure.tlsFailed("bad record mac")
        #expect(Self.dropped(broken) && Self.sent(broken).first == .error("TLS failed (bad record mac)"))

        // A line in the clear between "true" and the handshake's end.
        var early = SyncplayServerState(offersTLS: true, now: Self.t0)
        _ = early.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)
        #expect(Self.dropped(early.receive(line: Self.hello, now: Self.t0, room: Self.paused)))
        // A handshake that fails, or never ends (the silence bound applies while it is under way).
        var failing = SyncplayServerState(offersTLS: true, now: Self.t0)
        _ = failing.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)
        let failed = failing.tlsFailed("wrong version number")
        #expect(Self.dropped(failed) && Self.sent(failed).first == .error(
            "the TLS handshake failed (wrong version number) — use a Syncplay client of 1.6.9 or later, or connect without TLS"))
        var stalled = SyncplayServerState(offersTLS: true, now: Self.t0)
        _ = stalled.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)
        #expect(stalled.tick(now: Self.at(12), room: Self.paused).isEmpty)
        #expect(Self.dropped(stalled.tick(now: Self.at(13), room: Self.paused)))
        // Asked twice.
        var twice = SyncplayServerState(offersTLS: true, now: Self.t0)
        _ = twice.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)
        _ = twice.tlsEstablished(now: Self.t0)
        #expect(Self.dropped(twice.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)))
        // Without a certificate: "false", and the client goes on in the clear; asked again, an Error.
        var plain = SyncplayServerState(now: Self.t0)
        #expect(plain.receive(line: Self.startTLS, now: Self.t0, room: Self.paused) == [.send(.tls("false"))])
        #expect(plain.phase == .greeting && !plain.usesTLS)
        #expect(Self.dropped(plain.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)))
        // After Hello, whether welcomed or still being checked: an Error and a drop, TLS or not.
        for offersTLS in [true, false] {
            var checking = SyncplayServerState(offersTLS: offersTLS, now: Self.t0)
            _ = checking.receive(line: Self.hello, now: Self.t0, room: Self.paused)
            #expect(Self.dropped(checking.receive(line: Self.startTLS, now: Self.t0, room: Self.paused)))
        }
        var welcomed = Self.welcomed()
        let late = welcomed.receive(line: Self.startTLS, now: Self.at(1), room: Self.paused)
        #expect(Self.dropped(late) && Self.sent(late).first == .error("STARTTLS after Hello: ask for TLS before saying Hello"))
        // Anything but "send" is not a request (as Syncplay's servers): ignored.
        var other = SyncplayServerState(offersTLS: true, now: Self.t0)
        #expect(other.receive(line: #"{"TLS":{"startTLS":"maybe"}}"#, now: Self.t0, room: Self.paused).isEmpty)
        #expect(other.phase == .greeting)
    }

    @Test("a hello is handed to the owner with the room and md5 password; admit answers it, List lists the room")
    func helloAndList() {
        var state = SyncplayServerState(now: Self.t0)
        #expect(Self.sent(state.receive(line: #"{"TLS":{"startTLS":"send"}}"#, now: Self.t0, room: Self.paused)) == [.tls("false")])
        let hello = state.receive(line: Self.hello, now: Self.t0, room: Self.paused)
        #expect(Self.events(hello) == [.hello(username: "bob", room: "s1", passwordMD5: "5f4dcc3b5aa765d61d8327deb882cf99")])
        #expect(Self.sent(hello).isEmpty)
        let answer = Self.sent(state.admit(as: "bob", members: ["ann": true, "carl": nil], motd: "hi", now: Self.t0))
        guard case .hello(let h)? = answer.first else { Issue.record("no hello: \(answer)"); return }
        #expect(h.username == "bob" && h.room == "s1" && h.version == "1.2.255" && h.motd == "hi")
        #expect(h.features["readiness"] == .bool(true) && h.features["chat"] == .bool(true))
        #expect(h.features["sharedPlaylists"] == .bool(false))
        // Then an empty shared playlist and its index (a client opens its file once it has had one), user null.
        #expect(Array(answer.dropFirst()) == [.set([.playlistChange(user: nil, files: [])]), .set([.playlistIndex(user: nil, index: nil)])])
        #expect(SyncplayCodec.encodeForClient(answer[2]) == #"{"Set":{"playlistIndex":{"index":null,"user":null}}}"#)
        let list = Self.sent(state.receive(line: #"{"List":null}"#, now: Self.at(0.1), room: Self.paused))
        guard case .list(let rooms)? = list.first else { Issue.record("no list: \(list)"); return }
        #expect(Set(rooms["s1"]?.keys.map { $0 } ?? []) == ["ann", "bob", "carl"])
        #expect(rooms["s1"]?["ann"]?.isReady == true)
        // The server's List line carries a file object for everyone (Syncplay's clients read it unconditionally).
        let line = SyncplayCodec.encodeForClient(list[0])
        #expect(line.contains(#""file":{}"#) && line.contains(#""isReady":true"#))
    }

    @Test("a refused hello, a second hello, and anything before the hello get an Error and a drop")
    func refusals() {
        var refused = SyncplayServerState(now: Self.t0)
        _ = refused.receive(line: Self.hello, now: Self.t0, room: Self.paused)
        let actions = refused.refuse("wrong room or password")
        #expect(Self.sent(actions) == [.error("wrong room or password")] && Self.dropped(actions))
        #expect(refused.receive(line: #"{"List":null}"#, now: Self.t0, room: Self.paused).isEmpty)

        var early = SyncplayServerState(now: Self.t0)
        #expect(Self.dropped(early.receive(line: #"{"State":{}}"#, now: Self.t0, room: Self.paused)))
        var noRoom = SyncplayServerState(now: Self.t0)
        #expect(Self.dropped(noRoom.receive(line: #"{"Hello":{"username":"x","room":{"name":" "},"version":"1.6.9"}}"#,
                                            now: Self.t0, room: Self.paused)))
        var twice = Self.welcomed()
        #expect(Self.dropped(twice.receive(line: Self.hello, now: Self.at(1), room: Self.paused)))
    }

    @Test("bad input: not JSON, an unknown command, an oversized line, a flood, silence — each an Error and a drop")
    func badInput() {
        var notJSON = Self.welcomed()
        #expect(Self.dropped(notJSON.receive(line: "hello there", now: Self.at(1), room: Self.paused)))
        var unknown = Self.welcomed()
        #expect(Self.dropped(unknown.receive(line: #"{"Dance":{}}"#, now: Self.at(1), room: Self.paused)))
        var long = Self.welcomed()
        let line = #"{"Chat":""# + String(repeating: "a", count: long.limits.lineBytes) + #""}"#
        #expect(Self.dropped(long.receive(line: line, now: Self.at(1), room: Self.paused)))
        var framed = Self.welcomed()
        #expect(Self.dropped(framed.oversized()))

        // A flood: the burst passes, the rest of the same instant does not; spread out, the same lines pass.
        var flood = Self.welcomed()
        var results: [[SyncplayServerState.Action]] = []
        for _ in 0..<100 { results.append(flood.receive(line: #"{"List":null}"#, now: Self.at(1), room: Self.paused)) }
        let firstDrop = results.firstIndex(where: Self.dropped)
        #expect(firstDrop != nil && firstDrop! >= Int(flood.limits.lineBurst) - 2 && firstDrop! <= Int(flood.limits.lineBurst))
        #expect(flood.isClosed)
        var steady = Self.welcomed()
        for i in 0..<200 {
            #expect(!Self.dropped(steady.receive(line: #"{"List":null}"#, now: Self.at(1 + Double(i) * 0.1), room: Self.paused)))
        }

        // Silence: heartbeats go on for 12.5 s, then the client is dropped.
        var silent = Self.welcomed()
        #expect(!Self.dropped(silent.tick(now: Self.at(12.4), room: Self.paused)))
        #expect(Self.dropped(silent.tick(now: Self.at(12.6), room: Self.paused)))
        // A client that never says hello is dropped by the same rule.
        var mute = SyncplayServerState(now: Self.t0)
        #expect(Self.dropped(mute.tick(now: Self.at(13), room: Self.paused)))
    }

    @Test("heartbeats once a second carry the room's state and ping fields; the answer gives a round trip")
    func heartbeats() {
        var state = Self.welcomed()
        let first = Self.states(state.tick(now: Self.at(1), room: Self.paused))
        #expect(first.count == 1)
        #expect(first.first?.playstate == SyncplayPlaystate(position: 12, paused: true, doSeek: false, setBy: "ann"))
        #expect(first.first?.ping?.latencyCalculation == Self.at(1).seconds)
        #expect(first.first?.ping?.serverRtt == 0)
        #expect(state.tick(now: Self.at(1.5), room: Self.paused).isEmpty)
        // The client answers 100 ms later, echoing our timestamp and giving its own.
        let answer = #"{"State":{"playstate":{"position":12.0,"paused":true},"ping":{"latencyCalculation":\#(Self.at(1).seconds),"clientLatencyCalculation":5000.0,"clientRtt":0}}}"#
        #expect(Self.events(state.receive(line: answer, now: Self.at(1.1), room: Self.paused)).isEmpty)
        #expect(abs(state.averageRTT - 0.1) < 1e-6 && abs(state.forwardDelay - 0.15) < 1e-6)
        // The next heartbeat echoes the client's timestamp plus the time it was held here.
        let second = Self.states(state.tick(now: Self.at(2), room: Self.paused))
        #expect(abs((second.first?.ping?.clientLatencyCalculation ?? 0) - 5000.9) < 1e-6)
        #expect(abs((second.first?.ping?.serverRtt ?? 0) - 0.1) < 1e-6)
    }

    @Test("the client's pause, play and seek are events; the change goes back forced and stays until the room has it")
    func clientChanges() {
        var state = Self.welcomed()
        // bob plays from 12 s (ignoring-on-the-fly counter 1).
        let play = state.receive(line: #"{"State":{"playstate":{"position":12.0,"paused":false},"ignoringOnTheFly":{"client":1}}}"#,
                                 now: Self.at(1), room: Self.paused)
        #expect(Self.events(play) == [.changed(paused: false, position: 12, seek: false)])
        let forced = Self.states(play)
        #expect(forced.first?.playstate?.paused == false && forced.first?.playstate?.setBy == "bob")
        #expect(forced.first?.ignoringServer == 1 && forced.first?.ignoringClient == 1)
        // Until the client echoes the server's counter, no plain heartbeat goes out (Syncplay's rule).
        #expect(Self.states(state.tick(now: Self.at(2.1), room: Self.paused)).isEmpty)
        _ = state.receive(line: #"{"State":{"ignoringOnTheFly":{"server":1}}}"#, now: Self.at(2.2), room: Self.paused)
        // The session has not applied it yet: the heartbeat still says playing, from where bob started.
        let held = Self.states(state.tick(now: Self.at(3.2), room: Self.paused))
        #expect(held.first?.playstate?.paused == false)
        #expect(abs((held.first?.playstate?.position ?? 0) - 14.2) < 0.01)
        // Once the room plays, the room's own state goes out.
        let playing = SyncplayRoomPlaystate(position: 15.3, paused: false, setBy: "bob")
        #expect(Self.states(state.tick(now: Self.at(4.3), room: playing)).first?.playstate?.position == 15.3)

        // A seek (with the message's age added while playing), and a pause; nonsense positions are bounded.
        let seek = state.receive(line: #"{"State":{"playstate":{"position":40.0,"paused":false,"doSeek":true}}}"#,
                                 now: Self.at(5), room: playing)
        #expect(Self.events(seek) == [.changed(paused: false, position: 40 + state.forwardDelay, seek: true)])
        // (Each forced state counts from 1 again once the client has caught up.)
        _ = state.receive(line: #"{"State":{"ignoringOnTheFly":{"server":1}}}"#, now: Self.at(5.1), room: playing)
        let far = state.receive(line: #"{"State":{"playstate":{"position":1e300,"paused":true,"doSeek":true}}}"#,
                                now: Self.at(6), room: playing)
        #expect(Self.events(far) == [.changed(paused: true, position: SyncplayServerState.maxPosition, seek: true)])
        // While the server's forced state is unconfirmed, the client's reports are ignored (Syncplay's rule)…
        #expect(Self.events(state.receive(line: #"{"State":{"playstate":{"position":3.0,"paused":false}}}"#,
                                          now: Self.at(6.1), room: playing)).isEmpty)
        // …and once its own change has had its 5 s, a plain report (no seek, the room's paused state) is no change.
        _ = state.receive(line: #"{"State":{"ignoringOnTheFly":{"server":1}}}"#, now: Self.at(6.2), room: playing)
        #expect(Self.events(state.receive(line: #"{"State":{"playstate":{"position":16.0,"paused":false}}}"#,
                                          now: Self.at(11.5), room: playing)).isEmpty)
    }

    @Test("the room's changes are forced states; arrivals, departures, readiness and chat are Syncplay's Set and Chat")
    func roomChanges() {
        var state = Self.welcomed()
        let seek = Self.states(state.roomChanged(SyncplayRoomPlaystate(position: 30, paused: false, setBy: "ann"), doSeek: true,
                                                 now: Self.at(1)))
        #expect(seek.first?.playstate == SyncplayPlaystate(position: 30, paused: false, doSeek: true, setBy: "ann"))
        #expect(seek.first?.ignoringServer == 1)
        #expect(Self.sent(state.userJoined("carl")) == [.set([.user(name: "carl", room: "s1", file: nil, event: .joined)])])
        #expect(Self.sent(state.userReady("carl", isReady: true)) == [.set([.ready(username: "carl", isReady: true, manuallyInitiated: false)])])
        #expect(Self.sent(state.userLeft("carl")) == [.set([.user(name: "carl", room: "s1", file: nil, event: .left)])])
        #expect(state.userLeft("carl").isEmpty)
        #expect(Self.sent(state.chat(from: "ann", "hi")) == [.chat(username: "ann", message: "hi")])

        // The client's file, readiness and chat (cut to 150 characters, echoed to it as Syncplay servers do).
        let file = state.receive(line: #"{"Set":{"file":{"name":"movie.webm","duration":92.0,"size":1234}}}"#, now: Self.at(1), room: Self.paused)
        #expect(Self.events(file) == [.file(SyncplayFile(name: "movie.webm", duration: 92, size: .number(1234)))])
        let ready = state.receive(line: #"{"Set":{"ready":{"isReady":true,"manuallyInitiated":true}}}"#, now: Self.at(1.1), room: Self.paused)
        #expect(Self.events(ready) == [.ready(true)])
        let long = String(repeating: "x", count: 400)
        let chat = state.receive(line: #"{"Chat":"\#(long)"}"#, now: Self.at(1.2), room: Self.paused)
        #expect(Self.events(chat) == [.chat(String(repeating: "x", count: 150))])
        #expect(Self.sent(chat) == [.chat(username: "bob", message: String(repeating: "x", count: 150))])
        // Another room than the session's is refused.
        #expect(Self.dropped(state.receive(line: #"{"Set":{"room":{"name":"elsewhere"}}}"#, now: Self.at(1.3), room: Self.paused)))
    }

    @Test("the password is md5 of the secret, compared whole; connections are bounded in all and per address")
    func passwordAndAdmission() {
        #expect(SyncplayServerState.passwordMatches("5f4dcc3b5aa765d61d8327deb882cf99", secret: "password"))
        #expect(SyncplayServerState.passwordMatches("5F4DCC3B5AA765D61D8327DEB882CF99", secret: "password"))
        #expect(!SyncplayServerState.passwordMatches("5f4dcc3b5aa765d61d8327deb882cf9", secret: "password"))
        #expect(!SyncplayServerState.passwordMatches("5f4dcc3b5aa765d61d8327deb882cf990", secret: "password"))
        #expect(!SyncplayServerState.passwordMatches(nil, secret: "password"))
        #expect(!SyncplayServerState.passwordMatches("", secret: ""))

        var admission = SyncplayAdmission(maxTotal: 3, maxPerAddress: 2)
        #expect(admission.open(from: "a") == nil && admission.open(from: "a") == nil)
        #expect(admission.open(from: "a")?.contains("from your address") == true)
        #expect(admission.open(from: "b") == nil)
        #expect(admission.open(from: "c")?.contains("3 Syncplay connections") == true)
        admission.close(from: "a")
        #expect(admission.open(from: "c") == nil && admission.total == 3)
        admission.close(from: "nobody")
        #expect(admission.total == 3)
    }
}
