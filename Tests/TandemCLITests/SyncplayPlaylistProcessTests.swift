import Foundation
import Testing
import TandemSyncplay
import TandemBench

/// A Syncplay room's shared playlist and `tandem join syncplay://…`'s queue, in a real syncplay-server room: a
/// Syncplay client speaking the protocol (bob) and a tandem process (ann) playing the samples.
@Suite("Syncplay rooms: the shared playlist", .serialized)
struct SyncplayPlaylistProcessTests {
    static func playlist(_ event: SyncplayClientState.Event, _ files: [String], by user: String) -> Bool {
        if case .playlist(files, user) = event { true } else { false }
    }

    static func index(_ event: SyncplayClientState.Event, _ index: Int, by user: String) -> Bool {
        if case .playlistIndex(index, user) = event { true } else { false }
    }

    @Test("an empty room gets ann's file; bob's playlist becomes ann's queue and his index switches her player (a missing entry is said so); ann's queue changes reach bob")
    func playlistBothWays() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let bob = try await SyncplayTestPeer("bob", port: server.port, room: "films")
        defer { Task { await bob.close() } }
        #expect(await bob.waitFor { if case .welcomed = $0 { true } else { false } })
        let ann = try SyncplayJoinProcessTests.join(server.port, room: "films", name: "ann")
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")

        // The room had no playlist: ann's file becomes it, as a Syncplay client's file does.
        #expect(await bob.waitFor(20) { Self.playlist($0, ["countdown.webm"], by: "ann") }, "\(bob.events.suffix(6))")
        #expect(await bob.waitFor { Self.index($0, 0, by: "ann") }, "\(bob.events.suffix(6))")

        // bob shares a playlist of three, one of which ann does not have: her queue lists them, the missing one said so.
        let files = ["countdown.webm", "short.webm", "nothere.webm"]
        bob.connection.set(.playlistChange(user: nil, files: files))
        #expect(await QueueEditingProcessTests.sees(ann, files, current: 0), "\(ann.events("queue").suffix(2))")
        let titles = ann.events("queue").last?["items"]?.array?.compactMap { $0["title"]?.string } ?? []
        #expect(titles.last == "nothere.webm (missing here)", "\(titles)")
        #expect(await ann.event("notice", within: 10) { notice in
            let text = notice["text"]?.string ?? ""
            return text.contains("nothere.webm") && text.contains(TandemBinary.samples.path)
        } != nil, "\(ann.events("notice").suffix(3))")

        // bob selects short.webm: ann's player loads it (its own duration says so: 25 s, not countdown's 40 s).
        bob.connection.set(.playlistIndex(user: nil, index: 1))
        #expect(await ann.event("item", within: 20) { $0["index"]?.number == 2 && $0["title"]?.string == "short.webm" } != nil,
                "\(ann.events("item"))")
        #expect(await ann.wait(for: 20) { Self.settledWithoutWaiting($0) }, "\(ann.events("timeline").suffix(2))")
        // The player's own duration (not the session's) refuses the seek once it has loaded the item.
        var refusedByPlayer = false
        for _ in 0..<20 where !refusedByPlayer {
            ann.send("seek 30")
            refusedByPlayer = await ann.event("warning", within: 1) { $0["text"]?.string == "cannot seek to 30.0 s: the item lasts 25.0 s" } != nil
        }
        #expect(refusedByPlayer,
                "\(ann.events("warning"))")
        // The room heard nothing back from ann for bob's own changes.
        #expect(!bob.events.contains { Self.playlist($0, files, by: "ann") || Self.index($0, 1, by: "ann") })

        // bob selects the missing entry: ann is told what to do, and nothing else plays in its place.
        bob.connection.set(.playlistIndex(user: nil, index: 2))
        #expect(await ann.event("warning", within: 20) { warning in
            let text = warning["text"]?.string ?? ""
            return text.contains("nothere.webm is not in") && text.contains("put a copy")
        } != nil, "\(ann.events("warning"))")

        // ann's own queue changes reach the room: she goes back to item 1, then removes the missing entry.
        var before = bob.events.count
        ann.send("jump 1")
        #expect(await Self.heard(bob, after: before) { Self.index($0, 0, by: "ann") }, "\(bob.events.suffix(6))")
        #expect(await QueueEditingProcessTests.sees(ann, files, current: 0))
        before = bob.events.count
        ann.send("queue remove 3")
        #expect(await Self.heard(bob, after: before) { Self.playlist($0, ["countdown.webm", "short.webm"], by: "ann") },
                "\(bob.events.suffix(6))")
        // She adds a file and moves it first: the room gets each playlist, with file names only.
        before = bob.events.count
        ann.send("queue add \(TandemBinary.sample("countdown.opus"))")
        #expect(await Self.heard(bob, after: before) { Self.playlist($0, ["countdown.webm", "short.webm", "countdown.opus"], by: "ann") },
                "\(bob.events.suffix(6))")
        before = bob.events.count
        ann.send("queue move 3 1")
        #expect(await Self.heard(bob, after: before) { Self.playlist($0, ["countdown.opus", "countdown.webm", "short.webm"], by: "ann") },
                "\(bob.events.suffix(6))")
        #expect(await Self.heard(bob, after: before) { Self.index($0, 1, by: "ann") }, "\(bob.events.suffix(6))")
        // …and the room's echo of them does not come back as another change.
        try await Task.sleep(for: .seconds(1))
        #expect(await QueueEditingProcessTests.sees(ann, ["countdown.opus", "countdown.webm", "short.webm"], current: 1))
        #expect(ann.events("item").count(where: { $0["index"]?.number == 1 }) == 1, "\(ann.events("item"))")

        // At the end of countdown.webm the group goes on to item 3 as soon as ann's player got there (the room's
        // side reports its end too, so the group does not wait its grace for it), and the room is told.
        before = bob.events.count
        let notices = ann.events("notice").count
        ann.send("seek 37")
        ann.send("play")
        func moved(_ process: TandemProcess) -> JSON? {
            process.events("notice").dropFirst(notices).first { ($0["text"]?.string ?? "").contains("item 3 of 3") }
        }
        #expect(await ann.wait(for: 20) { moved($0) != nil }, "\(ann.events("notice").suffix(3))")
        #expect(moved(ann)?["text"]?.string?.hasPrefix("everyone reached the end of countdown.webm") == true,
                "\(ann.events("notice").suffix(3))")
        #expect(await Self.heard(bob, after: before) { Self.index($0, 2, by: "ann") }, "\(bob.events.suffix(6))")

        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
    }

    @Test("with a real syncplay client (mpv) in the room: its queue add and select reach ann's queue and move her to the item; ann's select and removal reach it")
    func realSyncplayClient() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let ann = try SyncplayJoinProcessTests.join(server.port, room: "films", name: "ann")
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")
        let carol = try SyncplayClientProcess(port: server.port, room: "films", password: "", name: "carol",
                                              file: SyncplayJoinProcessTests.sample)
        defer { carol.stop() }
        #expect(await carol.waitFor(30) { $0.contains("Successfully connected") }, "\(carol.text.suffix(800))")
        // carol's client has the room's playlist, ann's file.
        var mark = carol.text.count
        try await Task.sleep(for: .seconds(1))
        carol.send("ql")
        #expect(await carol.waitFor(10, after: mark) { $0.contains("1: countdown.webm") }, "\(carol.text.suffix(800))")

        // carol adds short.webm to the playlist and selects it: ann's queue has it, and her player plays it.
        carol.send("qa short.webm")
        #expect(await QueueEditingProcessTests.sees(ann, ["countdown.webm", "short.webm"], current: 0),
                "\(ann.events("queue").suffix(2)) — carol: \(carol.text.suffix(600))")
        try await Task.sleep(for: .seconds(1))
        carol.send("qs 2")
        #expect(await ann.event("item", within: 20) { $0["index"]?.number == 2 && $0["title"]?.string == "short.webm" } != nil,
                "\(ann.events("item")) — carol: \(carol.text.suffix(600))")

        // ann goes back to item 1 and removes item 2: carol's client hears both from ann.
        try await Task.sleep(for: .seconds(1))
        mark = carol.text.count
        ann.send("jump 1")
        #expect(await carol.waitFor(20, after: mark) { $0.contains("ann changed the playlist selection") }, "\(carol.text.suffix(800))")
        #expect(await QueueEditingProcessTests.sees(ann, ["countdown.webm", "short.webm"], current: 0))
        mark = carol.text.count
        ann.send("queue remove 2")
        #expect(await carol.waitFor(20, after: mark) { $0.contains("ann updated the playlist") }, "\(carol.text.suffix(800))")
        let removal = mark
        mark = carol.text.count
        carol.send("ql")
        #expect(await carol.waitFor(10, after: mark) { $0.contains("countdown.webm") && !$0.contains("short.webm") },
                "\(carol.text.suffix(800))")
        // Nobody answers anybody: one change, one notification, and ann's queue stays as she left it.
        try await Task.sleep(for: .seconds(2))
        let updates = carol.text.dropFirst(removal).components(separatedBy: "updated the playlist").count - 1
        #expect(updates == 1, "\(carol.text.suffix(800))")
        #expect(await QueueEditingProcessTests.sees(ann, ["countdown.webm"], current: 0), "\(ann.events("queue").suffix(2))")
        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
    }

    /// Whether `peer` hears an event that `matches` after its first `count` events, within 20 s.
    static func heard(_ peer: SyncplayTestPeer, after count: Int, _ matches: @escaping (SyncplayClientState.Event) -> Bool) async -> Bool {
        await peer.waitFor(20) { _ in peer.events.dropFirst(count).contains(where: matches) }
    }

    /// The latest timeline is playing or paused, not waiting for anyone.
    static func settledWithoutWaiting(_ process: TandemProcess) -> Bool {
        process.events("timeline").last.map { $0["state"]?.string != "waiting" } ?? false
    }
}
