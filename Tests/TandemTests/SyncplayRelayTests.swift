import Foundation
import Testing
import Tandem
import TandemCore
import TandemPeer
import TandemSyncplay

/// A relay's Syncplay listener in process: the password is checked against the handshake key the relay holds, and
/// an admitted client joins with that key, which opens no app data.
@Suite("Syncplay clients on a relay, in process", .serialized)
struct SyncplayRelayTests {
    /// Waits up to 10 s for `stream` to say something `matches`.
    static func heard(_ stream: AsyncStream<ServerMessage>, _ matches: @escaping @Sendable (ServerMessage) -> Bool) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await message in stream where matches(message) { return true }
                return false
            }
            group.addTask { try? await Task.sleep(for: .seconds(10)); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// `socket.read` on a thread of its own: the link under test runs on the cooperative pool, which a blocking read
    /// must not hold (on two cores it has two threads).
    static func read(_ socket: RawSyncplaySocket, for seconds: Double,
                     until done: @escaping @Sendable ([String]) -> Bool = { _ in false }) async -> (lines: [String], closed: Bool) {
        // Used by that thread alone until it resumes the continuation.
        nonisolated(unsafe) let socket = socket
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: socket.read(for: seconds, until: done)) }
        }
    }

    @Test("the derived password admits a client into a session the relay hosts, as a participant via syncplay without chat; the secret, a guess or an unknown room get Error")
    func relayAdmitsTheDerivedPassword() async throws {
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let invite = try server.createSession()
        let ann = try await TandemClient.connect(invite: invite, name: "ann")
        let messages = ann.serverMessages()
        let guests = try await SyncplayGuests.start(relay: server, host: "127.0.0.1", port: 0)
        let password = SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)

        for (room, wrong) in [(invite.session, invite.secret), (invite.session, "guess"), ("no-such-session", password), ("bad/room", password)] {
            let eve = try RawSyncplaySocket(port: guests.listener.port)
            eve.write(SyncplayListenerTests.hello("eve", room: room, password: wrong))
            let answer = await Self.read(eve, for: 5)
            #expect(answer.closed && answer.lines.contains { $0.hasPrefix(#"{"Error""#) && $0.contains("wrong room or password") },
                    "\(room) \(wrong): \(answer.lines)")
        }

        let bob = try RawSyncplaySocket(port: guests.listener.port)
        bob.write(SyncplayListenerTests.hello("bob", room: invite.session, password: password))
        let welcome = await Self.read(bob, for: 5) { $0.contains { $0.contains(#""Hello""#) } }
        let hello = try #require(welcome.lines.first { $0.contains(#""Hello""#) }, "\(welcome.lines)")
        #expect(hello.contains(#""chat":false"#) && hello.contains("chat does not"), "\(hello)")
        #expect(await Self.heard(messages) { message in
            guard case .participants(let states) = message else { return false }
            return states.contains { $0.participant.name == "bob" && $0.participant.via == "syncplay" && $0.hasJoined }
        })
        // Its chat goes nowhere: not echoed (Syncplay's client would not send it anyway, the hello said so).
        bob.write(#"{"Chat":"popcorn?"}"# + "\r\n")
        let after = await Self.read(bob, for: 1.5) { $0.contains { $0.contains(#""Chat""#) } }
        #expect(!after.closed && !after.lines.contains { $0.contains(#""Chat""#) }, "\(after.lines)")

        // The session ends: its Syncplay client is told why and dropped.
        await server.endSession(invite.session, reason: InvalidationReason(code: .ended, message: "the host ended it"))
        let end = await Self.read(bob, for: 5)
        #expect(end.closed && end.lines.contains { $0.hasPrefix(#"{"Error""#) }, "\(end.lines.suffix(2))")
        await guests.close()
        await ann.close()
        await server.shutdown()
    }

    @Test("a host's listener takes the derived password and, as before, the secret; a guess or another room get Error")
    func hostTakesBothPasswords() async throws {
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let invite = try server.createSession()
        let guests = try await SyncplayGuests.start(host: "127.0.0.1", port: 0, invite: invite, dial: invite)
        let password = SyncplayPassword.derive(handshakeKey: invite.handshakeKey.bytes)
        #expect(guests.header(invite: invite) == ["Syncplay users join with: syncplay --host 127.0.0.1:\(guests.listener.port) "
            + "--room=\(invite.session) --password=\(password) FILE"])
        // A session id may start with `-` (about 1 in 64): attached with `=`, Syncplay's parser takes it as the room.
        let dashed = try Invite(parsing: "tandem://127.0.0.1:7420/-ma3zJtX#\(invite.secret)")
        #expect(SyncplayGuests.command(host: "127.0.0.1", port: "8999", invite: dashed).contains(" --room=-ma3zJtX --password="))
        #expect(SyncplayGuests.event(host: "127.0.0.1", port: 8999, invite: dashed)
            == SyncplayJoinEvent(host: "127.0.0.1", port: 8999, room: "-ma3zJtX", password: password))
        for (name, room, given, admitted) in [("bob", invite.session, password, true), ("carl", invite.session, invite.secret, true),
                                              ("eve", invite.session, "guess", false), ("mallory", "elsewhere", password, false)] {
            let client = try RawSyncplaySocket(port: guests.listener.port)
            client.write(SyncplayListenerTests.hello(name, room: room, password: given))
            let answer = await Self.read(client, for: 5) { $0.contains { $0.contains(#""Hello""#) || $0.contains(#""Error""#) } }
            if admitted {
                let hello = answer.lines.first { $0.contains(#""Hello""#) }
                #expect(hello?.contains(#""chat":true"#) == true, "\(name): \(answer.lines)")
            } else {
                #expect(answer.lines.contains { $0.hasPrefix(#"{"Error""#) && $0.contains("wrong room or password") }, "\(name): \(answer.lines)")
            }
        }
        await guests.close()
        await server.shutdown()
    }

    @Test("a connection made with the handshake key joins but can neither send nor open app data; a wrong key is refused")
    func handshakeKeyConnection() async throws {
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let invite = try server.createSession()
        let ann = try await TandemClient.connect(invite: invite, name: "ann")
        let key = try #require(server.handshakeKey(ofSession: invite.session))
        var address = invite
        address.secret = "not used"
        let keyed = try await TandemClient.connect(to: address, handshakeKey: key, name: "relay-side")
        #expect(keyed.welcome.participants.contains { $0.participant.name == "ann" })
        await #expect(throws: (any Error).self) { try await keyed.sendAppMessage(Data("hello".utf8)) }
        let place = SealedPlace.message(sender: ann.localParticipantID, delivery: .reliable, sequence: 1)
        let sealed = try #require(try ann.payloadCipher?.seal(Data("hello".utf8), at: place))
        #expect(throws: (any Error).self) { try keyed.payloadCipher?.open(sealed, at: place) }

        await #expect(throws: TandemClientError.self) {
            var other = invite
            other.secret = "another secret"
            return try await TandemClient.connect(to: invite, handshakeKey: other.handshakeKey, name: "mallory")
        }
        await keyed.close()
        await ann.close()
        await server.shutdown()
    }
}
