import Foundation
import Tandem
import TandemCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `tandem serve --state-dir`: a real relay process killed with SIGKILL mid-play and started again on the same port;
/// its peers (library clients over real sockets on 127.0.0.1) reconnect as themselves and the session goes on.
@Suite("tandem serve --state-dir: a relay restart loses no session", .serialized)
struct ServeStateProcessTests {
    /// A fresh private directory for one test (removed at the end).
    static func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-state-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        return path
    }

    /// Starts `tandem serve` on 127.0.0.1 (`port` 0: a free one) and returns it with its bound port.
    static func serve(port: Int = 0, _ extra: [String]) async throws -> (TandemProcess, Int) {
        let server = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "\(port)"] + extra)
        let said = await server.wait(for: 20) { $0.stdout.contains("listening on") || $0.exitCode != nil }
        #expect(said, "serve did not start: \(server.stdout) \(server.stderr)")
        let line = try #require(server.stdout.split(separator: "\n").first { $0.contains("listening on 127.0.0.1:") },
                                "stdout: \(server.stdout) stderr: \(server.stderr)")
        let bound = try #require(Int(line.split(separator: ":").last!.prefix { $0.isNumber }))
        return (server, bound)
    }

    static func options(host: Bool = false) -> TandemClient.Options {
        var options = TandemClient.Options()
        options.reconnectGracePeriod = .seconds(20)
        options.reconnectFirstDelay = .milliseconds(100)
        options.reconnectMaxDelay = .milliseconds(500)
        options.createSession = host
        options.asHost = host
        return options
    }

    static let media = MediaInfo(duration: .seconds(3600), isSeekable: true, hasVideo: true, hasAudio: true)

    @Test("SIGKILL mid-play, restarted on the same port within 5 s: three peers reconnect as themselves, same activity, queue and timeline, the attachment is kept, every reliable message across the kill arrives exactly once and in order")
    func killedRelayComesBack() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        var (server, port) = try await Self.serve([ "--state-dir", state])
        defer { server.stop() }
        let invite = Invite.random(host: "127.0.0.1", port: port)
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: Self.options(host: true))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: Self.options())
        let carol = try await TandemClient.connect(invite: invite, name: "carol", options: Self.options())
        let peers = [ann, bob, carol]
        let ids = peers.map(\.localParticipantID)
        let watchers = peers.map { PeerWatcher($0) }

        // Play: an activity (its queue entry), everyone ready, the host plays.
        let activity = ActivityEnvelope(activityIdentifier: "Movie", metadata: GroupActivityMetadata(title: "movie"),
                                        payload: Data("{}".utf8), itemID: "movie.mkv")
        try await ann.send(.setActivity(activity))
        // Each says it is ready once it has the activity, as a player would: a readiness that reached the relay
        // before the activity (on another connection) is for the item before it, and the group would wait for
        // that peer to load (it did once, with the suite's other half running beside it).
        #expect(await waitUntil(10) { watchers.allSatisfy { $0.lastActivity?.itemID == "movie.mkv" } })
        for peer in peers { try await peer.send(.readiness(.ready(Self.media))) }
        try await ann.send(.timelineRequest(TimelineRequest(requestID: 1, command: .play, basedOnGeneration: 0,
                                                            requestedAtSessionTime: .zero)))
        #expect(await waitUntil(10) { watchers.allSatisfy { $0.lastTimeline?.status == .playing } },
                "not playing: \(watchers.map { String(describing: $0.lastTimeline) })")

        // An attachment, complete on the relay before the kill.
        var generator = SystemRandomNumberGenerator()
        let poster = Data((0..<300_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let info = try await ann.uploadAttachment(poster, name: "poster.bin", id: "poster")
        #expect(await waitUntil(10) { watchers[1].committed.contains("poster") },
                "bob never saw the commit")

        let before = (activity: watchers[1].lastActivity, queue: watchers[1].lastQueue, timeline: watchers[1].lastTimeline)
        #expect(before.activity?.itemID == "movie.mkv")
        #expect(before.queue?.entries.count == 1)

        // Reliable messages from ann (sealed, as an app sends them), one every 10 ms, across the kill.
        let total = 300
        let sender = Task {
            for number in 1...total {
                try await ann.sendAppMessage(Data("\(number)".utf8))
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        #expect(await waitUntil(10) { watchers[1].opened.count >= 80 })
        let atKill = watchers[1].opened.count
        #expect(atKill < total, "the stream ended before the kill")
        server.signal(SIGKILL)
        _ = await server.exitCode(within: 5)
        let restartedAt = ContinuousClock.now
        (server, _) = try await Self.serve(port: port, ["--state-dir", state])
        #expect(ContinuousClock.now - restartedAt < .seconds(5), "the relay took too long to start again")

        #expect(await waitUntil(20) { watchers.allSatisfy { $0.reconnected > 0 } },
                "not everyone reconnected: \(watchers.map(\.reconnected)); serve: \(server.stderr.suffix(2000))")
        let allBack = ContinuousClock.now - restartedAt
        print("serve --state-dir: all 3 peers reconnected \(allBack) after the restart began")
        #expect(peers.map(\.localParticipantID) == ids)
        #expect(peers.allSatisfy { !$0.isReconnecting })
        for peer in peers {
            #expect(peer.welcome.activity == before.activity)
            #expect(peer.welcome.queue == before.queue)
            #expect(peer.welcome.timeline == before.timeline, "timeline after the restart: \(String(describing: peer.welcome.timeline)), before: \(String(describing: before.timeline))")
        }
        #expect(await waitUntil(5) { watchers.allSatisfy { $0.lastParticipants.sorted() == ids.sorted() } },
                "participants: \(watchers.map(\.lastParticipants))")
        #expect(ann.welcome.participants.first { $0.participant.id == ids[0] }?.isHost == true)

        try await sender.value
        for (watcher, peer) in zip(watchers, peers).dropFirst() {
            #expect(await waitUntil(10) { watcher.opened.last == total }, "last: \(String(describing: watcher.opened.last))")
            let received = watcher.opened
            let lost = Set(1...total).subtracting(received).sorted()
            print("serve --state-dir: killed after \(atKill) messages; \(received.count) of \(total) reliable messages received; lost: \(lost); dropped: \(peer.appDataDrops)")
            // What was on the wire to or in the dead process at the kill was sent again by ann (her window of
            // reliable messages), at the request each receiver made as it came back: none lost, none twice, in order.
            #expect(received == Array(1...total), "lost: \(lost), received: \(received)")
            #expect(!peer.appDataDrops.anyAltered, "\(peer.appDataDrops)")
        }

        // A late joiner gets the attachment the relay kept across the kill.
        let dave = try await TandemClient.connect(invite: invite, name: "dave", options: Self.options())
        let daveWatcher = PeerWatcher(dave)
        #expect(dave.welcome.attachments.map(\.id) == ["poster"])
        // As the relay holds it (sealed end to end): the same bytes bob received live before the kill.
        #expect(await waitUntil(10) { daveWatcher.attachment("poster")?.count == Int(info.size) },
                "\(String(describing: daveWatcher.attachment("poster")?.count)) of \(info.size)")
        #expect(daveWatcher.attachment("poster") == watchers[1].attachment("poster"))
        #expect(dave.welcome.attachments.first?.sha256 == info.sha256)

        for peer in peers + [dave] { await peer.close() }
        server.signal(SIGTERM)
        _ = await server.exitCode(within: 10)
    }

    @Test("tandem host --server and tandem join, playing a file on a relay killed with SIGKILL: both reconnect as themselves, keep playing the same timeline and follow the host's next pause")
    func realPeersAcrossAKill() async throws {
        typealias P = SessionProcessTests
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        var (server, port) = try await Self.serve(["--state-dir", state])
        defer { server.stop() }
        let host = try P.host(["--server", "tandem://127.0.0.1:\(port)"])
        defer { host.stop() }
        let invite = try await P.invite(of: host)
        let bob = try P.join(invite, name: "bob")
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { P.seesReady($0, ["bob"]) }, "bob never ready; host stderr: \(host.stderr.suffix(1000))")
        let bobID = try #require(ReconnectProcessTests.participantID(bob))
        host.send("play")
        #expect(await bob.wait(for: 15) { P.lastTimeline($0)?["state"]?.string == "playing" })
        let playing = try #require(P.lastTimeline(bob))

        server.signal(SIGKILL)
        _ = await server.exitCode(within: 5)
        let restartedAt = ContinuousClock.now
        (server, _) = try await Self.serve(port: port, ["--state-dir", state])
        for peer in [host, bob] {
            let back = await peer.event("reconnected", within: 20)
            #expect(back != nil, "no reconnected event: \(peer.stdout.suffix(1500)) \(peer.stderr.suffix(500))")
        }
        print("serve --state-dir: host and joiner processes reconnected \(ContinuousClock.now - restartedAt) after the restart began")
        #expect(bob.events("reconnected").first?["participant"]?.string == bobID)
        // The same timeline: no new generation came from the restart itself.
        #expect(P.lastTimeline(bob)?["generation"] == playing["generation"], "\(String(describing: P.lastTimeline(bob))) vs \(playing)")
        #expect(P.lastTimeline(bob)?["state"]?.string == "playing")

        host.send("pause")
        #expect(await host.wait(for: 10) { P.lastTimeline($0)?["state"]?.string == "paused" })
        let paused = P.generations(host).last
        #expect(await ReconnectProcessTests.follows(bob, generation: paused, within: 10) { $0["state"]?.string == "paused" },
                "bob did not follow the pause: \(String(describing: P.lastTimeline(bob)))")
        #expect(host.exitCode == nil && bob.exitCode == nil)
        bob.send("leave")
        host.send("leave")
        _ = await bob.exitCode(within: 10)
        _ = await host.exitCode(within: 10)
        server.signal(SIGTERM)
        _ = await server.exitCode(within: 10)
    }

    @Test("with --state-dir SIGTERM ends no session (an upgrade): the relay exits 0, and its peers reconnect as themselves to the next start")
    func gracefulStopKeepsSessions() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        var (server, port) = try await Self.serve(["--state-dir", state])
        defer { server.stop() }
        let invite = Invite.random(host: "127.0.0.1", port: port)
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: Self.options(host: true))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: Self.options())
        let watchers = [ann, bob].map { PeerWatcher($0) }
        server.signal(SIGTERM)
        #expect(await server.exitCode(within: 10) == 0, "stderr: \(server.stderr.suffix(1500))")
        #expect(ann.closedReason == nil && bob.closedReason == nil, "\(String(describing: bob.closedReason))")
        (server, _) = try await Self.serve(port: port, ["--state-dir", state])
        #expect(await waitUntil(15) { watchers.allSatisfy { $0.reconnected == 1 } }, "\(watchers.map(\.reconnected))")
        #expect(ann.localParticipantID == ParticipantID("p1") && bob.localParticipantID == ParticipantID("p2"))
        #expect(ann.welcome.participants.first { $0.participant.id == ann.localParticipantID }?.isHost == true)

        // Everyone leaves: the session ends and the relay forgets it (a third start has none).
        await bob.close()
        await ann.close()
        try await Task.sleep(for: .milliseconds(300))
        server.signal(SIGTERM)
        #expect(await server.exitCode(within: 10) == 0)
        (server, _) = try await Self.serve(port: port, ["--state-dir", state])
        #expect(!server.stderr.contains("sessions restored"), "\(server.stderr)")
        let late = try? await TandemClient.connect(invite: invite, name: "late", options: TandemClient.Options())
        #expect(late == nil, "the ended session is gone")
        server.signal(SIGTERM)
        _ = await server.exitCode(within: 10)
    }

    @Test("without --state-dir a restarted relay knows no session: its peers give up, told the server no longer has it")
    func withoutStateSessionsAreLost() async throws {
        var (server, port) = try await Self.serve([])
        defer { server.stop() }
        let invite = Invite.random(host: "127.0.0.1", port: port)
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: Self.options(host: true))
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: Self.options())
        server.signal(SIGKILL)
        _ = await server.exitCode(within: 5)
        (server, _) = try await Self.serve(port: port, [])
        #expect(await waitUntil(15) { ann.closedReason != nil && bob.closedReason != nil },
                "still reconnecting: \(ann.isReconnecting) \(bob.isReconnecting)")
        // The server answers an unknown session as a wrong secret (names cannot be probed): final, no retry.
        #expect(bob.closedReason?.code == .authenticationFailed, "\(String(describing: bob.closedReason))")
        #expect(ann.closedReason?.code == .authenticationFailed, "\(String(describing: ann.closedReason))")
        print("serve without --state-dir: bob after the restart: \(String(describing: bob.closedReason))")
        server.signal(SIGTERM)
        _ = await server.exitCode(within: 10)
    }

    @Test("a corrupt state file: serve exits with a clear error naming the file and what to do, no crash; a state directory others may write to is refused")
    func corruptStateIsRefusedInWords() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let file = state + "/relay.sqlite"
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: file))
        let corrupt = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0", "--state-dir", state])
        let code = await corrupt.exitCode(within: 20)
        #expect(code == 1, "exit \(String(describing: code)); stderr: \(corrupt.stderr)")
        #expect(corrupt.stderr.contains("cannot read the relay's state in \(file)"), "\(corrupt.stderr)")
        #expect(corrupt.stderr.contains("mv \(file) \(file).broken"), "\(corrupt.stderr)")
        #expect(!corrupt.stdout.contains("listening on"))

        // Moved away as told: the relay starts with no sessions.
        try FileManager.default.moveItem(atPath: file, toPath: file + ".broken")
        let (fresh, _) = try await Self.serve(["--state-dir", state])
        fresh.signal(SIGTERM)
        #expect(await fresh.exitCode(within: 10) == 0)
        var info = stat()
        #expect(lstat(file, &info) == 0 && info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")

        let open = directory + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o777])
        chmod(open, 0o777)
        let refused = try TandemProcess(["serve", "--bind", "127.0.0.1", "--port", "0", "--state-dir", open])
        #expect(await refused.exitCode(within: 20) == 1)
        #expect(refused.stderr.contains("chmod 700 \(open)"), "\(refused.stderr)")
    }
}

/// What one peer has seen: app messages (their numbers), the last timeline, activity and queue, journal traffic.
final class PeerWatcher: Sendable {
    private struct Seen {
        var appMessages: [Int] = []
        /// The app messages that opened and came in order (`appMessages()`), as numbers.
        var opened: [Int] = []
        var timeline: Timeline?
        var activity: ActivityEnvelope?
        var queue: SessionQueue?
        var committed: Set<String> = []
        var chunks: [String: Data] = [:]
        var reconnected = 0
        var participants: [ParticipantID] = []
    }
    private let seen = Locked(Seen())
    private let tasks: [Task<Void, Never>]

    init(_ connection: TandemClientConnection) {
        let seen = self.seen
        let welcome = connection.welcome
        seen.withLock {
            $0.timeline = welcome.timeline
            $0.activity = welcome.activity
            $0.queue = welcome.queue
        }
        let messages = connection.serverMessages()
        let events = connection.connectionEvents()
        let opened = connection.appMessages()
        tasks = [Task {
            for await message in opened {
                if let number = Int(String(decoding: message.payload, as: UTF8.self)) { seen.withLock { $0.opened.append(number) } }
            }
        }, Task {
            for await message in messages {
                seen.withLock { seen in
                    switch message {
                    case .appMessage(let app): if let number = Int(String(decoding: app.payload, as: UTF8.self)) { seen.appMessages.append(number) }
                    case .timeline(let timeline): seen.timeline = timeline
                    case .activity(let activity): seen.activity = activity
                    case .queue(let queue): seen.queue = queue
                    case .participants(let list): seen.participants = list.map(\.participant.id)
                    case .welcome(let snapshot):
                        seen.timeline = snapshot.timeline ?? seen.timeline
                        seen.activity = snapshot.activity
                        seen.queue = snapshot.queue ?? seen.queue
                    case .journal(.commit(let id)): seen.committed.insert(id)
                    case .journal(.chunk(let id, let offset, let bytes)):
                        if Int64(seen.chunks[id, default: Data()].count) == offset { seen.chunks[id, default: Data()].append(bytes) }
                    default: break
                    }
                }
            }
        }, Task {
            for await event in events {
                if case .reconnected = event { seen.withLock { $0.reconnected += 1 } }
            }
        }]
    }

    deinit { for task in tasks { task.cancel() } }

    var appMessages: [Int] { seen.withLock { $0.appMessages } }
    var opened: [Int] { seen.withLock { $0.opened } }
    var lastTimeline: Timeline? { seen.withLock { $0.timeline } }
    var lastActivity: ActivityEnvelope? { seen.withLock { $0.activity } }
    var lastQueue: SessionQueue? { seen.withLock { $0.queue } }
    var committed: Set<String> { seen.withLock { $0.committed } }
    var reconnected: Int { seen.withLock { $0.reconnected } }
    var lastParticipants: [ParticipantID] { seen.withLock { $0.participants } }
    func attachment(_ id: String) -> Data? { seen.withLock { $0.chunks[id] } }
}

/// Polls `condition` every 20 ms for up to `timeout` seconds.
func waitUntil(_ timeout: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return condition()
}
