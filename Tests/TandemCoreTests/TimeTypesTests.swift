import Foundation
import Testing
import TandemCore
import TandemTesting

/// The typed time axes and the one linear map between them.
@Suite("Typed time and the linear map")
struct TimeTypesTests {
    @Test("every kind of time encodes as a bare number of nanoseconds, so the wire is unchanged")
    func encodesAsBareNanoseconds() throws {
        struct Sample: Codable, Equatable {
            var local: LocalInstant
            var session: SessionInstant
            var item: ItemTime
            var span: TimeSpan
        }
        let sample = Sample(local: 1, session: -2, item: 3_000_000_000, span: .milliseconds(1.5))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(sample), as: UTF8.self)
        #expect(json == #"{"item":3000000000,"local":1,"session":-2,"span":1500000}"#)
        #expect(try JSONDecoder().decode(Sample.self, from: Data(json.utf8)) == sample)
    }

    @Test("instants differ by spans and move by spans; spans scale and compare")
    func arithmetic() {
        let a: SessionInstant = 1_000
        let b = a + .microseconds(2)
        #expect(b - a == TimeSpan(nanoseconds: 2_000))
        #expect(b - .nanoseconds(2_000) == a)
        #expect(TimeSpan.seconds(1.5) * 2.0 == .seconds(3))
        #expect(TimeSpan.seconds(3) / TimeSpan.seconds(1.5) == 2)
        #expect((-TimeSpan.milliseconds(4)).magnitude == .milliseconds(4))
        #expect(TimeSpan(Duration.milliseconds(7)) == .milliseconds(7))
        #expect(TimeSpan.milliseconds(7).duration == .milliseconds(7))
    }

    @Test("the map, its inverse, composition and re-anchoring agree")
    func linearMap() {
        let map = LinearMap<LocalInstant, SessionInstant>(from: 10_000, to: 5_000_000, rate: 1.0002)
        let local: LocalInstant = 1_000_010_000
        let session = map(local)
        #expect(session == SessionInstant(nanoseconds: 5_000_000 + 1_000_200_000))
        #expect(map.inverse(session) == local)
        #expect(map.inverted(session) == local)
        #expect(map.reanchored(at: local)(local + .seconds(1)) == map(local + .seconds(1)))
        #expect(map.offset(at: local) == session - SessionInstant(nanoseconds: local.nanoseconds))
        let toItem = ItemProjection(from: session, to: .zero + .seconds(30), rate: 2)
        let composed = toItem.composed(after: map)
        #expect(composed(local + .seconds(1)) == toItem(map(local + .seconds(1))))
    }

    @Test("a playing timeline projects through its line, a paused one stays at its anchor")
    func timelineProjection() {
        func session(_ s: Double) -> SessionInstant { .zero + .seconds(s) }
        func item(_ s: Double) -> ItemTime { .zero + .seconds(s) }
        var timeline = Timeline(generation: 1, itemID: "movie", rate: 1.5, anchorSessionTime: session(10),
                                anchorItemTime: item(60), status: .playing)
        #expect(timeline.expectedItemTime(atSessionTime: session(12)) == item(63))
        #expect(timeline.expectedItemTime(atSessionTime: session(12)) == timeline.projection(session(12)))
        #expect(timeline.expectedItemTime(atSessionTime: session(9)) == item(60))
        timeline.status = .paused
        #expect(timeline.expectedItemTime(atSessionTime: session(12)) == item(60))
    }

    @Test("the clock mapping is the typed local → session map and keeps its JSON")
    func clockMapping() throws {
        let mapping = ClockMapping(localAnchor: 100, sessionAnchor: 1_100, rate: 1)
        #expect(mapping.sessionTime(atLocal: 200) == 1_200)
        #expect(mapping.localTime(atSession: 1_200) == 200)
        #expect(mapping.offset(atLocal: 200) == .nanoseconds(1_000))
        let json = try JSONEncoder().encode(mapping)
        #expect(try JSONDecoder().decode(ClockMapping.self, from: json) == mapping)
    }

    @Test("a manual clock wakes a sleeper only when advanced to its deadline")
    func manualClockSleeps() async throws {
        let clock = ManualClock(0)
        let woke = Locked(false)
        let sleeper = Task {
            try await clock.sleep(until: LocalInstant(nanoseconds: 1_000_000), tolerance: nil)
            woke.withLock { $0 = true }
        }
        await clock.waitForSleepers()
        clock.advance(by: 999_999)
        #expect(clock.sleeperCount == 1)
        #expect(!woke.withLock { $0 })
        clock.advance(by: 1)
        try await sleeper.value
        #expect(woke.withLock { $0 })
        #expect(clock.sleeperCount == 0)
    }
}
