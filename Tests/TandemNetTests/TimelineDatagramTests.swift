import Foundation
import NIOCore
import Synchronization
import TandemCore
import TandemTesting
import Testing
@_spi(Testing) @testable import TandemNet

/// A TCP path that holds every frame going to the server for `hold` while `holding` is set (as a retransmission
/// would), and delays nothing else.
final class HeldUpstream: NetworkImpairment {
    let holding = Atomic<Bool>(false)
    let hold: Int64
    let retransmissionTimeout: Int64 = 0
    init(hold: TimeSpan) { self.hold = hold.nanoseconds }
    func nextUpDelay() -> Int64? { holding.load(ordering: .relaxed) ? hold : 0 }
    func nextDownDelay() -> Int64? { 0 }
}

/// Copies of timelines as datagrams beside their TCP frames, with real sockets on 127.0.0.1.
@Suite(.serialized) struct TimelineDatagramTests {
    static let envelope = ActivityEnvelope(activityIdentifier: "WatchTogether",
                                           metadata: GroupActivityMetadata(title: "Film", type: .watchTogether),
                                           payload: Data(), itemID: "film")

    /// Every timeline `stream` brings, until `done` holds for the list or `timeout` passes.
    static func timelines(_ stream: AsyncStream<ServerMessage>, within timeout: Double,
                          until done: @escaping @Sendable ([Timeline]) -> Bool) async -> [Timeline] {
        await withTaskGroup(of: [Timeline]?.self) { group in
            let seen = Locked<[Timeline]>([])
            group.addTask {
                for await message in stream {
                    guard case .timeline(let timeline) = message else { continue }
                    let all = seen.withLock { $0.append(timeline); return $0 }
                    if done(all) { return all }
                }
                return seen.value
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? seen.value
        }
    }

    static func seek(_ connection: TandemClientConnection, to seconds: Double, id: UInt64) async throws {
        try await connection.send(.timelineRequest(TimelineRequest(
            requestID: id, command: .seek(itemTime: .seconds(seconds), play: false), basedOnGeneration: 0,
            requestedAtSessionTime: .zero)))
    }

    /// A host and a guest on one session with an activity, both with a working UDP path.
    static func session(on server: SessionServer, hostOptions: TandemClient.Options = DatagramTests.options(),
                        guestOptions: TandemClient.Options = DatagramTests.options())
        async throws -> (host: TandemClientConnection, guest: TandemClientConnection) {
        let invite = try server.createSession(id: "copies")
        var hostOptions = hostOptions
        hostOptions.asHost = true
        let host = try await TandemClient.connect(invite: invite, name: "host", options: hostOptions)
        let guest = try await TandemClient.connect(invite: invite, name: "guest", options: guestOptions)
        let first = guest.serverMessages()
        try await host.send(.setActivity(envelope))
        // The guest has the activity's first timeline (over TCP) before anything else happens.
        #expect(await timelines(first, within: 10) { $0.contains { $0.itemID == "film" } }.isEmpty == false)
        #expect(await waitUntil(10) { host.unreliablePath == .udp && guest.unreliablePath == .udp })
        return (host, guest)
    }

    @Test func aTimelineReachesAMemberAsADatagramWhileItsTCPStreamIsHeldAndIsActedOnOnce() async throws {
        // Long heartbeat timeouts: the guest does not read its TCP connection for a while on purpose.
        let server = try await DatagramTests.server(heartbeatTimeout: .seconds(30))
        let (host, guest) = try await Self.session(on: server)
        // One subscription per phase: a stream whose reader gave up waiting ends.
        let inbox = guest.serverMessages()
        let all = guest.serverMessages()
        await guest.setTCPReadingPaused(true)
        try await Self.seek(host, to: 5, id: 1)
        let held = await Self.timelines(inbox, within: 5) { $0.contains { $0.anchorItemTime == .seconds(5) } }
        // It came while nothing was read from TCP: by datagram, and it was acted on.
        #expect(held.contains { $0.anchorItemTime == .seconds(5) })
        #expect(guest.datagramStatus.timelinesReceived >= 1)
        #expect(guest.datagramStatus.timelinesTaken == 1)

        // The TCP copy arrives once reading goes on, and is not passed on a second time.
        await guest.setTCPReadingPaused(false)
        try await Self.seek(host, to: 7, id: 2)
        let after = await Self.timelines(all, within: 10) { $0.contains { $0.anchorItemTime == .seconds(7) } }
        let generations = after.map(\.generation)
        #expect(after.contains { $0.anchorItemTime == .seconds(5) } && after.contains { $0.anchorItemTime == .seconds(7) })
        #expect(generations == generations.sorted() && Set(generations).count == generations.count,
                "each generation once, in order: \(generations)")
        #expect((server.datagramStatistics?.timelineCopies ?? 0) >= 4)  // two seeks, two members
        #expect(server.datagramStatistics?.rejected == 0)
        #expect(host.closedReason == nil && guest.closedReason == nil)
        await host.close()
        await guest.close()
        await server.shutdown()
    }

    @Test func aMemberThatDoesNotAskForCopiesGetsItsTimelinesOverTCPOnly() async throws {
        let server = try await DatagramTests.server()
        var options = DatagramTests.options()
        options.timelinesOverDatagrams = false
        let (host, guest) = try await Self.session(on: server, guestOptions: options)
        let inbox = guest.serverMessages()
        let copiesBefore = server.datagramStatistics?.timelineCopies ?? 0
        try await Self.seek(host, to: 3, id: 1)
        let got = await Self.timelines(inbox, within: 10) { $0.contains { $0.anchorItemTime == .seconds(3) } }
        #expect(got.filter { $0.anchorItemTime == .seconds(3) }.count == 1)
        #expect(guest.datagramStatus.timelinesReceived == 0)
        // The host asked for its copy; the guest did not.
        #expect(await waitUntil(5) { host.datagramStatus.timelinesReceived >= 1 })
        #expect((server.datagramStatistics?.timelineCopies ?? 0) - copiesBefore == 1)
        await host.close()
        await guest.close()
        await server.shutdown()
    }

    @Test func aRequestReachesTheServerAsADatagramWhileItsTCPFrameIsHeldAndIsActedOnOnce() async throws {
        let server = try await DatagramTests.server(heartbeatTimeout: .seconds(30))
        let upstream = HeldUpstream(hold: .seconds(3))
        var hostOptions = DatagramTests.options()
        hostOptions.impair(with: upstream)
        hostOptions.datagramDelays = nil  // datagrams go straight
        let (host, guest) = try await Self.session(on: server, hostOptions: hostOptions)
        let offered = host.shared.serverTakesRequestCopies.load(ordering: .relaxed)
        #expect(offered)
        let inbox = guest.serverMessages()
        upstream.holding.store(true, ordering: .relaxed)
        let clock = SystemMonotonicClock()
        let asked = clock.now
        try await Self.seek(host, to: 5, id: 1)
        let first = await Self.timelines(inbox, within: 10) { $0.contains { $0.anchorItemTime == .seconds(5) } }
        let took = clock.now - asked
        upstream.holding.store(false, ordering: .relaxed)
        // The datagram copy got there while the TCP frame was held for 3 s.
        #expect(first.contains { $0.anchorItemTime == .seconds(5) })
        #expect(took < .seconds(2), "took \(took.seconds) s")
        #expect(host.datagramStatus.requestsSent == 1)
        #expect(server.datagramStatistics?.requestCopies == 1)

        // Once the held TCP frame has arrived too, the seek has still been made once: one generation at 0:05.
        let all = guest.serverMessages()
        try await Task.sleep(nanoseconds: 3_500_000_000)
        try await Self.seek(host, to: 8, id: 2)
        let later = await Self.timelines(all, within: 10) { $0.contains { $0.anchorItemTime == .seconds(8) } }
        #expect(later.contains { $0.anchorItemTime == .seconds(8) })
        #expect(!later.contains { $0.anchorItemTime == .seconds(5) }, "the seek to 0:05 was made again: \(later)")
        #expect(host.closedReason == nil && guest.closedReason == nil)
        await host.close()
        await guest.close()
        await server.shutdown()
    }

    @Test func aTimelineDatagramFromAClientIsDroppedAndChangesNothing() async throws {
        let server = try await DatagramTests.server()
        let (host, guest) = try await Self.session(on: server)
        let link = try #require(guest.shared.datagramLink)
        let before = server.datagramStatistics!.malformed
        var body = ByteBuffer()
        body.writeString(#"{"timeline":{}}"#)
        // Sealed with the guest's own key: authentic, but a client never sends this type.
        let datagram = try #require(link.seal(.timeline, body: body))
        let raw = try await RawDatagramSocket.open()
        try await raw.send(datagram, to: try SocketAddress(ipAddress: "127.0.0.1", port: server.port))
        #expect(await waitUntil(5) { server.datagramStatistics!.malformed == before + 1 })
        // A request copy must hold a timeline request with its copy number.
        let withoutCopy = TimelineRequest(requestID: 1, command: .play, basedOnGeneration: 0, requestedAtSessionTime: .zero)
        for message in [ClientMessage.leave, .timelineRequest(withoutCopy)] {
            let body = try SessionCodec.encode(message, allocator: ByteBufferAllocator()).body
            try await raw.send(try #require(link.seal(.timelineRequest, body: body)),
                               to: try SocketAddress(ipAddress: "127.0.0.1", port: server.port))
        }
        #expect(await waitUntil(5) { server.datagramStatistics!.malformed == before + 3 })
        #expect(server.datagramStatistics!.requestCopies == 0)
        #expect(host.closedReason == nil && guest.closedReason == nil)
        await host.close()
        await guest.close()
        await server.shutdown()
    }
}
