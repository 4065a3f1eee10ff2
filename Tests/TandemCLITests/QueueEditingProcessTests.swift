import Foundation
import Testing

/// Editing the shared queue from standard input across real `tandem` processes on loopback: `queue move`,
/// `queue remove` and `jump` by item number, and the warnings for numbers that name nothing.
@Suite("Editing the queue across processes", .serialized)
struct QueueEditingProcessTests {
    static let files = ["countdown.webm", "short.webm", "countdown.opus"]

    static func fileNames(_ queue: JSON?) -> [String]? { queue?["items"]?.array?.compactMap { $0["fileName"]?.string } }

    /// Waits until `process`'s latest queue event lists `names` with `current` (from 0) playing.
    static func sees(_ process: TandemProcess, _ names: [String], current: Int, within timeout: Double = 20) async -> Bool {
        await process.wait(for: timeout) { process in
            let queue = process.events("queue").last
            return fileNames(queue) == names && queue?["currentIndex"]?.number == Double(current)
        }
    }

    @Test("host A B C, a joiner with --media-dir: move and remove change both queues; jump makes both load and play the item")
    func moveRemoveJump() async throws {
        let (host, bob, elsewhere) = try await QueueProcessTests.hostAndJoiner(Self.files.map(TandemBinary.sample))
        defer { host.stop(); bob.stop(); try? FileManager.default.removeItem(at: elsewhere) }
        for peer in [host, bob] {
            #expect(await Self.sees(peer, Self.files, current: 0, within: 30), "no queue of three; stderr: \(peer.stderr)")
        }
        #expect(await host.wait(for: 30) { SessionProcessTests.seesReady($0, ["bob"]) }, "bob never ready: \(bob.stderr)")

        // Item 3 to the front: the playing item (countdown.webm) is now item 2, for both.
        host.send("queue move 3 1")
        for peer in [host, bob] {
            #expect(await Self.sees(peer, ["countdown.opus", "countdown.webm", "short.webm"], current: 1),
                    "move not seen; stdout: \(peer.stdout)")
        }
        // Remove item 3 (short.webm).
        host.send("queue remove 3")
        for peer in [host, bob] {
            #expect(await Self.sees(peer, ["countdown.opus", "countdown.webm"], current: 1), "remove not seen; stdout: \(peer.stdout)")
        }

        // Numbers that name nothing get a clear warning; the session goes on.
        host.send("jump 7")
        let noItem = await host.event("warning", within: 10) { ($0["text"]?.string ?? "").contains("no item 7") }
        #expect(noItem?["text"]?.string == "there is no item 7: the queue has 2 items; `queue` lists them")
        host.send("queue move 1 5")
        #expect(await host.event("warning", within: 10) { ($0["text"]?.string ?? "").contains("no position 5") } != nil)
        // The playing item cannot be removed (the authority says so); editing is the host's.
        host.send("queue remove 2")
        #expect(await host.event("warning", within: 10) { ($0["text"]?.string ?? "").contains("while it plays") } != nil)
        bob.send("queue remove 1")
        #expect(await bob.event("warning", within: 10) { ($0["text"]?.string ?? "").contains("only the host") } != nil)
        #expect(Self.fileNames(host.events("queue").last) == ["countdown.opus", "countdown.webm"])

        // bob jumps to item 1: both load countdown.opus and start it together, from 0.
        let before = try #require(SessionProcessTests.generations(host).last)
        bob.send("jump 1")
        for peer in [host, bob] {
            let item = await peer.event("item", within: 15) { $0["index"]?.number == 1 }
            #expect(item?["count"]?.number == 2, "no item event; stderr: \(peer.stderr)")
            #expect(await Self.sees(peer, ["countdown.opus", "countdown.webm"], current: 0))
        }
        var starts: [JSON] = []
        for peer in [host, bob] {
            #expect(await peer.wait(for: 30) { QueueProcessTests.playing($0, after: before) != nil }, "\(peer.stderr)")
            if let start = QueueProcessTests.playing(peer, after: before) { starts.append(start) }
        }
        try #require(starts.count == 2)
        #expect(starts[0]["generation"] == starts[1]["generation"])
        #expect(starts[0]["anchorSessionTime"] == starts[1]["anchorSessionTime"])
        #expect(starts[0]["anchorItemTime"]?.number == 0)
        // Both play it, in step (loose bound: this is not the benchmark).
        try await Task.sleep(for: .seconds(2.5))
        for peer in [host, bob] {
            let recent = peer.events("position").suffix(2)
            let errors = recent.compactMap { $0["positionErrorMs"]?.number }
            #expect(!errors.isEmpty && errors.allSatisfy { abs($0) < 30 }, "position errors \(errors)")
            #expect(recent.allSatisfy { $0["state"]?.string == "playing" }, "not playing: \(Array(recent))")
        }
        host.send("end")
        #expect(await host.exitCode(within: 10) == 0)
        #expect(await bob.exitCode(within: 10) == 8)
    }
}
