import Foundation
import NIOCore
import TandemCore
import Testing
@_spi(Testing) @testable import TandemNet

/// Clock-sync probes as UDP datagrams beside the TCP connection, with real sockets on 127.0.0.1 (not timing: which
/// samples arrive, by which path).
@Suite(.serialized) struct DatagramClockTests {
    /// The samples of `connection` whose ping went out after `since`, gathered for `seconds`.
    static func freshSamples(_ stream: AsyncStream<ClockSample>, after since: LocalInstant, for seconds: Double) async -> [ClockSample] {
        let gathered = Task {
            var fresh: [ClockSample] = []
            for await sample in stream where sample.t1 > since { fresh.append(sample) }
            return fresh
        }
        try? await Task.sleep(for: .seconds(seconds))
        gathered.cancel()
        return await gathered.value
    }

    @Test func withTCPStalledDatagramProbesStillFeedTheEstimator() async throws {
        // Long heartbeat timeouts: the peers do not read their TCP connections for a while on purpose.
        let server = try await DatagramTests.server(heartbeatTimeout: .seconds(30))
        let invite = try server.createSession(id: "clock")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: DatagramTests.options())
        var tcpOnly = DatagramTests.options()
        tcpOnly.clockProbesOverDatagrams = false
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: tcpOnly)
        #expect(await waitUntil(10) { ann.unreliablePath == .udp && bob.unreliablePath == .udp })
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongsReceived > 0 }, "no clock answers over UDP")
        #expect(bob.datagramStatus.clockPingsSent == 0)

        let annSamples = ann.clockSamples()
        let bobSamples = bob.clockSamples()
        await ann.setTCPReadingPaused(true)
        await bob.setTCPReadingPaused(true)
        let stalledAt = SystemMonotonicClock().now
        let pongsBefore = ann.datagramStatus.clockPongsReceived
        async let annFresh = Self.freshSamples(annSamples, after: stalledAt, for: 3.5)
        async let bobFresh = Self.freshSamples(bobSamples, after: stalledAt, for: 3.5)
        let (annGot, bobGot) = await (annFresh, bobFresh)
        // Over UDP the estimator keeps getting samples; over TCP alone nothing arrives while TCP is not read.
        #expect(annGot.count >= 2, "\(annGot.count) samples while TCP was stalled")
        #expect(ann.datagramStatus.clockPongsReceived - pongsBefore >= annGot.count)
        #expect(bobGot.isEmpty, "\(bobGot.count) TCP samples arrived through a stalled connection")
        #expect(ann.clockQuality() != nil)

        await ann.setTCPReadingPaused(false)
        await bob.setTCPReadingPaused(false)
        #expect(ann.closedReason == nil && bob.closedReason == nil)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }

    @Test("steady clock probes are spaced by their interval give or take a tenth, so peers that joined together drift apart")
    func steadyProbesAreJittered() async throws {
        let server = try await DatagramTests.server()
        let invite = try server.createSession(id: "jitter")
        var options = DatagramTests.options()
        options.clockSync.burstCount = 1
        options.clockSync.acquisitionCount = 0
        options.clockSync.steadyInterval = .milliseconds(500)
        options.clockSync.shortPathSteadyInterval = nil  // loopback would probe every 250 ms
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: options)
        let samples = ann.clockSamples()
        let gathered = await Self.freshSamples(samples, after: SystemMonotonicClock().now, for: 5.5)
        // A probe goes over both paths: two samples whose t1 differ by the moment between the two sends.
        var sent: [Int64] = []
        for t1 in gathered.map(\.t1.nanoseconds).sorted() where sent.last.map({ t1 - $0 > 20_000_000 }) ?? true { sent.append(t1) }
        let gaps = zip(sent.dropFirst(), sent).map { Double($0 - $1) / 1e9 }
        #expect(gaps.count >= 6, "\(gaps)")
        // Never sooner than 0.45 s (a timer does not fire early); later only by a loaded machine's delay.
        #expect(gaps.allSatisfy { $0 >= 0.449 && $0 < 0.9 }, "\(gaps)")
        // Uniform over ±50 ms: eight gaps all within 4 ms of each other would be the lockstep this prevents.
        #expect((gaps.max() ?? 0) - (gaps.min() ?? 0) > 0.004, "\(gaps)")
        await ann.close()
        await server.shutdown()
    }

    @Test func withUDPBlockedClockProbesGoOverTCP() async throws {
        let server = try await DatagramTests.server()
        server.setDropsIncomingDatagrams(true)
        let invite = try server.createSession(id: "blocked")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: DatagramTests.options())
        let samples = ann.clockSamples()
        let connectedAt = SystemMonotonicClock().now
        // Blocked from the start: no UDP path, and the samples come over TCP.
        let early = await Self.freshSamples(samples, after: connectedAt, for: 2)
        #expect(!early.isEmpty)
        #expect(ann.unreliablePath != .udp)
        #expect(ann.datagramStatus.clockPongsReceived == 0)

        // Unblocked: the probes move to UDP.
        server.setDropsIncomingDatagrams(false)
        #expect(await waitUntil(10) { ann.unreliablePath == .udp && ann.datagramStatus.clockPongsReceived > 0 })

        // Blocked after working: the probes fall back to TCP and the estimator still gets fresh samples.
        let later = ann.clockSamples()
        server.setDropsIncomingDatagrams(true)
        let blockedAt = SystemMonotonicClock().now
        let pongsBefore = ann.datagramStatus.clockPongsReceived
        let fresh = await Self.freshSamples(later, after: blockedAt, for: 5)
        #expect(fresh.count >= 2, "\(fresh.count) samples after UDP was blocked")
        #expect(ann.datagramStatus.clockPongsReceived <= pongsBefore + 1)
        await ann.close()
        await server.shutdown()
    }

    @Test func badClockDatagramsAreDroppedAndCountedAndChangeNothing() async throws {
        let server = try await DatagramTests.server()
        let invite = try server.createSession(id: "bad-clock")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: DatagramTests.options())
        #expect(await waitUntil(10) { ann.unreliablePath == .udp })
        let link = try #require(ann.shared.datagramLink)
        let raw = try await RawDatagramSocket.open()
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: server.port)
        let before = server.datagramStatistics!

        // Authentic but malformed: a ping body of the wrong length, and a pong, which a client never sends.
        var short = ByteBuffer()
        short.writeInteger(UInt32(1))
        try await raw.send(try #require(link.seal(.clockPing, body: short)), to: target)
        try await raw.send(try #require(link.seal(.clockPong, body: ByteBuffer(repeating: 0, count: 28))), to: target)
        // A genuine ping, sent twice: answered once, the copy is a replay.
        var ping = ByteBuffer()
        ping.writeInteger(UInt32(7))
        ping.writeInteger(Int64(42))
        let captured = try #require(link.seal(.clockPing, body: ping))
        try await raw.send(captured, to: target)
        try await raw.send(captured, to: target)
        #expect(await waitUntil(10) {
            let s = server.datagramStatistics!
            return s.malformed - before.malformed == 2 && s.replayed - before.replayed == 1
        })

        // Ann's own probes go on being answered, and her session is untouched.
        let pongs = ann.datagramStatus.clockPongsReceived
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongsReceived > pongs })
        #expect(ann.closedReason == nil)
        await raw.close()
        await ann.close()
        await server.shutdown()
    }
}
