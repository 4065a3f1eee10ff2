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
}
