import Foundation
import Testing
import TandemCore
import TandemTesting

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// The queue in whole-session simulations on the manual clock: coordinators, fake engines with load delays, clock
/// sync over simulated links. Sync is judged from the fake engines' render times on the true clock.
@Suite struct QueueScenarioTests {
    static func entry(_ item: String) -> QueueEntry {
        QueueEntry(activity: ScenarioTests.envelope(item, title: item.capitalized), contentID: nil)
    }

    /// Four peers on the scenarios' links and clocks, a queue of movie, episode-2, episode-3; peer 2 takes 3 s to
    /// load each item.
    static func session(seed: UInt64) -> SessionSimulation {
        var setups = ScenarioTests.peers()
        setups[2].engine.loadDelay = 3 * s
        let sim = ScenarioTests.simulation(seed: seed, peers: setups)
        sim.at(1 * s) { $0.requestQueue(0, .add([Self.entry("episode-2"), Self.entry("episode-3")], at: nil)) }
        sim.at(4 * s) { $0.play(0) }
        sim.run(until: 6 * s)
        return sim
    }

    @Test(arguments: ScenarioTests.seeds) func nextWaitsForTheSlowLoaderThenEveryoneStartsTogether(seed: UInt64) {
        let sim = Self.session(seed: seed)
        for peer in sim.peers { #expect(peer.machine.queue?.entries.count == 3) }
        // Peer 1 (not the host) moves the group along.
        sim.at(7 * s) { $0.requestQueue(1, .transition(to: .next, startingAt: .zero, play: nil)) }
        sim.run(until: 9 * s)
        // The slow loader is still loading: nobody plays the new item yet.
        for (i, peer) in sim.peers.enumerated() {
            #expect(peer.engine.loads.map(\.itemID) == ["movie", "episode-2"], "peer\(i) loaded \(peer.engine.loads.map(\.itemID))")
            #expect(peer.engine.movingRate(atTrue: sim.now) == 0, "peer\(i) started before the slow loader was ready")
        }
        sim.run(until: 14 * s)
        let slowLoaded = sim.peers[2].engine.loads.last!.at
        var anchors: Set<Int64> = []
        for (i, peer) in sim.peers.enumerated() {
            #expect(peer.engine.movingRate(atTrue: sim.now) == 1, "peer\(i) did not start the new item")
            guard let start = ScenarioTests.lastStart(sim, i) else { continue }
            #expect(start.itemTime == 0)
            #expect(start.trueTime > slowLoaded, "peer\(i) started before the slow loader had loaded")
            if case .line(_, let session, _)? = peer.engine.pieces.last?.piece { anchors.insert(session) }
            #expect(peer.machine.queue?.currentIndex == 1)
        }
        #expect(anchors.count == 1, "peers started the new item on different schedules: \(anchors)")
        let started = sim.peers.compactMap { ScenarioTests.lastStart(sim, $0.index)?.trueTime }.max()!
        ScenarioTests.expectSameGeneration(sim)
        ScenarioTests.expectInStep(sim, over: started...14 * s, "queue next (slow loader)")
    }

    @Test(arguments: ScenarioTests.seeds) func theEndOfAnItemMovesEveryoneOnOnceAllReachedIt(seed: UInt64) {
        let sim = Self.session(seed: seed)
        // Three players reach the end; the group waits for the fourth.
        sim.at(8 * s) { sim in for p in 0..<3 { sim.reachEnd(p) } }
        sim.run(until: 9 * s)
        #expect(sim.authority.timeline.itemID == "movie")
        sim.at(9 * s + 500 * ms) { $0.reachEnd(3) }
        sim.run(until: 16 * s)
        for (i, peer) in sim.peers.enumerated() {
            #expect(peer.machine.loadedItemID == "episode-2", "peer\(i)")
            #expect(peer.engine.movingRate(atTrue: sim.now) == 1, "peer\(i) did not start the next item")
        }
        ScenarioTests.expectSameGeneration(sim)
        // The last item's end pauses the group there.
        sim.at(17 * s) { $0.requestQueue(0, .transition(to: .next, startingAt: .zero, play: nil)) }
        sim.run(until: 23 * s)
        sim.at(24 * s) { sim in for p in sim.peers.indices { sim.reachEnd(p) } }
        sim.run(until: 26 * s)
        #expect(sim.authority.timeline.itemID == "episode-3")
        #expect(sim.authority.timeline.status == .paused)
        for (i, peer) in sim.peers.enumerated() {
            #expect(peer.engine.movingRate(atTrue: sim.now) == 0, "peer\(i) still plays after the queue ended")
        }
    }
}
