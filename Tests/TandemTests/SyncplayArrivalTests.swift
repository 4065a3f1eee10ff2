import Foundation
import Testing
import TandemCore
import TandemSyncplay

/// A Tandem peer arriving in a Syncplay room, on a manual clock: it repeats the room until its players have loaded,
/// then moves its session to where the room is, and reports its own position only once that has settled.
@Suite("Syncplay: arriving in a room")
struct SyncplayArrivalTests {
    static func at(_ seconds: Double) -> LocalInstant { LocalInstant(nanoseconds: Int64(seconds * 1e9)) }
    static let pausedAtZero = SyncplayLocalPlaystate(position: 0, paused: true)

    @Test("a room paused at 22 s: repeated until the players have loaded, then the session is moved there, and reported once that settles")
    func pausedRoom() {
        var arrival = SyncplayArrival()
        #expect(!arrival.reportsOwnPosition && arrival.holdsRoomChanges)
        // Nothing heard, nothing loaded: no move, and nothing of its own to report.
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 1, busy: false, now: Self.at(0)) == nil)
        arrival.heard(paused: true, position: 22, now: Self.at(1))
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 1, busy: false, now: Self.at(1)) == nil,
                "the players have not loaded yet")
        #expect(!arrival.reportsOwnPosition)
        arrival.players(loaded: true)
        // Still following the room's playlist: not yet.
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 1, busy: true, now: Self.at(2)) == nil)
        // Loaded and settled at 0: move to 22, paused; the room is still repeated until a later generation settles.
        let move = arrival.sessionSettled(at: Self.pausedAtZero, generation: 1, busy: false, now: Self.at(5))
        #expect(move == SyncplayLocalPlaystate(position: 22, paused: true), "a paused room does not move on")
        #expect(arrival.phase == .moving(after: 1) && !arrival.reportsOwnPosition && !arrival.holdsRoomChanges)
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 1, busy: false, now: Self.at(5.1)) == nil)
        #expect(!arrival.reportsOwnPosition)
        #expect(arrival.sessionSettled(at: .init(position: 22, paused: true), generation: 2, busy: false, now: Self.at(5.2)) == nil)
        #expect(arrival.reportsOwnPosition)
        // Arrived: later timelines ask nothing more.
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 3, busy: false, now: Self.at(9)) == nil)
    }

    @Test("a playing room is met where it is by then; a session already there (within 1 s, same state) arrives without a move")
    func playingRoomAndNoMove() {
        var arrival = SyncplayArrival()
        arrival.heard(paused: false, position: 30, now: Self.at(10))
        arrival.players(loaded: true)
        let move = arrival.sessionSettled(at: Self.pausedAtZero, generation: 4, busy: false, now: Self.at(12.5))
        #expect(move == SyncplayLocalPlaystate(position: 32.5, paused: false))

        var there = SyncplayArrival()
        there.heard(paused: true, position: 22, now: Self.at(1))
        there.players(loaded: true)
        #expect(there.sessionSettled(at: .init(position: 21.5, paused: true), generation: 7, busy: false, now: Self.at(2)) == nil)
        #expect(there.reportsOwnPosition)
        // …but not one in the other play state.
        var other = SyncplayArrival()
        other.heard(paused: true, position: 22, now: Self.at(1))
        other.players(loaded: true)
        #expect(other.sessionSettled(at: .init(position: 22, paused: false), generation: 7, busy: false, now: Self.at(2))
            == SyncplayLocalPlaystate(position: 22, paused: true))
        // A refused move leaves the session reporting itself.
        other.moveRefused()
        #expect(other.reportsOwnPosition)
    }

    @Test("an item the room's playlist chose is arrived at again once loaded; one a participant chose is not; a quiet member never reports")
    func itemsAndQuiet() {
        var arrival = SyncplayArrival()
        arrival.heard(paused: true, position: 22, now: Self.at(1))
        arrival.players(loaded: true)
        _ = arrival.sessionSettled(at: .init(position: 22, paused: true), generation: 2, busy: false, now: Self.at(2))
        #expect(arrival.reportsOwnPosition)
        // A participant's next item: the session reports itself at its start, as the room's clients start it.
        arrival.itemChanged(byRoom: false)
        #expect(arrival.reportsOwnPosition && !arrival.playersLoaded)
        // The room's own entry, chosen here to follow the room: arriving again, a readiness from before does not count.
        arrival.itemChanged(byRoom: true)
        #expect(!arrival.reportsOwnPosition && arrival.holdsRoomChanges)
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 5, busy: false, now: Self.at(3)) == nil)
        arrival.players(loaded: true)
        #expect(arrival.sessionSettled(at: Self.pausedAtZero, generation: 5, busy: false, now: Self.at(3))
            == SyncplayLocalPlaystate(position: 22, paused: true))

        var quiet = SyncplayArrival()
        quiet.heard(paused: true, position: 22, now: Self.at(1))
        quiet.quiet()
        quiet.players(loaded: true)
        quiet.itemChanged(byRoom: true)
        #expect(quiet.sessionSettled(at: Self.pausedAtZero, generation: 5, busy: false, now: Self.at(3)) == nil)
        #expect(!quiet.reportsOwnPosition && quiet.phase == .quiet)
    }

    @Test("before arriving, a participant's play or pause reaches the room at the room's position; a seek as it is")
    func reportedChanges() {
        var arrival = SyncplayArrival()
        let pause = SyncplayLocalPlaystate(position: 0, paused: true)
        #expect(arrival.reported(pause, seeks: false, now: Self.at(1)) == pause, "nothing heard: as it is")
        arrival.heard(paused: false, position: 40, now: Self.at(1))
        #expect(arrival.reported(pause, seeks: false, now: Self.at(3)) == SyncplayLocalPlaystate(position: 42, paused: true))
        let seek = SyncplayLocalPlaystate(position: 10, paused: false)
        #expect(arrival.reported(seek, seeks: true, now: Self.at(3)) == seek)
        arrival.players(loaded: true)
        _ = arrival.sessionSettled(at: .init(position: 42, paused: false), generation: 3, busy: false, now: Self.at(3))
        #expect(arrival.reportsOwnPosition)
        #expect(arrival.reported(pause, seeks: false, now: Self.at(4)) == pause)
    }
}
