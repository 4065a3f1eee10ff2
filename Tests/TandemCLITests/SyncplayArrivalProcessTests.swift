import Foundation
import Testing
import TandemCore
import TandemSyncplay
import TandemBench

/// `tandem join syncplay://…` arriving in a room where Debian's `syncplay` 1.6.9 (with mpv) already plays: the room is
/// not moved by the newcomer, and an entry the client lists as an absolute path plays from ann's own directory.
@Suite("Syncplay rooms: a Tandem peer arriving", .serialized)
struct SyncplayArrivalProcessTests {
    /// A connection that only watches the room: no file (so the server never takes the room's position from it) and no
    /// position of its own (its answers repeat the room's).
    final class RoomWatcher: Sendable {
        let connection: SyncplayConnection
        private let heard: Shared<[(at: Date, event: SyncplayClientState.Event)]>
        private let listener: Task<Void, Never>

        init(port: Int, room: String) async throws {
            connection = try await SyncplayConnection.connect(
                host: "127.0.0.1", port: port, configuration: .init(username: "watcher", room: room)) { nil }
            let heard = Shared<[(at: Date, event: SyncplayClientState.Event)]>([])
            self.heard = heard
            let events = connection.events
            listener = Task { for await event in events { heard.withLock { $0.append((Date(), event)) } } }
        }

        /// The room's states heard since `date`: (paused, position).
        func states(since date: Date) -> [(paused: Bool, position: Double)] {
            heard.withLock { $0 }.filter { $0.at >= date }.compactMap { entry in
                if case .roomState(let paused, let position, _, _) = entry.event { (paused, position) } else { nil }
            }
        }

        var events: [SyncplayClientState.Event] { heard.withLock { $0.map(\.event) } }

        func waitFor(_ seconds: Double, _ matches: (SyncplayClientState.Event) -> Bool) async -> Bool {
            for _ in 0..<Int(seconds * 20) {
                if events.contains(where: matches) { return true }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return false
        }

        func close() async {
            await connection.close()
            listener.cancel()
        }
    }

    static func pausedNear(_ position: Double, _ state: (paused: Bool, position: Double)) -> Bool {
        state.paused && abs(state.position - position) < 1
    }

    @Test("a syncplay client paused at 0:22 in room -paused, its file's absolute path in the playlist: ann loads that file from her own directory by its name, arrives at 0:22, and the room stays at 0:22")
    func arrivingInAPausedRoom() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        // The room's name starts with `-`, as a session id does now and then: the client is started with --room=NAME.
        let room = "-paused"
        let watcher = try await RoomWatcher(port: server.port, room: room)
        defer { Task { await watcher.close() } }
        let sample = TandemBinary.sample("countdown.webm")
        let carol = try SyncplayClientProcess(port: server.port, room: room, password: "", name: "carol", file: sample)
        defer { carol.stop() }
        #expect(await carol.waitFor(30) { $0.contains("Successfully connected") }, "\(carol.text.suffix(800))")
        // Syncplay 1.6.9 lists the file given on its command line as it was given, an absolute path — when its player
        // is ready after it joined the room; when mpv was quicker, it only opens it, and its `qa` command lists it as
        // typed (then it may be listed twice: the client adds its own later after all).
        func listed(_ event: SyncplayClientState.Event) -> Bool {
            if case .playlist(let files, _) = event { !files.isEmpty && files.allSatisfy { $0 == sample } } else { false }
        }
        if await !watcher.waitFor(15, listed) { carol.send("qa \(sample)") }
        #expect(await watcher.waitFor(20, listed), "\(watcher.events.suffix(6)) — carol: \(carol.text.suffix(600))")
        try await Task.sleep(for: .seconds(1))
        let playlist: [String] = watcher.events.compactMap { event -> [String]? in
            if case .playlist(let files, _) = event { files } else { nil }
        }.last ?? []
        // carol seeks to 0:22 and stays paused.
        try await Task.sleep(for: .seconds(1))
        carol.send("s 0:22")
        #expect(await watcher.waitFor(20) { if case .roomState(true, let position, _, _) = $0 { abs(position - 22) < 1 } else { false } },
                "\(watcher.events.suffix(6)) — carol: \(carol.text.suffix(600))")

        // ann's copy is elsewhere, under the same name: the room's path names a file she does not have there.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-arrival-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("countdown.webm").path
        try FileManager.default.copyItem(atPath: sample, toPath: copy)
        let joinedAt = Date()
        let ann = try TandemProcess(["join", "syncplay://127.0.0.1:\(server.port)/\(room)", copy, "--headless", "--json",
                                     "--name", "ann"])
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")

        // The room's playlist is her queue, its entry the path; her player loads her copy for it and is moved to 0:22.
        #expect(await QueueEditingProcessTests.sees(ann, playlist, current: 0), "\(ann.events("queue").suffix(2))")
        #expect(await ann.wait(for: 30) { process in
            guard let settled = SyncplayJoinProcessTests.settled(process), settled["state"]?.string == "paused" else { return false }
            return abs((settled["anchorItemTime"]?.number ?? 0) - 22) < 1
        }, "\(ann.events("timeline").suffix(3)) — \(ann.events("warning"))")
        #expect(await ann.wait(for: 20) { process in
            process.events("position").last.map { abs(($0["position"]?.number ?? -100) - 22) < 1 } ?? false
        }, "her player is not at 0:22: \(ann.events("position").suffix(2)) — \(ann.events("warning"))")
        let problems = ann.events("warning").compactMap { $0["text"]?.string }.filter { $0.contains("not played") || $0.contains("is not in") }
        #expect(problems.isEmpty, "\(problems)")
        // The room is told her file by its name, with its duration.
        #expect(await watcher.waitFor(10) { event in
            if case .userFile("ann", let file) = event { file.name == "countdown.webm" && file.duration > 30 } else { false }
        }, "\(watcher.events.filter { if case .userFile = $0 { true } else { false } })")
        #expect(!watcher.events.contains { event in
            if case .userFile("ann", let file) = event { file.name.contains("/") || file.duration == 0 } else { false }
        }, "\(watcher.events.filter { if case .userFile = $0 { true } else { false } })")

        // A few heartbeats after she arrived: nobody was moved from 0:22 at any moment since she joined.
        try await Task.sleep(for: .seconds(3))
        let states = watcher.states(since: joinedAt)
        #expect(states.count >= 4, "\(states)")
        #expect(states.allSatisfy { Self.pausedNear(22, $0) }, "the room moved: \(states)")
        #expect(!carol.text.contains("Rewinded") && !carol.text.contains("Fast-forwarded"), "\(carol.text.suffix(800))")

        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
    }
}
