import Foundation
import Testing

/// `tandem host --share-media` and a `tandem join` without a copy, as real processes on loopback.
@Suite("Streaming the host's copy across processes", .serialized)
struct StreamingProcessTests {
    static func emptyDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-no-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.path
    }

    static func joinWithoutCopy(_ invite: String, in directory: String, extra: [String] = []) throws -> TandemProcess {
        try TandemProcess(["join", "--headless", "--json", "--name", "bob", "--media-dir", directory] + extra,
                          environment: ["TANDEM_INVITE": invite])
    }

    @Test("a joiner without the file streams the host's copy and plays with the group; its position events say so; the next item streams too")
    func joinerStreams() async throws {
        let host = try SessionProcessTests.host([TandemBinary.sample("short.webm"), "--share-media"])
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let directory = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bob = try Self.joinWithoutCopy(invite, in: directory)
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { SessionProcessTests.seesReady($0, ["bob"]) }, "bob never ready: \(bob.stderr)")
        host.send("play")
        #expect(await bob.wait(for: 15) { SessionProcessTests.lastTimeline($0)?["state"]?.string == "playing" }, "\(bob.stderr)")
        let streaming = await bob.event("position", within: 10) { event in
            event["state"]?.string == "playing" && event["streaming"]?["from"]?.string == "ann"
                && (event["streaming"]?["bufferedSeconds"]?.number ?? -1) >= 0
        }
        #expect(streaming != nil, "no position event streaming from ann: \(bob.events("position").suffix(2))")
        // The host's own position events say nothing of streaming.
        #expect(host.events("position").allSatisfy { $0["streaming"] == .null })
        let error = await bob.event("position", within: 5) { event in
            event["state"]?.string == "playing" && event["positionErrorMs"]?.number.map { abs($0) < 100 } == true
        }
        #expect(error != nil, "bob is not on the group's line: \(bob.events("position").suffix(2))")

        // The queue's next item is shared as well: bob goes on with the group and streams that one too.
        let before = bob.events.count
        host.send("next")
        let next = await bob.event("item", within: 15) { $0["index"]?.number == 2 && $0["title"]?.string == "short.webm" }
        #expect(next != nil, "bob never went on to the next item: \(bob.events("item"))")
        // Generous: bob loads the next item through the host before the group starts it, which takes a few
        // seconds on a machine busy with other builds; the wait ends as soon as it is on the line.
        let onNext = await bob.wait(for: 45) { process in
            process.events.dropFirst(before).contains { event in
                event["event"]?.string == "position" && event["state"]?.string == "playing"
                    && event["streaming"]?["from"]?.string == "ann"
                    && event["positionErrorMs"]?.number.map { abs($0) < 100 } == true
            }
        }
        #expect(onNext, "bob does not stream the next item on the group's line: \(bob.events("position").suffix(2))\n\(bob.stderr)")
    }

    @Test("without --share-media, a joiner without the file is told where to get one and exits 3; --stream says the host does not share")
    func notShared() async throws {
        let host = try SessionProcessTests.host()
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let directory = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bob = try Self.joinWithoutCopy(invite, in: directory)
        defer { bob.stop() }
        #expect(await bob.exitCode(within: 20) == 3, "\(bob.stderr)")
        let streamer = try Self.joinWithoutCopy(invite, in: directory, extra: ["--stream"])
        defer { streamer.stop() }
        #expect(await streamer.exitCode(within: 20) == 3)
        #expect(streamer.stderr.contains("--share-media"), "\(streamer.stderr)")
    }
}
