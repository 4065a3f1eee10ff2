import Foundation
import Testing
import Tandem
import TandemCore
@testable import TandemSyncplay

/// The Syncplay password of a Tandem session, derived from its handshake key, and a server that keeps chat out.
@Suite("Syncplay password")
struct SyncplayPasswordTests {
    static let invite = Invite(host: "127.0.0.1", session: "movie-night", secret: "correct horse battery staple")

    @Test("the password is the first 24 hex digits of HMAC-SHA256(SHA-256(secret), label) — PROTOCOL.md's test vector")
    func testVector() {
        #expect(Self.invite.handshakeKey.bytes.map { String(format: "%02x", $0) }.joined()
            == "c4bbcb1fbec99d65bf59d85c8cb62ee2db963f0fe106f483d9afa73bd4e39a8a")
        let password = SyncplayPassword.derive(handshakeKey: Self.invite.handshakeKey.bytes)
        #expect(password == "3a9964f585d77d47f58159ca")
        #expect(SyncplayClientState.Configuration.passwordHash(password) == "795665e0cee271172c56aa1396d8ab22")
        // Another secret, another password; the secret itself is not the password.
        var other = Self.invite
        other.secret = "correct horse battery staplf"
        #expect(SyncplayPassword.derive(handshakeKey: other.handshakeKey.bytes) != password)
        #expect(password != Self.invite.secret && !password.hasPrefix("-"))
    }

    @Test("md5 of the derived password matches, in either case; md5 of the secret, another key's, a cut one or none do not")
    func check() {
        let key = Self.invite.handshakeKey.bytes
        #expect(SyncplayPassword.matches("795665e0cee271172c56aa1396d8ab22", handshakeKey: key))
        #expect(SyncplayPassword.matches("795665E0CEE271172C56AA1396D8AB22", handshakeKey: key))
        #expect(!SyncplayPassword.matches("795665e0cee271172c56aa1396d8ab2", handshakeKey: key))
        #expect(!SyncplayPassword.matches(SyncplayClientState.Configuration.passwordHash(Self.invite.secret), handshakeKey: key))
        var other = Self.invite
        other.secret = "another secret"
        #expect(!SyncplayPassword.matches("795665e0cee271172c56aa1396d8ab22", handshakeKey: other.handshakeKey.bytes))
        #expect(!SyncplayPassword.matches(nil, handshakeKey: key))
        #expect(!SyncplayPassword.matches("", handshakeKey: key))
    }

    @Test("a hello answered with chat: false keeps chat out both ways: no echo, no event, nothing sent to the client")
    func chatOff() {
        let t0 = LocalInstant(nanoseconds: 1_000_000_000_000)
        let room = SyncplayRoomPlaystate(position: 0, paused: true)
        var state = SyncplayServerState(now: t0)
        _ = state.receive(line: SyncplayServerStateTests.hello, now: t0, room: room)
        let answer = SyncplayServerStateTests.sent(state.admit(as: "bob", members: [:], features: ["chat": .bool(false)],
                                                               motd: "no chat here", now: t0))
        guard case .hello(let hello)? = answer.first else { Issue.record("no hello: \(answer)"); return }
        #expect(hello.features["chat"] == .bool(false) && hello.motd == "no chat here")
        #expect(!state.offersChat)
        let chat = state.receive(line: #"{"Chat":"popcorn?"}"#, now: t0 + .seconds(0.5), room: room)
        #expect(chat.isEmpty, "\(chat)")
        #expect(state.chat(from: "ann", "hello").isEmpty)
        // Everything else goes on as usual.
        #expect(!SyncplayServerStateTests.states(state.tick(now: t0 + .seconds(1.1), room: room)).isEmpty)
    }
}
