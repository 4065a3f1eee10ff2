import Testing
import TandemCore
import TandemTesting

private let ms: Int64 = 1_000_000
private let s: Int64 = 1_000_000_000

/// A native peer's render offset: how far what its engine rendered lies from the group's line, which its link
/// reports carry to the group (`participants`' `renderOffsetMs`) and its own `position` event shows.
@Suite("A peer's render offset, from what its engine rendered")
struct PeerRenderOffsetTests {
    /// What peer `p`'s engine renders now, as its engine would report it (on its own, erring, clock).
    static func render(_ sim: SessionSimulation, _ p: Int, at trueTime: Int64? = nil) -> RenderedMoment? {
        let t = trueTime ?? sim.now
        guard let item = sim.peers[p].engine.renderedItemTime(atTrue: t) else { return nil }
        return RenderedMoment(itemTime: ItemTime(nanoseconds: item), at: sim.peers[p].localTime(atTrue: t))
    }

    static func offset(_ sim: SessionSimulation, _ p: Int, render: RenderedMoment?) -> TimeSpan? {
        sim.peers[p].machine.renderOffset(of: render, now: sim.peers[p].localTime(atTrue: sim.now))
    }

    @Test("in step it is near zero; a peer that slipped 80 ms behind reports -80 ms; stale renders and pauses report none")
    func followsTheRenders() {
        let sim = ScenarioTests.simulation(seed: 3, peers: ScenarioTests.peers())
        ScenarioTests.startPlaying(sim)
        sim.run(until: 7 * s)
        for p in sim.peers.indices {
            let offset = Self.offset(sim, p, render: Self.render(sim, p))
            // The simulated clocks are estimated to well within a few ms of the truth.
            #expect(offset.map { abs($0.nanoseconds) < 3 * ms } == true, "peer\(p): \(String(describing: offset))")
        }
        let before = Self.offset(sim, 1, render: Self.render(sim, 1))!
        sim.slip(1, by: -80 * ms)
        let slipped = Self.offset(sim, 1, render: Self.render(sim, 1))!
        #expect(abs((slipped - before).nanoseconds + 80 * ms) < ms, "\(before) → \(slipped)")
        // A render more than a second old says nothing about now.
        #expect(Self.offset(sim, 1, render: Self.render(sim, 1, at: sim.now - 2 * s)) == nil)
        #expect(Self.offset(sim, 1, render: nil) == nil)
        sim.at(sim.now + 100 * ms) { $0.pause(0) }
        sim.run(until: sim.now + 1 * s)
        #expect(Self.offset(sim, 2, render: Self.render(sim, 2)) == nil)
    }

    @Test("the link report carries it: the authority shares it with everyone")
    func reachesTheGroup() {
        let sim = ScenarioTests.simulation(seed: 1, peers: ScenarioTests.peers())
        ScenarioTests.startPlaying(sim)
        sim.run(until: 7 * s)
        let render = Self.render(sim, 1)
        let local = sim.peers[1].localTime(atTrue: sim.now)
        var machine = sim.peers[1].machine
        let actions = machine.tick(now: local + TimeSpan.seconds(10), mapping: nil, clockQuality: (.milliseconds(1), .milliseconds(2)),
                                   engineItemTime: nil, latestRender: render.map { RenderedMoment(itemTime: $0.itemTime + TimeSpan.seconds(10), at: $0.at + TimeSpan.seconds(10)) })
        let reported = actions.compactMap { action -> TimeSpan?? in
            if case .send(.linkReport(_, _, let offset, _, _, _, _)) = action { return offset } else { return nil }
        }
        #expect(reported.count == 1)
        #expect(reported.first.flatMap { $0 }.map { abs($0.nanoseconds) < 3 * ms } == true, "\(reported)")
    }
}
