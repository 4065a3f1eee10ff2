import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// Participant abuse inside a session, over real loopback sockets: roles, reconnect tokens, bounded names and
/// activities.
@Suite("Hardening: participants inside a session")
struct HardeningAuthorityTests {
    /// A test server with a handshake timeout generous enough for a loaded machine (these tests are not about it).
    static func server() async throws -> SessionServer {
        try await startTestServer(handshakeTimeout: 5_000_000_000)
    }

    static func isHost(_ connection: TandemClientConnection) -> Bool {
        connection.welcome.participants.first { $0.participant.id == connection.localParticipantID }?.isHost ?? false
    }

    static func refusal(in stream: AsyncStream<ServerMessage>) async -> String? {
        guard case .refused(let reason, _, _)? = await firstMessage(in: stream, within: 3, where: {
            if case .refused = $0 { true } else { false }
        }) else { return nil }
        return reason
    }

    /// Waits until `connection` is closed (nil if it is still open after `timeout` seconds).
    static func closedReason(of connection: TandemClientConnection, within timeout: Double = 3) async -> InvalidationReason? {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if let reason = connection.closedReason { return reason }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return nil
    }

    /// Whether an app message from `sender` still reaches `receiver`.
    static func stillConnected(_ sender: TandemClientConnection, _ receiver: TandemClientConnection) async throws -> Bool {
        let stream = receiver.serverMessages()
        try await sender.sendAppMessage(Data("still here".utf8))
        return await collectAppMessages(stream, count: 1, within: 3, opening: receiver).first?.payload
            == Data("still here".utf8)
    }

    @Test("a joiner's end is refused and the session goes on")
    func joinerCannotEnd() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "roles")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let guest = try await TandemClient.connect(invite: invite, name: "guest", options: clientOptions())
        let stream = guest.serverMessages()
        try await guest.send(.end)
        #expect(await Self.refusal(in: stream) == "only the host can end the session for everyone; leave with q instead")
        #expect(host.closedReason == nil && guest.closedReason == nil)
        #expect(try await Self.stillConnected(host, guest))
        let later = try await TandemClient.connect(invite: invite, name: "later", options: clientOptions())
        #expect(later.welcome.participants.count == 3)
        await server.shutdown()
    }

    @Test("a joiner removing the host's attachment is refused; the attachment stays")
    func joinerCannotRemoveTheHostsAttachment() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "journal")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let guest = try await TandemClient.connect(invite: invite, name: "guest", options: clientOptions())
        let guestStream = guest.serverMessages()
        let hostStream = host.serverMessages()
        _ = try await host.uploadAttachment(Data("poster".utf8), name: "poster.txt", id: "poster")
        #expect(await firstMessage(in: guestStream, within: 3) { $0 == .journal(.commit(id: "poster")) } != nil)
        try await guest.removeAttachment(id: "poster")
        #expect(await Self.refusal(in: guestStream)
            == "only the host can remove host's attachment; you can remove your own attachments")
        #expect(await firstMessage(in: hostStream, within: 0.5) { $0 == .journal(.remove(id: "poster")) } == nil)
        let later = try await TandemClient.connect(invite: invite, name: "later", options: clientOptions())
        #expect(later.welcome.attachments.map(\.id) == ["poster"])
        await server.shutdown()
    }

    @Test("reconnectAs the host without its token gives a new identity and no host role")
    func reconnectWithoutToken() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "tokens")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        #expect(Self.isHost(host))
        let token = try #require(host.welcome.reconnectToken)
        #expect(token.count >= 22)
        var options = clientOptions(asHost: true, reconnectAs: host.localParticipantID)
        options.reconnectToken = "not-the-token"
        let mallory = try await TandemClient.connect(invite: invite, name: "mallory", options: options)
        #expect(mallory.localParticipantID != host.localParticipantID)
        #expect(!Self.isHost(mallory))
        #expect(mallory.welcome.reconnectToken != token)
        // Nobody else's welcome or participant list carries the host's token.
        #expect(!String(decoding: try JSONEncoder().encode(mallory.welcome), as: UTF8.self).contains(token))
        // After the host dropped, the same attempt without a token fails the same way.
        await host.abort()
        let again = try await TandemClient.connect(invite: invite, name: "mallory",
                                                   options: clientOptions(asHost: true, reconnectAs: host.localParticipantID))
        #expect(again.localParticipantID != host.localParticipantID && !Self.isHost(again))
        #expect(try await Self.stillConnected(again, mallory))
        await server.shutdown()
    }

    @Test("reconnectAs with the token from the welcome takes back the id and the host role after a drop")
    func reconnectWithTokenAfterADrop() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "tokens")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let guest = try await TandemClient.connect(invite: invite, name: "guest", options: clientOptions())
        await host.abort()
        var options = clientOptions(reconnectAs: host.localParticipantID)
        options.reconnectToken = host.welcome.reconnectToken
        let back = try await TandemClient.connect(invite: invite, name: "host", options: options)
        #expect(back.localParticipantID == host.localParticipantID)
        #expect(Self.isHost(back))
        #expect(back.welcome.reconnectToken == host.welcome.reconnectToken)
        // The host's roles came back with it: it can end the session.
        try await back.send(.end)
        #expect(await Self.closedReason(of: guest)?.code == .ended)
        await server.shutdown()
    }

    @Test("reconnectAs with the token while the first connection is still open replaces it")
    func reconnectWithTokenWhileConnected() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "tokens")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let guest = try await TandemClient.connect(invite: invite, name: "guest", options: clientOptions())
        var options = clientOptions(reconnectAs: host.localParticipantID)
        options.reconnectToken = host.welcome.reconnectToken
        let second = try await TandemClient.connect(invite: invite, name: "host", options: options)
        #expect(second.localParticipantID == host.localParticipantID && Self.isHost(second))
        #expect(await Self.closedReason(of: host) != nil)
        #expect(second.welcome.participants.count == 2)
        #expect(try await Self.stillConnected(second, guest))
        #expect(try await Self.stillConnected(guest, second))
        await server.shutdown()
    }

    @Test("a name of one huge Character joins with a bounded name; the others and later joins are unaffected")
    func hugeName() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "names")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let hostStream = host.serverMessages()
        // One Character as large as fits in a 1 MiB frame with the join around it.
        let huge = "e" + String(repeating: "\u{301}", count: 520_000)
        #expect(huge.count == 1 && huge.utf8.count == 1_040_001)
        let big = try await TandemClient.connect(invite: invite, name: huge, options: clientOptions())
        #expect(big.welcome.localParticipant.name == "guest")
        let forged = try await TandemClient.connect(invite: invite, name: "eve\nINFO: admin joined\u{1B}[2K",
                                                    options: clientOptions())
        #expect(forged.welcome.localParticipant.name == "eveINFO: admin joined[2K")
        let lists = await firstMessage(in: hostStream, within: 3) {
            if case .participants(let list) = $0 { list.count == 3 } else { false }
        }
        guard case .participants(let list)? = lists else {
            Issue.record("no participants list with three")
            return
        }
        #expect(list.allSatisfy { $0.participant.name.utf8.count <= TextBounds.maxNameBytes })
        #expect(host.closedReason == nil && big.closedReason == nil)
        #expect(try await Self.stillConnected(host, big))
        let later = try await TandemClient.connect(invite: invite, name: "later", options: clientOptions())
        #expect(later.welcome.participants.count == 4)
        await server.shutdown()
    }

    @Test("a 1 MiB activity from the host is refused and later joins work")
    func hugeActivity() async throws {
        let server = try await Self.server()
        let invite = try server.createSession(id: "activity")
        let host = try await TandemClient.connect(invite: invite, name: "host", options: clientOptions(asHost: true))
        let guest = try await TandemClient.connect(invite: invite, name: "guest", options: clientOptions())
        let hostStream = host.serverMessages()
        let envelope = ActivityEnvelope(activityIdentifier: "WatchTogether",
                                        metadata: GroupActivityMetadata(title: "Big", type: .watchTogether),
                                        payload: Data(repeating: 0x41, count: 750_000), itemID: "big")
        try await host.send(.setActivity(envelope))
        let reason = await Self.refusal(in: hostStream)
        #expect(reason?.contains("the limit is 64 KiB") == true, "\(String(describing: reason))")
        #expect(host.closedReason == nil && guest.closedReason == nil)
        let later = try await TandemClient.connect(invite: invite, name: "later", options: clientOptions())
        #expect(later.welcome.activity == nil)
        #expect(try await Self.stillConnected(host, later))
        await server.shutdown()
    }
}
