import Testing
import TandemCore

@Suite struct ClockMappingTests {
    @Test func roundTripsAndComposes() {
        let m = ClockMapping(localAnchor: 1_000, sessionAnchor: 3_600_000_000_000, rate: 1.0002)
        let local: LocalInstant = 5_000_000_000
        #expect((m.localTime(atSession: m.sessionTime(atLocal: local)) - local).magnitude <= 1)
        let skew = ClockMapping(localAnchor: 0, sessionAnchor: 42, rate: 0.9999)
        let composed = m.composed(after: skew)
        let skewed = LocalInstant(nanoseconds: skew.sessionTime(atLocal: local).nanoseconds)
        #expect((composed.sessionTime(atLocal: local) - m.sessionTime(atLocal: skewed)).magnitude <= 1)
    }

    @Test func timelineProjectsOnlyWhilePlaying() {
        var t = Timeline(generation: 1, itemID: "x", rate: 1.5, anchorSessionTime: 1_000, anchorItemTime: 10,
                         status: .playing)
        #expect(t.expectedItemTime(atSessionTime: 2_000) == ItemTime(nanoseconds: 10 + 1_500))
        #expect(t.expectedItemTime(atSessionTime: 500) == 10)
        t.status = .paused
        #expect(t.expectedItemTime(atSessionTime: 2_000) == 10)
    }
}
