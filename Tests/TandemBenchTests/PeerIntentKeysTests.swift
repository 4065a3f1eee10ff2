import Testing
import Tandem
import TandemPeer
@testable import TandemBench

/// A peer's keys and lines map to the coordinator's intents, through real players in a real session: the seek steps
/// and rate steps are the session's, a seek step stops at the ends of the item, and what the limits refuse comes back
/// to the user in words.
@Suite("Keys as intents in a session", .serialized)
struct PeerIntentKeysTests {
    /// Waits (at most 10 s) until `condition` holds for bob's coordinator's timeline.
    static func bobSees(_ bob: LocalPeer, _ condition: @escaping @Sendable (Timeline) -> Bool) async throws -> Bool {
        for _ in 0..<100 {
            if let timeline = await bob.coordinator.timeline, condition(timeline) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test("arrows step 10 s and 60 s from ann's position and stop at the ends; [ ] step the rate; a rate or a seek the limits refuse is told; space plays and pauses")
    func keysAreIntents() async throws {
        let ensemble = try await Ensemble.start(file: try Samples.path("countdown.webm"), title: "intents")
        let ann = try #require(try await ensemble.add(.init(name: "ann")).peer as? LocalPeer)
        let bob = try #require(try await ensemble.add(.init(name: "bob")).peer as? LocalPeer)
        #expect(await ann.coordinator.limits == PlaybackLimits(), "the server announces its (default) limits")
        // Joining does not wait for a peer's player to load (on a busy machine ann's had not, 0.2 s in); the steps
        // below are judged against the item's end, so they start once it has.
        var duration = ann.player.mediaInfo?.duration
        for _ in 0..<100 where duration == nil {
            try await Task.sleep(for: .milliseconds(100))
            duration = ann.player.mediaInfo?.duration
        }
        #expect(duration != nil, "ann's player did not load the item within 10 s")

        #expect(await ann.perform(.seekStep(.forward)) == nil)
        #expect(try await Self.bobSees(bob) { $0.anchorItemTime == .seconds(10) && !$0.isPlaying })
        // 10 s + 60 s is past the end of the 40 s item: 1 s before it.
        #expect(await ann.perform(.seekStep(.farForward)) == nil)
        let end = try #require(duration)
        #expect(try await Self.bobSees(bob) { $0.anchorItemTime == .zero + end - .seconds(1) })
        #expect(await ann.perform(.seekStep(.farBack)) == nil)
        #expect(try await Self.bobSees(bob) { $0.anchorItemTime == .zero })

        #expect(await ann.perform(.rateStep(up: true)) == nil)
        #expect(try await Self.bobSees(bob) { $0.rate == 1.25 })
        #expect(await ann.perform(.rate(9)) == "rate 9 is out of range — use a rate from 0.25 to 4 (1 is normal speed)")
        let past = await ann.perform(.seek(to: 45))
        #expect(past?.hasPrefix("cannot seek to 45.0 s: the item lasts ") == true, "\(past ?? "nil")")

        #expect(await ann.perform(.togglePlayPause) == nil)
        #expect(try await Self.bobSees(bob) { $0.isPlaying })
        try await Task.sleep(for: .seconds(1))
        #expect(await ann.perform(.togglePlayPause) == nil)
        #expect(try await Self.bobSees(bob) { $0.status == .paused })
        await ensemble.finish()
    }
}
