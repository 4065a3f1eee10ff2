import Foundation
import Synchronization
import Testing
import TandemCore

@Suite struct FanOutTests {
    /// Everything a stream holds until it ends.
    private func drain<T: Sendable>(_ stream: AsyncStream<T>) async -> [T] {
        var values: [T] = []
        for await value in stream { values.append(value) }
        return values
    }

    @Test func everySubscriberReceivesEveryLaterValueInOrderUntilFinish() async {
        let fanOut = FanOut<Int>()
        fanOut.send(0)  // nobody listens: gone
        let a = fanOut.subscribe()
        let b = fanOut.subscribe()
        for n in 1...3 { fanOut.send(n) }
        #expect(fanOut.finish())
        fanOut.send(4)  // after finish: ignored
        #expect(await drain(a) == [1, 2, 3])
        #expect(await drain(b) == [1, 2, 3])
        #expect(fanOut.isFinished)
        #expect(await drain(fanOut.subscribe()) == [])
        #expect(!fanOut.finish())
    }

    @Test func aSubscriberIsDroppedWhenItsStreamTerminates() async {
        let fanOut = FanOut<Int>()
        do {
            let stream = fanOut.subscribe()
            #expect(fanOut.subscriberCount == 1)
            _ = stream
        }
        #expect(fanOut.subscriberCount == 0)

        let stream = fanOut.subscribe()
        let reader = Task { await drain(stream) }
        fanOut.send(1)
        #expect(fanOut.subscriberCount == 1)
        reader.cancel()
        _ = await reader.value
        #expect(fanOut.subscriberCount == 0)
    }

    @Test func replayingTheLatestValueStartsEveryStreamWithIt() async {
        let fanOut = FanOut<String>(initial: "waiting", replay: .latest)
        let first = fanOut.subscribe()
        fanOut.send("joined")
        let second = fanOut.subscribe()
        #expect(fanOut.latest == "joined")
        fanOut.send("left")
        fanOut.finish()
        #expect(await drain(first) == ["waiting", "joined", "left"])
        #expect(await drain(second) == ["joined", "left"])
        // A subscriber after the end still learns the final value.
        #expect(await drain(fanOut.subscribe()) == ["left"])
    }

    @Test func theFirstSubscriberReceivesTheBacklog() async {
        let fanOut = FanOut<Int>(replay: .backlogToFirstSubscriber)
        fanOut.send(1)
        fanOut.send(2)
        let first = fanOut.subscribe()
        let second = fanOut.subscribe()
        fanOut.send(3)
        fanOut.finish()
        #expect(await drain(first) == [1, 2, 3])
        #expect(await drain(second) == [3])
    }

    @Test func aBoundedSubscriberKeepsTheNewestValues() async {
        let fanOut = FanOut<Int>(buffering: .newest(2))
        let slow = fanOut.subscribe()
        for n in 1...5 { fanOut.send(n) }
        fanOut.finish()
        #expect(await drain(slow) == [4, 5])

        let early = FanOut<Int>(replay: .backlogToFirstSubscriber, buffering: .newest(2))
        for n in 1...5 { early.send(n) }
        let late = early.subscribe()
        early.finish()
        #expect(await drain(late) == [4, 5])
    }

    @Test func finishingWithALastValueTellsCurrentAndLaterSubscribers() async {
        let fanOut = FanOut<String>()
        let current = fanOut.subscribe()
        fanOut.send("message")
        #expect(fanOut.finish(last: "closed"))
        #expect(await drain(current) == ["message", "closed"])
        #expect(await drain(fanOut.subscribe()) == ["closed"])

        let announced = FanOut<String>()
        let listener = announced.subscribe()
        announced.send("closed")
        // The last value went out already: current subscribers do not get it twice, later ones get it once.
        announced.finish(last: "closed", sendLastNow: false)
        #expect(await drain(listener) == ["closed"])
        #expect(await drain(announced.subscribe()) == ["closed"])
    }

    /// Counters shared with the threads of the test below.
    private final class Progress: Sendable {
        let rounds = Atomic<Int>(0)
        let sent = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
    }

    @Test("subscribers cancelled while values are being sent to them: no deadlock, and their streams are dropped")
    func cancellingWhileSendingDoesNotDeadlock() async throws {
        // A cancelled subscriber's stream ends in the runtime's cancellation handler (under that task's status lock)
        // while `send` yields to it under the fan-out's lock: the two must not wait for each other. (A fan-out whose
        // termination handler waited for its lock deadlocked here within seconds, taking the test run with it; both
        // sides run on threads of their own so that a partial stall shows as an issue instead.)
        let fanOut = FanOut<Int>(buffering: .newest(4))
        let progress = Progress()
        let rounds = 1_500
        Thread.detachNewThread {
            var n = 0
            while !progress.stop.load(ordering: .relaxed) {
                fanOut.send(n)
                n += 1
                progress.sent.store(n, ordering: .relaxed)
            }
        }
        Thread.detachNewThread {
            for _ in 0..<rounds {
                let readers = (0..<4).map { _ in
                    let stream = fanOut.subscribe()
                    return Task { for await _ in stream {} }
                }
                usleep(100)
                for reader in readers { reader.cancel() }
                progress.rounds.add(1, ordering: .relaxed)
            }
        }
        var last = (rounds: -1, sent: -1)
        var stalled = 0
        // Bounded: 60 s in all, or 3 s without progress on either side.
        for _ in 0..<600 where progress.rounds.load(ordering: .relaxed) < rounds && stalled < 30 {
            try await Task.sleep(for: .milliseconds(100))
            let now = (rounds: progress.rounds.load(ordering: .relaxed), sent: progress.sent.load(ordering: .relaxed))
            stalled = now == last ? stalled + 1 : 0
            last = now
        }
        progress.stop.store(true, ordering: .relaxed)
        #expect(progress.rounds.load(ordering: .relaxed) == rounds,
                "stalled after \(progress.rounds.load(ordering: .relaxed)) rounds and \(progress.sent.load(ordering: .relaxed)) values")
        // The ended streams are gone (the last round's may still be on their way out).
        try await Task.sleep(for: .milliseconds(200))
        fanOut.send(-1)
        #expect(fanOut.subscriberCount <= 4)
    }
}
