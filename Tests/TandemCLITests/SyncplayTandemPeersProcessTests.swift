import Foundation
import Testing
import TandemCore
import TandemSyncplay
import TandemBench

/// `tandem join syncplay://…` twice in one real syncplay-server room, beside a Syncplay client: the second Tandem peer
/// plays in the session the first offers the room, and the room still sees both and is moved once per command.
@Suite("Syncplay rooms: Tandem peers find each other", .serialized)
struct SyncplayTandemPeersProcessTests {
    static func names(_ process: TandemProcess) -> Set<String> {
        Set(process.events("participants").last?["participants"]?.array?.compactMap { $0["name"]?.string } ?? [])
    }

    static func settled(_ process: TandemProcess) -> JSON? { SyncplayJoinProcessTests.settled(process) }

    @Test("the second Tandem peer plays in the first one's session; a Syncplay client sees both, drives them and hears each change once")
    func oneSessionInARoom() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let carl = try await SyncplayTestPeer("carl", port: server.port, room: "movie")
        let ann = try SyncplayJoinProcessTests.join(server.port, room: "movie", name: "ann")
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")
        // ann offers her session through the room: her file now carries the invite.
        #expect(await carl.waitFor(20) { if case .userFile("ann", let file) = $0 { file.tandemSession != nil } else { false } })
        let bob = try SyncplayJoinProcessTests.join(server.port, room: "movie", name: "bob")
        defer { bob.stop() }
        // (A participant's list names the others.)
        #expect(await bob.wait(for: 20) { Self.names($0).contains("ann") },
                "\(bob.events("participants").suffix(1)) \(bob.stderr.suffix(800))")
        #expect(await ann.wait(for: 20) { Self.names($0).contains("bob") })
        #expect(await carl.waitFor(20) { if case .userJoined("bob", _) = $0 { true } else { false } })

        // ann plays: bob plays on the very same timeline; the room hears it.
        ann.send("play")
        #expect(await bob.wait(for: 15) { Self.settled($0)?["state"]?.string == "playing" }, "\(bob.events("timeline"))")
        #expect(await carl.waitFor(15) { if case .roomState(false, _, _, _) = $0 { true } else { false } })
        try await Task.sleep(for: .seconds(2))

        // carl (Syncplay) pauses: both pause, on one timeline — the same generation at the same place.
        let position = carl.playstate.withLock { $0.position } + 2
        carl.change(position: position, paused: true, seek: false)
        #expect(await ann.wait(for: 15) { Self.settled($0)?["state"]?.string == "paused" }, "\(ann.events("timeline").suffix(3))")
        #expect(await bob.wait(for: 15) { Self.settled($0)?["state"]?.string == "paused" }, "\(bob.events("timeline").suffix(3))")
        let annPause = try #require(Self.settled(ann)), bobPause = try #require(Self.settled(bob))
        #expect(annPause["generation"]?.number == bobPause["generation"]?.number)
        #expect(annPause["anchorSessionTime"]?.number == bobPause["anchorSessionTime"]?.number)
        #expect(abs((annPause["anchorItemTime"]?.number ?? 0) - position) < 1, "\(annPause) against \(position)")

        // bob seeks: the room is told once, by the bridge that speaks for the session (ann's).
        bob.send("seek 20")
        #expect(await carl.waitFor(15) { if case .roomState(_, let at, true, _) = $0 { abs(at - 20) < 1 } else { false } },
                "\(bob.events.filter { $0["event"]?.string != "position" }.suffix(4)) \(ann.events("timeline").suffix(2))")
        try await Task.sleep(for: .seconds(3))
        let seeks = carl.events.filter { if case .roomState(_, let at, true, _) = $0 { abs(at - 20) < 1 } else { false } }
        #expect(seeks.count == 1, "\(seeks)")
        #expect(await ann.wait(for: 10) { abs((Self.settled($0)?["anchorItemTime"]?.number ?? 0) - 20) < 0.5 })

        bob.send("leave")
        #expect(await bob.exitCode(within: 20) == 0, "\(bob.stderr)")
        #expect(await carl.waitFor(20) { if case .userLeft("bob") = $0 { true } else { false } })
        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
        await carl.close()
    }

    @Test("when the peer whose session the others played in leaves, one of them offers a session and the rest join it; the room carries on")
    func hostLeaves() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let carl = try await SyncplayTestPeer("carl", port: server.port, room: "movie")
        let ann = try SyncplayJoinProcessTests.join(server.port, room: "movie", name: "ann")
        defer { ann.stop() }
        #expect(await carl.waitFor(20) { if case .userFile("ann", let file) = $0 { file.tandemSession != nil } else { false } })
        let bob = try SyncplayJoinProcessTests.join(server.port, room: "movie", name: "bob")
        defer { bob.stop() }
        let dave = try SyncplayJoinProcessTests.join(server.port, room: "movie", name: "dave")
        defer { dave.stop() }
        #expect(await ann.wait(for: 30) { Self.names($0).isSuperset(of: ["bob", "dave"]) }, "\(Self.names(ann))")
        ann.send("play")
        #expect(await dave.wait(for: 15) { Self.settled($0)?["state"]?.string == "playing" })

        // ann leaves: bob (first by name) offers his session, dave plays in it, the room keeps playing.
        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
        #expect(await carl.waitFor(30) { if case .userFile("bob", let file) = $0 { file.tandemSession != nil } else { false } },
                "\(bob.stderr.suffix(600))")
        #expect(await bob.wait(for: 30) { Self.names($0).contains("dave") && !Self.names($0).contains("ann") },
                "\(Self.names(bob)) — dave: \(dave.stderr.suffix(600))")
        #expect(await bob.wait(for: 15) { Self.settled($0)?["state"]?.string == "playing" }, "\(bob.events("timeline").suffix(3))")
        // carl pauses: bob and dave pause on one timeline.
        try await Task.sleep(for: .seconds(1))
        carl.change(position: carl.playstate.withLock { $0.position } + 1, paused: true, seek: false)
        #expect(await bob.wait(for: 15) { Self.settled($0)?["state"]?.string == "paused" }, "\(bob.events("timeline").suffix(3))")
        #expect(await dave.wait(for: 15) { p in
            Self.settled(p)?["state"]?.string == "paused" && Self.settled(p)?["generation"]?.number == Self.settled(bob)?["generation"]?.number
                && Self.settled(p)?["anchorSessionTime"]?.number == Self.settled(bob)?["anchorSessionTime"]?.number
        }, "\(dave.events("timeline").suffix(2)) against \(bob.events("timeline").suffix(1))")
        for peer in [bob, dave] {
            peer.send("leave")
            #expect(await peer.exitCode(within: 20) == 0, "\(peer.stderr)")
        }
        await carl.close()
    }

    @Test("an offer that does not answer, or is no invite, is passed over in bounded time: the newcomer offers its own session")
    func deadOffers() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        // Nothing listens on port 1; "zed"'s offer is not an invite at all.
        let dead = SyncplayFile(name: "countdown.webm", duration: 92, size: .number(1), tandemSession: "tandem://127.0.0.1:1/dead#key")
        let mallory = try await SyncplayTestPeer("mallory", port: server.port, room: "trap", file: dead)
        var junk = dead
        junk.tandemSession = "javascript:alert(1)"
        let zed = try await SyncplayTestPeer("zed", port: server.port, room: "trap", file: junk)
        let started = ContinuousClock.now
        let dan = try SyncplayJoinProcessTests.join(server.port, room: "trap", name: "dan")
        defer { dan.stop() }
        #expect(await dan.event("joined", within: 30) != nil, "\(dan.stderr)")
        #expect(await mallory.waitFor(30) { if case .userFile("dan", let file) = $0 { file.tandemSession != nil } else { false } })
        #expect(ContinuousClock.now - started < .seconds(25))
        // dan's session is his own: the only other participant in it is his bridge.
        #expect(await dan.wait(for: 10) { Self.names($0) == ["syncplay"] }, "\(Self.names(dan))")
        // The room still works for dan: mallory's play reaches him.
        mallory.change(position: 5, paused: false, seek: true)
        #expect(await dan.wait(for: 15) { Self.settled($0)?["state"]?.string == "playing" }, "\(dan.events("timeline").suffix(3))")
        dan.send("leave")
        #expect(await dan.exitCode(within: 20) == 0, "\(dan.stderr)")
        await mallory.close()
        await zed.close()
    }
}
