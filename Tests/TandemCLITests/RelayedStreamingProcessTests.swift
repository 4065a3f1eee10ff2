import Foundation
import Testing

/// `tandem host --server RELAY --share-media` and a `tandem join` without a copy, through `tandem serve
/// --relay-media`, as real processes on loopback.
@Suite("Streaming the host's copy through a relay", .serialized)
struct RelayedStreamingProcessTests {
    static func hostOnRelay(_ extra: [String]) async throws -> (relay: TandemProcess, host: TandemProcess, invite: String) {
        let (relay, port) = try await ServeStateProcessTests.serve(extra)
        let host = try SessionProcessTests.host(["--server", "tandem://127.0.0.1:\(port)", "--share-media"])
        let invite = try await SessionProcessTests.invite(of: host)
        return (relay, host, invite)
    }

    @Test("a joiner without the file plays the host's copy through a --relay-media relay, streaming and on the group's line")
    func joinerStreamsThroughRelay() async throws {
        let (relay, host, invite) = try await Self.hostOnRelay(["--relay-media"])
        defer { relay.stop() }
        defer { host.stop() }
        let directory = try StreamingProcessTests.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bob = try StreamingProcessTests.joinWithoutCopy(invite, in: directory)
        defer { bob.stop() }
        #expect(await host.wait(for: 40) { SessionProcessTests.seesReady($0, ["bob"]) }, "bob never ready: \(bob.stderr)")
        host.send("play")
        #expect(await bob.wait(for: 15) { SessionProcessTests.lastTimeline($0)?["state"]?.string == "playing" }, "\(bob.stderr)")
        let streaming = await bob.event("position", within: 10) { event in
            event["state"]?.string == "playing" && event["streaming"]?["from"]?.string == "ann"
        }
        #expect(streaming != nil, "no position event streaming from ann: \(bob.events("position").suffix(2))")
        let error = await bob.event("position", within: 5) { event in
            event["state"]?.string == "playing" && event["positionErrorMs"]?.number.map { abs($0) < 100 } == true
        }
        #expect(error != nil, "bob is not on the group's line: \(bob.events("position").suffix(2))")
    }

    @Test("a relay without --relay-media: the joiner without a copy exits 3 saying to ask the relay's operator or get a copy")
    func relayWithoutOption() async throws {
        let (relay, host, invite) = try await Self.hostOnRelay([])
        defer { relay.stop() }
        defer { host.stop() }
        let directory = try StreamingProcessTests.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bob = try StreamingProcessTests.joinWithoutCopy(invite, in: directory)
        defer { bob.stop() }
        #expect(await bob.exitCode(within: 20) == 3, "\(bob.stderr)")
        #expect(bob.stderr.contains("--relay-media") && bob.stderr.contains("operator"), "\(bob.stderr)")
    }
}
