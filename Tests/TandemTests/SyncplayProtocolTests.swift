import Foundation
import Testing
import TandemCore
@testable import TandemSyncplay

/// Syncplay's wire format and client rules, on a manual clock: what a Tandem peer says and does in a Syncplay room.
@Suite("Syncplay: the protocol and its client rules")
struct SyncplayProtocolTests {
    static let config = SyncplayClientState.Configuration(
        username: "ann", room: "movie", file: SyncplayFile(name: "countdown.webm", duration: 92, size: .number(1000)))

    static func at(_ seconds: Double) -> LocalInstant { LocalInstant(nanoseconds: Int64(seconds * 1e9)) }

    static func sent(_ actions: [SyncplayClientState.Action]) -> [SyncplayCommand] {
        actions.compactMap { if case .send(let c) = $0 { c } else { nil } }
    }

    static func events(_ actions: [SyncplayClientState.Action]) -> [SyncplayClientState.Event] {
        actions.compactMap { if case .event(let e) = $0 { e } else { nil } }
    }

    static func welcomed() -> SyncplayClientState {
        var client = SyncplayClientState(configuration: config)
        _ = client.start(now: at(0))
        _ = client.receive([.hello(SyncplayHello(username: "ann", room: "movie", version: "1.2.255"))], now: at(0.1),
                           local: .init(position: 0, paused: true))
        return client
    }

    @Test("lines decode to commands and encode back; the server's real lines are read")
    func codec() throws {
        let server = #"{"State": {"ping": {"latencyCalculation": 1732380000.25, "serverRtt": 0.002}, "playstate": {"position": 12.5, "paused": false, "doSeek": true, "setBy": "bob"}, "ignoringOnTheFly": {"server": 1}}}"#
        let decoded = try SyncplayCodec.decode(server)
        #expect(decoded == [.state(SyncplayState(
            playstate: SyncplayPlaystate(position: 12.5, paused: false, doSeek: true, setBy: "bob"),
            ping: SyncplayPing(latencyCalculation: 1732380000.25, serverRtt: 0.002), ignoringServer: 1))])
        let join = #"{"Set": {"user": {"bob": {"room": {"name": "movie"}, "file": {"name": "a.webm", "duration": 92.0, "size": 5}, "event": {"joined": true}}}}}"#
        #expect(try SyncplayCodec.decode(join) == [.set([.user(name: "bob", room: "movie",
            file: SyncplayFile(name: "a.webm", duration: 92, size: .number(5)), event: .joined)])])
        #expect(try SyncplayCodec.decode(#"{"Chat": {"username": "bob", "message": "hi\u0007"}}"#)
                == [.chat(username: "bob", message: "hi")])
        for command: SyncplayCommand in [
            .hello(SyncplayHello(username: "ann", room: "movie", realVersion: "1.7.3", features: ["chat": .bool(true)])),
            .state(SyncplayState(playstate: SyncplayPlaystate(position: 3.25, paused: true), ping: SyncplayPing(clientRtt: 0.01))),
            .set([.ready(username: nil, isReady: true, manuallyInitiated: false)]),
            .chat(username: nil, message: "hello"), .error("no"),
        ] {
            #expect(try SyncplayCodec.decode(SyncplayCodec.encode(command)) == [command], "\(command)")
        }
    }

    @Test("hostile lines are refused with a reason: not JSON, not an object, an unknown command, too long, a bad Hello")
    func hostileLines() throws {
        for line in ["{not json", "[1,2]", #"{"Nope": {}}"#, #"{"Hello": {"room": {"name": "x"}}}"#, #"{"State": 3}"#,
                     String(repeating: " ", count: 10) + "{\"Chat\": \"" + String(repeating: "x", count: 70_000) + "\"}"] {
            #expect(throws: SyncplayProtocolError.self, "\(line.prefix(40))") { try SyncplayCodec.decode(line) }
        }
        #expect(try SyncplayCodec.decode("   ") == [])
        // Texts are bounded and control characters removed.
        let long = try? SyncplayCodec.decode(#"{"Chat": ""# + String(repeating: "é", count: 5000) + #""}"#)
        if case .chat(_, let message)? = long?.first { #expect(message.count == SyncplayCodec.maxTextCharacters) } else {
            Issue.record("no chat decoded")
        }
    }

    @Test("the hello, then the file and the user list once the server answers")
    func hello() {
        var client = SyncplayClientState(configuration: Self.config)
        guard case .hello(let hello)? = Self.sent(client.start(now: Self.at(0))).first else {
            Issue.record("no hello")
            return
        }
        #expect(hello.username == "ann" && hello.room == "movie" && hello.version == "1.2.255")
        let actions = client.receive([.hello(SyncplayHello(username: "ann2", room: "movie", version: "1.2.255", motd: "hi"))],
                                     now: Self.at(0.1), local: .init(position: 0, paused: true))
        #expect(Self.events(actions) == [.welcomed(username: "ann2", room: "movie", motd: "hi")])
        #expect(Self.sent(actions) == [.set([.file(Self.config.file!)]), .list([:])])
        #expect(client.username == "ann2")
    }

    @Test("each heartbeat is answered with the local play state and the echoed timestamp; latency is smoothed")
    func heartbeat() {
        var client = Self.welcomed()
        let ping = SyncplayPing(latencyCalculation: 500, serverRtt: 0)
        let first = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 10, paused: false), ping: ping))],
                                   now: Self.at(1), local: .init(position: 9.5, paused: false))
        #expect(Self.events(first) == [.roomState(paused: false, position: 10, doSeek: false, setBy: nil)])
        guard case .state(let reply)? = Self.sent(first).first else { Issue.record("no reply"); return }
        #expect(reply.playstate == SyncplayPlaystate(position: 9.5, paused: false))
        #expect(reply.ping?.latencyCalculation == 500 && reply.ping?.clientLatencyCalculation == 1)
        // The server echoes our timestamp a second later with 0.2 s of round trip: forward delay 0.1 s.
        let second = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 11, paused: false),
                                                          ping: SyncplayPing(latencyCalculation: 501, clientLatencyCalculation: 1.8,
                                                                             serverRtt: 0.2)))],
                                    now: Self.at(2), local: .init(position: 10.5, paused: false))
        #expect(abs(client.averageRTT - 0.2) < 1e-9)
        #expect(abs(client.forwardDelay - 0.1) < 1e-9)
        // A playing position is corrected by the forward delay; a paused one is not.
        #expect(Self.events(second) == [.roomState(paused: false, position: 11.1, doSeek: false, setBy: nil)])
        // A paused player answering a playing room answers as the player it is about to be (playing from the room's
        // position): answering "paused" would pause the room.
        let third = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 12, paused: false)))],
                                   now: Self.at(3), local: .init(position: 4, paused: true))
        if case .state(let reply)? = Self.sent(third).first {
            #expect(reply.playstate?.paused == false && abs((reply.playstate?.position ?? 0) - 12.1) < 1e-9)
        } else {
            Issue.record("no reply")
        }
    }

    @Test("with no position of its own (nothing loaded), the answer repeats the room's state, or carries none when the heartbeat has none")
    func noPositionOfItsOwn() {
        var client = Self.welcomed()
        let paused = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 22, paused: true, setBy: "bob"),
                                                          ping: SyncplayPing(latencyCalculation: 500, serverRtt: 0)))],
                                    now: Self.at(1), local: nil)
        #expect(Self.events(paused) == [.roomState(paused: true, position: 22, doSeek: false, setBy: "bob")])
        guard case .state(let reply)? = Self.sent(paused).first else { Issue.record("no reply"); return }
        #expect(reply.playstate == SyncplayPlaystate(position: 22, paused: true), "a position it has not played would move the room")
        #expect(reply.ping?.latencyCalculation == 500)
        // A heartbeat without a play state: nothing to repeat, so the answer carries none (as Syncplay's own client).
        let bare = client.receive([.state(SyncplayState(ping: SyncplayPing(latencyCalculation: 501, serverRtt: 0)))],
                                  now: Self.at(2), local: nil)
        if case .state(let reply)? = Self.sent(bare).first { #expect(reply.playstate == nil) } else { Issue.record("no reply") }
    }

    @Test("after a local change, heartbeats already on their way are ignored until the server confirms it")
    func ignoringOnTheFly() {
        var client = Self.welcomed()
        let change = Self.sent(client.localChange(.init(position: 30, paused: true), seek: true, now: Self.at(1)))
        guard case .state(let sent)? = change.first else { Issue.record("no state"); return }
        #expect(sent.playstate == SyncplayPlaystate(position: 30, paused: true, doSeek: true) && sent.ignoringClient == 1)
        // A heartbeat from before the change: not applied, and the answer carries no play state.
        let stale = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 5, paused: false)))],
                                   now: Self.at(1.1), local: .init(position: 30, paused: true))
        #expect(Self.events(stale).isEmpty)
        if case .state(let reply)? = Self.sent(stale).first { #expect(reply.playstate == nil && reply.ignoringClient == 1) }
        // The server confirms (echoes client 1): states apply again.
        let confirmed = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 30, paused: true, setBy: "ann"),
                                                             ignoringClient: 1))],
                                       now: Self.at(1.2), local: .init(position: 30, paused: true))
        #expect(Self.events(confirmed) == [.roomState(paused: true, position: 30, doSeek: false, setBy: "ann")])
        // A forced server state (someone else's seek) is applied and acknowledged once.
        let forced = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 50, paused: true, doSeek: true, setBy: "bob"),
                                                          ignoringServer: 3))],
                                    now: Self.at(2), local: .init(position: 30, paused: true))
        #expect(Self.events(forced) == [.roomState(paused: true, position: 50, doSeek: true, setBy: "bob")])
        if case .state(let reply)? = Self.sent(forced).first { #expect(reply.ignoringServer == 3) }
        let next = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 50, paused: true)))],
                                  now: Self.at(3), local: .init(position: 50, paused: true))
        if case .state(let reply)? = Self.sent(next).first { #expect(reply.ignoringServer == nil) }
    }

    @Test("a change that crosses a forced state (the room's echo of this peer's seek) is said again with the echo, not lost")
    func changeCrossingAForcedState() {
        var client = Self.welcomed()
        // A seek, then a play 10 ms later, before the server's forced echo of the seek has arrived.
        _ = client.localChange(.init(position: 37, paused: true), seek: true, now: Self.at(1))
        _ = client.localChange(.init(position: 37, paused: false), seek: false, now: Self.at(1.01))
        // The forced echo confirms the seek only: the server sent it before the play arrived, so it ignores the play.
        let echo = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 37, paused: true, doSeek: true, setBy: "ann"),
                                                        ignoringServer: 1, ignoringClient: 1))],
                                  now: Self.at(1.05), local: .init(position: 37.04, paused: false))
        #expect(Self.events(echo).isEmpty, "the stale pause must not reach the player")
        guard case .state(let reply)? = Self.sent(echo).first else { Issue.record("no reply"); return }
        #expect(reply.ignoringServer == 1 && reply.ignoringClient == 2)
        #expect(reply.playstate?.paused == false && reply.playstate?.doSeek == false)
        #expect(abs((reply.playstate?.position ?? 0) - 37.04) < 0.001)
        // The server applies it and confirms: states apply again, and the play is not said a third time.
        let confirmed = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 37.05, paused: false, setBy: "ann"),
                                                             ignoringServer: 1, ignoringClient: 2))],
                                       now: Self.at(1.1), local: .init(position: 37.09, paused: false))
        #expect(Self.events(confirmed) == [.roomState(paused: false, position: 37.05, doSeek: false, setBy: "ann")])
        if case .state(let reply)? = Self.sent(confirmed).first {
            #expect(reply.ignoringClient == nil && reply.ignoringServer == 1 && reply.playstate?.paused == false)
        }
        // Another peer's forced seek with no change of ours pending is applied as before.
        let other = client.receive([.state(SyncplayState(playstate: SyncplayPlaystate(position: 5, paused: true, doSeek: true, setBy: "bob"),
                                                         ignoringServer: 2))],
                                   now: Self.at(2), local: .init(position: 38, paused: false))
        #expect(Self.events(other) == [.roomState(paused: true, position: 5, doSeek: true, setBy: "bob")])
    }

    @Test("users of this room join, change file and leave; other rooms and this peer are left out; the list is bounded")
    func users() {
        var client = Self.welcomed()
        let local = SyncplayLocalPlaystate(position: 0, paused: true)
        let file = SyncplayFile(name: "x.webm", duration: 1, size: .number(1))
        #expect(Self.events(client.receive([.set([.user(name: "bob", room: "movie", file: nil, event: .joined)])], now: Self.at(1), local: local))
                == [.userJoined("bob", file: nil)])
        #expect(Self.events(client.receive([.set([.user(name: "eve", room: "other", file: nil, event: .joined)])], now: Self.at(1), local: local)).isEmpty)
        #expect(Self.events(client.receive([.set([.user(name: "ann", room: "movie", file: file, event: nil)])], now: Self.at(1), local: local)).isEmpty)
        #expect(Self.events(client.receive([.set([.user(name: "bob", room: "movie", file: file, event: nil)])], now: Self.at(1), local: local))
                == [.userFile("bob", file)])
        #expect(Self.events(client.receive([.set([.user(name: "bob", room: "movie", file: nil, event: .left)])], now: Self.at(1), local: local))
                == [.userLeft("bob")])
        #expect(client.users.isEmpty)
        for i in 0..<(SyncplayCodec.maxUsers + 50) {
            _ = client.receive([.set([.user(name: "u\(i)", room: "movie", file: nil, event: .joined)])], now: Self.at(2), local: local)
        }
        #expect(client.users.count == SyncplayCodec.maxUsers)
    }

    @Test("a server that says nothing for 12.5 s is dropped; an Error ends the connection with its message")
    func silenceAndErrors() {
        let client = Self.welcomed()
        #expect(client.tick(now: Self.at(12)).isEmpty)
        guard case .close(let reason)? = client.tick(now: Self.at(12.7)).first else { Issue.record("not closed"); return }
        #expect(reason.contains("12 s"))
        var other = Self.welcomed()
        let actions = other.receive([.error("wrong password")], now: Self.at(1), local: .init(position: 0, paused: true))
        #expect(actions == [.event(.serverError("wrong password")), .close("the Syncplay server said: wrong password")])
    }
}
