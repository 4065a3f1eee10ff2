import Testing
@testable import TandemCore

@Suite("Timeline copies: the stream's or the datagram's, whichever comes first")
struct TimelineCopiesTests {
    func timeline(_ generation: UInt64, _ item: String = "film") -> Timeline {
        Timeline(generation: generation, itemID: item, rate: 1, anchorSessionTime: .zero, anchorItemTime: .zero,
                 status: .paused)
    }

    @Test func theStreamAlonePassesEverything() {
        var copies = TimelineCopies()
        copies.reset(to: timeline(1))
        // The authority's "where the group stands" answer repeats a generation: still passed on, as before.
        let passed = [copies.fromStream(timeline(2)), copies.fromStream(timeline(3)), copies.fromStream(timeline(3))]
        #expect(passed == [true, true, true])
        #expect(copies.datagramsTaken == 0)
    }

    @Test func aDatagramThatComesFirstIsTakenAndItsStreamCopyDropped() {
        var copies = TimelineCopies()
        copies.reset(to: timeline(4))
        // The last one: a datagram copy that comes after its stream copy is left.
        let passed = [copies.fromDatagram(timeline(5)), copies.fromStream(timeline(5)), copies.fromStream(timeline(6)),
                      copies.fromDatagram(timeline(6))]
        #expect(passed == [true, false, true, false])
        #expect(copies.datagramsTaken == 1 && copies.datagramsLeft == 1)
    }

    @Test func aDatagramOutOfTurnOrForAnotherItemWaitsForTheStream() {
        var copies = TimelineCopies()
        // Before any timeline (not taking part yet): nothing to follow on from.
        let early = copies.fromDatagram(timeline(1))
        #expect(!early)
        copies.reset(to: timeline(7))
        // A generation missing in between (the stream may carry an activity or a queue before it), then a change of
        // item (the activity that comes before it on the stream must come first).
        let passed = [copies.fromDatagram(timeline(9)), copies.fromDatagram(timeline(8, "next")),
                      copies.fromStream(timeline(8, "next")), copies.fromStream(timeline(9, "next")),
                      copies.fromDatagram(timeline(10, "next"))]
        #expect(passed == [false, false, true, true, true])
        #expect(copies.datagramsTaken == 1 && copies.datagramsLeft == 3)
    }

    @Test func aDatagramOvertakingTheStreamMakesTheOlderStreamCopyStale() {
        var copies = TimelineCopies()
        copies.reset(to: timeline(2))
        let passed = [copies.fromDatagram(timeline(3)), copies.fromDatagram(timeline(4)), copies.fromStream(timeline(3)),
                      copies.fromStream(timeline(4)), copies.fromStream(timeline(5))]
        #expect(passed == [true, true, false, false, true])
    }

    @Test func aWelcomeStartsAfresh() {
        var copies = TimelineCopies()
        copies.reset(to: timeline(20))
        let before = copies.fromDatagram(timeline(21))
        // A reconnect to a server that restarted from its saved state, a few generations back.
        copies.reset(to: timeline(18))
        let passed = [before, copies.fromStream(timeline(19)), copies.fromDatagram(timeline(20))]
        #expect(passed == [true, true, true])
        #expect(copies.latest?.generation == 20)
    }
}
