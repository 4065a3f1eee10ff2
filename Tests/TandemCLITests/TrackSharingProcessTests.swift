import Foundation
import Testing
import TandemPeer

/// `host --share-tracks` across real processes on the multi-track file the track tests make: the host's audio
/// choice reaches joiners as a `trackProposal` event and plays there, matched by language when a joiner's file
/// numbers its tracks the other way; a joiner that chose `--audio-track` keeps its own.
@Suite("Track choices shared by the host", .serialized)
struct TrackSharingProcessTests {
    static func join(_ invite: String, name: String, file: String, _ extra: [String] = []) throws -> TandemProcess {
        try TandemProcess(["join", file, "--headless", "--json", "--name", name] + extra, environment: ["TANDEM_INVITE": invite])
    }

    @Test("the host's --audio-track 2 (fra) plays at bob's, at dave's as his track 1 (fra), not at carol's (--audio-track 1); a later `audio 1` follows")
    func hostSharesAudioTrack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-tracks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let made = try Samples.makeMultiTrackFile(in: directory)
        let reversed = try Samples.makeMultiTrackFile(in: directory, audio: ("fra", "eng"), name: "reversed.mkv")
        #expect(made.status == 0 && reversed.status == 0, "gst-launch failed to make the multi-track files")

        let host = try TandemProcess(["host", made.path, "--headless", "--json", "--bind", "127.0.0.1", "--port", "0",
                                      "--name", "ann", "--share-tracks", "--audio-track", "2"])
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let bob = try Self.join(invite, name: "bob", file: made.path)
        defer { bob.stop() }
        let carol = try Self.join(invite, name: "carol", file: made.path, ["--audio-track", "1"])
        defer { carol.stop() }
        let dave = try Self.join(invite, name: "dave", file: reversed.path)
        defer { dave.stop() }

        // Bob plays what the host plays.
        let told = await bob.event("trackProposal", within: 30)
        #expect(told?["name"]?.string == "ann", "bob stdout: \(bob.stdout.suffix(800)); stderr: \(bob.stderr)")
        #expect(told?["kind"]?.string == "audio")
        #expect(told?["track"]?.number == 2)
        #expect(told?["language"]?.string == "fra")
        #expect(told?["applied"] == .bool(true))
        #expect(told?["playing"]?.number == 2)
        #expect(told?["text"]?.string?.hasPrefix("ann proposes audio track 2 (fra)") == true, "\(String(describing: told))")
        #expect(told?["participant"]?.string == host.events("joined").first?["participant"]?["id"]?.string)

        // Carol chose her own on the command line and keeps it.
        let kept = await carol.event("trackProposal", within: 30)
        #expect(kept?["applied"] == .bool(false), "carol stdout: \(carol.stdout.suffix(800))")
        #expect(kept?["playing"]?.number == 1)
        #expect(kept?["text"]?.string?.contains("--audio-track") == true)

        // Dave's file has French as track 1: matched by language.
        let matched = await dave.event("trackProposal", within: 30)
        #expect(matched?["applied"] == .bool(true),
                "dave: \(dave.events("notice").suffix(4)) \(dave.events("warning").suffix(4)) \(dave.events("timeline").suffix(2)); stderr: \(dave.stderr.suffix(1500)); host: \(host.events("warning").suffix(4)) \(host.events("participants").suffix(1))")
        #expect(matched?["track"]?.number == 2)
        #expect(matched?["playing"]?.number == 1)
        #expect(matched?["text"]?.string?.contains("track 1 (fra)") == true)

        // A later change on the host is proposed again; bob follows, carol still keeps hers.
        host.send("audio 1")
        let later = await bob.event("trackProposal", within: 15) { $0["track"]?.number == 1 }
        #expect(later?["language"]?.string == "eng")
        #expect(later?["applied"] == .bool(true))
        #expect(later?["playing"]?.number == 1)
        let carolLater = await carol.event("trackProposal", within: 15) { $0["track"]?.number == 1 }
        #expect(carolLater?["applied"] == .bool(false))
        // The host itself is never told of its own proposals.
        #expect(host.events("trackProposal").isEmpty)

        host.send("end")
        #expect(await host.exitCode(within: 15) == 0)
    }

    @Test("without --share-tracks a host's track choice stays its own")
    func personalByDefault() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-tracks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let made = try Samples.makeMultiTrackFile(in: directory)
        let host = try TandemProcess(["host", made.path, "--headless", "--json", "--bind", "127.0.0.1", "--port", "0",
                                      "--name", "ann", "--audio-track", "2"])
        defer { host.stop() }
        let invite = try await SessionProcessTests.invite(of: host)
        let bob = try Self.join(invite, name: "bob", file: made.path)
        defer { bob.stop() }
        #expect(await host.wait(for: 30) { SessionProcessTests.seesReady($0, ["bob"]) }, "host stderr: \(host.stderr)")
        host.send("audio 1")
        host.send("chat marker")
        // Chat travels the same way; once it has arrived, a proposal would have too.
        #expect(await bob.event("chat", within: 15) != nil)
        #expect(bob.events("trackProposal").isEmpty)
        host.send("end")
        #expect(await host.exitCode(within: 15) == 0)
    }
}
