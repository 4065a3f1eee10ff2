import Foundation
import NIOCore
import TandemCore
import Testing
@_spi(Testing) @testable import TandemNet

/// What keeps a link alive when it carries traffic anyway: heartbeats only on a connection that has gone quiet one
/// way or the other, and a client's clock pings over UDP standing in for its hellos. Real sockets on 127.0.0.1;
/// the bounds hold on a busy machine (the old behaviour breaks them several times over).
@Suite(.serialized) struct KeepaliveTests {
    @Test("the heartbeat rule: a ping unless something went out since the last tick and came in within the interval")
    func heartbeatRule() {
        let interval = TimeSpan.milliseconds(500)
        #expect(!Heartbeat.shouldPing(sentSinceLastTick: true, silence: .milliseconds(100), interval: interval))
        #expect(Heartbeat.shouldPing(sentSinceLastTick: false, silence: .milliseconds(100), interval: interval))
        #expect(Heartbeat.shouldPing(sentSinceLastTick: true, silence: interval, interval: interval))
        #expect(Heartbeat.shouldPing(sentSinceLastTick: false, silence: .seconds(1), interval: interval))
    }

    @Test("frames flowing both ways take the place of heartbeats; once the connection is quiet, pings come back")
    func busyConnectionsCarryNoHeartbeats() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession(id: "busy")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        let raw = try await RawPeer.connect(port: server.port)
        try await raw.joinAndGoSilent(invite: invite, name: "raw")

        // Both send every 100 ms for 3.5 s; the server passes ann's messages on to raw.
        let start = ContinuousClock.now
        var pingsAfterOneSecond: Int?
        var sequence: UInt64 = 0
        while ContinuousClock.now - start < .milliseconds(3_500) {
            sequence += 1
            try await raw.sendAppMessage(sequence: sequence)
            try await ann.sendAppMessage(Data("hi".utf8))
            if pingsAfterOneSecond == nil, ContinuousClock.now - start >= .seconds(1) {
                pingsAfterOneSecond = raw.count(of: .heartbeatPing)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let busyPings = raw.count(of: .heartbeatPing) - (pingsAfterOneSecond ?? 0)
        // 2.5 s of heartbeats every 0.5 s would be 5 pings; a stalled test machine may cost one.
        #expect(busyPings <= 1, "\(busyPings) heartbeat pings while frames flowed both ways")
        #expect(raw.appMessageCount() >= 25)

        // Quiet now: the server asks again, and a peer that does not answer is still timed out (2 s).
        let quietFrom = raw.count(of: .heartbeatPing)
        #expect(await waitUntil(2) { raw.count(of: .heartbeatPing) > quietFrom }, "no ping once the connection went quiet")
        #expect(await raw.closingErrorCode(within: 5) == .heartbeatTimeout)
        await ann.close()
        await server.shutdown()
    }

    @Test("a peer that only answers pings stays connected while messages flood towards it")
    func aPeerThatOnlyAnswersPingsStays() async throws {
        let server = try await startTestServer()
        let invite = try server.createSession(id: "passive")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        let raw = try await RawPeer.connect(port: server.port)
        try await raw.joinAndGoSilent(invite: invite, name: "raw")

        // raw answers each ping and sends nothing else; ann sends every 50 ms for 4 s (twice the timeout).
        let start = ContinuousClock.now
        var answered = 0
        while ContinuousClock.now - start < .seconds(4) {
            try await ann.sendAppMessage(Data("hi".utf8))
            while answered < raw.count(of: .heartbeatPing) {
                answered += 1
                try await raw.sendFrame(FrameKind.heartbeatPong.rawValue, [])
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Sending to raw all along, the server still asked, since it heard nothing else from it.
        #expect(answered >= 2, "only \(answered) pings in 4 s")
        #expect(raw.channel.isActive, "a peer that answered every ping was dropped")
        #expect(raw.appMessageCount() >= 40)
        #expect(ann.closedReason == nil)
        await ann.close()
        await server.shutdown()
    }

    @Test("one timer per loop ticks every connection once an interval; a closed connection leaves it")
    func oneSweepTicksEveryConnection() async throws {
        let server = try await startTestServer(maxParticipants: 16)
        let invite = try server.createSession(id: "sweep")
        var peers: [RawPeer] = []
        for index in 0..<12 {
            let peer = try await RawPeer.connect(port: server.port)
            try await peer.joinAndGoSilent(invite: invite, name: "p\(index)")
            peers.append(peer)
        }
        #expect(await server.heartbeatSweepMembers() == 12)
        // For 3 s every peer answers each ping and says nothing else: the server, which sends them nothing else
        // either, pings each on every tick — 0.5 s apart, so about 6 times.
        var answered = [Int](repeating: 0, count: peers.count)
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(3) {
            for (index, peer) in peers.enumerated() {
                while answered[index] < peer.count(of: .heartbeatPing) {
                    answered[index] += 1
                    try await peer.sendFrame(FrameKind.heartbeatPong.rawValue, [])
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        for count in answered { #expect((4...8).contains(count), "\(count) pings in 3 s") }
        // Then silence: everyone is timed out, and the sweep lets go of them.
        for peer in peers { #expect(await peer.closingErrorCode(within: 5) == .heartbeatTimeout) }
        #expect(await waitUntil(3) { server.connectionCount == 0 })
        var left = await server.heartbeatSweepMembers()
        for _ in 0..<30 where left != 0 {
            try await Task.sleep(for: .milliseconds(100))
            left = await server.heartbeatSweepMembers()
        }
        #expect(left == 0, "\(left) closed connections still in the sweep")
        await server.shutdown()
    }

    @Test("while a client pings over UDP it leaves out its hellos, and the server keeps sending it datagrams")
    func clockPingsStandInForHellos() async throws {
        let server = try await DatagramTests.server()  // endpoints expire 1.5 s after the last hello
        let invite = try server.createSession(id: "hellos")
        var options = DatagramTests.options()
        options.datagramHelloInterval = .seconds(1)
        options.clockSync.steadyInterval = .milliseconds(250)
        // A client sharing its endpoint for direct paths says hello every interval whatever it pings.
        options.directPaths = false
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: options)
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: options)
        #expect(await waitUntil(10) { ann.unreliablePath == .udp && bob.unreliablePath == .udp })
        #expect(await waitUntil(10) { bob.datagramStatus.clockPongsReceived > 0 }, "no clock answers over UDP")

        let before = bob.datagramStatus
        try await Task.sleep(for: .seconds(4))
        let after = bob.datagramStatus
        let hellos = (after.sent - after.clockPingsSent - after.messagesSent)
            - (before.sent - before.clockPingsSent - before.messagesSent)
        // A hello a second would be 4; pings went out every 250 ms or faster.
        #expect(after.clockPingsSent - before.clockPingsSent >= 8)
        #expect(hellos <= 1, "\(hellos) hellos in 4 s while pinging over UDP")
        #expect(bob.unreliablePath == .udp && after.fallbacks == before.fallbacks)

        // Four seconds without a hello, the server still has bob's endpoint: ann's unreliable messages reach him
        // as datagrams.
        let inbox = bob.serverMessages()
        for i in 0..<10 {
            try await ann.sendAppMessage(Data("u\(i)".utf8), delivery: .unreliable)
            try await Task.sleep(for: .milliseconds(5))
        }
        let got = await gatherAppMessages(inbox, count: 10, within: 10, opening: bob)
        #expect(DatagramTests.unreliableTexts(got).count >= 9)
        #expect(bob.datagramStatus.messagesReceived - after.messagesReceived >= 9, "the server sent them over TCP")
        await ann.close()
        await bob.close()
        await server.shutdown()
    }
}
