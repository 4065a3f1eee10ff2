import Foundation
import Testing
@testable import TandemCore

private let s: Int64 = 1_000_000_000

/// The coordinator's part of the queue: it follows the queue, reports its player's end of item once per
/// generation, and says at once that it is ready when a new activity names the item it has loaded.
@Suite struct CoordinatorQueueTests {
    typealias Machine = PlaybackCoordinatorStateMachine
    typealias T = CoordinatorStateMachineTests

    @Test func theEndOfTheItemIsReportedOncePerPlayingGeneration() {
        var m = T.loadedMachine()
        // Paused: an end of stream (e.g. after a seek to the very end) is nobody's business.
        #expect(T.sent(m.engineEvent(.endOfStream, now: lt(7 * s))).isEmpty)
        _ = m.receive(.timeline(T.timeline(2, .playing, at: 3 * s, item: 0)), now: lt(7 * s))
        #expect(T.sent(m.engineEvent(.endOfStream, now: lt(8 * s))) == [.reachedEnd(generation: 2)])
        #expect(T.sent(m.engineEvent(.endOfStream, now: lt(9 * s))).isEmpty)
        _ = m.receive(.timeline(T.timeline(3, .playing, at: 10 * s, item: 0, rate: 2)), now: lt(9 * s))
        #expect(T.sent(m.engineEvent(.endOfStream, now: lt(11 * s))) == [.reachedEnd(generation: 3)])
    }

    @Test func theQueueIsFollowedFromTheWelcomeOnAndChangesAreEvents() {
        var m = Machine()
        let queue = SessionQueue(entries: [QueueEntry(id: "q1", activity: T.envelope("movie"))], currentIndex: 0)
        let welcome = ServerMessage.welcome(SessionSnapshot(
            sessionID: "s", localParticipant: Participant(id: T.me, name: "me"), activity: T.envelope("movie"),
            timeline: T.timeline(1, .paused, at: 0, item: 0), participants: [], attachments: [], queue: queue))
        #expect(m.receive(welcome, now: lt(1 * s)).contains(.event(.queueChanged(queue))))
        #expect(m.queue == queue)
        var longer = queue
        longer.entries.append(QueueEntry(id: "q2", activity: T.envelope("next")))
        #expect(m.receive(.queue(longer), now: lt(2 * s)).contains(.event(.queueChanged(longer))))
        // The same queue again is no change.
        #expect(!m.receive(.queue(longer), now: lt(3 * s)).contains(.event(.queueChanged(longer))))
    }

    @Test func theSameItemAgainIsReadyAtOnce() {
        var m = T.loadedMachine()
        // The authority counts everyone as loading a new activity; this item is loaded already.
        let again = m.receive(.activity(T.envelope("movie")), now: lt(7 * s))
        #expect(T.sent(again).contains(.readiness(.ready(T.media))))
        #expect(T.engineCommands(again).allSatisfy { if case .load = $0.1 { false } else { true } })
        // Another item is loaded, as always.
        let other = m.receive(.activity(T.envelope("next")), now: lt(8 * s))
        #expect(T.engineCommands(other).contains { $0.1 == .load(itemID: "next") })
    }
}
