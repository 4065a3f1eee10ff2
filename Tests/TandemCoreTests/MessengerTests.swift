import Foundation
import Testing
import TandemCore
import TandemTesting

/// Collects the first `count` values of `stream`, giving up after `seconds`.
func collect<T: Sendable>(_ count: Int, from stream: AsyncStream<T>, within seconds: Double = 5) async -> [T] {
    await withTaskGroup(of: [T]?.self) { group in
        group.addTask {
            var values: [T] = []
            for await value in stream {
                values.append(value)
                if values.count == count { break }
            }
            return values
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        var result: [T] = []
        for await outcome in group {
            if let outcome { result = outcome }
            group.cancelAll()
            break
        }
        return result
    }
}

struct Chat: Codable, Sendable, Hashable {
    var text: String
    var number: Int
}

struct Cursor: Codable, Sendable, Hashable {
    var x: Double
}

/// Three participants on an in-memory hub.
func threePeople(_ configuration: AuthorityConfiguration = .init(), clock: ManualClock = ManualClock())
    async throws -> (InMemorySessionHub, InMemorySessionLink, InMemorySessionLink, InMemorySessionLink) {
    let hub = InMemorySessionHub(activity: nil, configuration: configuration, clock: clock)
    let alice = try await hub.connect(name: "alice", isHost: true)
    let bob = try await hub.connect(name: "bob")
    let carol = try await hub.connect(name: "carol")
    return (hub, alice, bob, carol)
}

@Suite struct MessengerTests {
    @Test func reliableMessagesArriveInSendOrderWithTheirSource() async throws {
        let (_, alice, bob, carol) = try await threePeople()
        let fromAlice = GroupSessionMessenger(link: alice)
        let atBob = GroupSessionMessenger(link: bob).messages(of: Chat.self)
        let atCarol = GroupSessionMessenger(link: carol).messages(of: Chat.self)
        let atAlice = GroupSessionMessenger(link: alice).messages(of: Chat.self)
        for n in 0..<50 { try await fromAlice.send(Chat(text: "hi", number: n)) }
        for stream in [atBob, atCarol] {
            let received = await collect(50, from: stream)
            #expect(received.map(\.0.number) == Array(0..<50))
            #expect(received.allSatisfy { $0.1.source == alice.localParticipantID && $0.1.delivery == .reliable })
        }
        // Nobody hears their own messages.
        try await GroupSessionMessenger(link: bob).send(Chat(text: "marker", number: -1))
        let first = await collect(1, from: atAlice)
        #expect(first.map(\.0.number) == [-1])
    }

    @Test func onlyReachesTheChosenParticipants() async throws {
        let (_, alice, bob, carol) = try await threePeople()
        let messenger = GroupSessionMessenger(link: alice)
        let atBob = GroupSessionMessenger(link: bob).messages(of: Chat.self)
        let atCarol = GroupSessionMessenger(link: carol).messages(of: Chat.self)
        try await messenger.send(Chat(text: "for bob", number: 1), to: .only([bob.localParticipantID]))
        try await messenger.send(Chat(text: "for all", number: 2))
        #expect(await collect(2, from: atBob).map(\.0.number) == [1, 2])
        #expect(await collect(1, from: atCarol).map(\.0.number) == [2])
    }

    @Test func typedAndRawMessagesGoToTheirOwnStreams() async throws {
        let (_, alice, bob, _) = try await threePeople()
        let messenger = GroupSessionMessenger(link: alice)
        let atBob = GroupSessionMessenger(link: bob)
        let chats = atBob.messages(of: Chat.self)
        let cursors = atBob.messages(of: Cursor.self)
        let raw = atBob.messages(of: Data.self)
        try await messenger.send(Data([1, 2, 3]))
        try await messenger.send(Cursor(x: 0.5))
        try await messenger.send(Chat(text: "x", number: 7))
        #expect(await collect(1, from: chats).map(\.0) == [Chat(text: "x", number: 7)])
        #expect(await collect(1, from: cursors).map(\.0) == [Cursor(x: 0.5)])
        #expect(await collect(1, from: raw).map(\.0) == [Data([1, 2, 3])])
    }

    @Test func oversizedMessagesAreRefusedBeforeSending() async throws {
        let (_, alice, bob, _) = try await threePeople()
        let messenger = GroupSessionMessenger(link: alice)
        let raw = GroupSessionMessenger(link: bob).messages(of: Data.self)
        // 256 KiB on the wire, the messenger's one-byte tag included.
        await #expect(throws: GroupSessionMessenger.MessengerError.messageTooLarge(size: 256 * 1024 + 1, limit: 256 * 1024)) {
            try await messenger.send(Data(count: 256 * 1024))
        }
        await #expect(throws: GroupSessionMessenger.MessengerError.self) {
            try await messenger.send(Chat(text: String(repeating: "x", count: 300_000), number: 0))
        }
        try await messenger.send(Data(count: 256 * 1024 - 1))
        #expect(await collect(1, from: raw).map(\.0.count) == [256 * 1024 - 1])
    }

    @Test func aSenderBeyondItsRateIsToldToWait() async throws {
        let clock = ManualClock()
        let (_, alice, _, _) = try await threePeople(clock: clock)
        var limits = GroupSessionMessenger.Limits()
        limits.burst = 5
        limits.messagesPerSecond = 10
        let messenger = GroupSessionMessenger(link: alice, limits: limits, clock: clock)
        for n in 0..<5 { try await messenger.send(Chat(text: "", number: n)) }
        do {
            try await messenger.send(Chat(text: "", number: 5))
            Issue.record("the sixth message in a burst of five was sent")
        } catch GroupSessionMessenger.MessengerError.rateLimited(let after) {
            #expect(after > 0 && after <= 100_000_000)
        }
        clock.advance(by: 100_000_000)
        try await messenger.send(Chat(text: "", number: 6))
    }
}

@Suite struct JournalTests {
    @Test func attachmentsReachEveryoneAndLateJoinersGetTheExistingOnes() async throws {
        let hub = InMemorySessionHub(activity: nil)
        let alice = try await hub.connect(name: "alice", isHost: true)
        let bob = try await hub.connect(name: "bob")
        // The journals run in a task group the test owns, as an app runs them.
        try await withThrowingDiscardingTaskGroup { group in
            let aliceJournal = GroupSessionJournal(link: alice)
            let bobJournal = GroupSessionJournal(link: bob)
            group.addTask { await bobJournal.run() }
            let bobUpdates = bobJournal.attachments
            let photo = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let added = try await aliceJournal.add(photo, name: "photo.png")
            #expect(aliceJournal.currentAttachments.map(\.id) == [added.id])
            let seen = await collect(2, from: bobUpdates)   // [] then [photo]
            #expect(seen.last?.map(\.data) == [photo])
            #expect(seen.last?.first?.info.owner == alice.localParticipantID)

            let carol = try await hub.connect(name: "carol")
            let carolJournal = GroupSessionJournal(link: carol)
            group.addTask { await carolJournal.run() }
            let carolSeen = await collect(1, from: carolJournal.attachments.filter { !$0.isEmpty }.asStream())
            #expect(carolSeen.first?.map(\.info.name) == ["photo.png"])
            #expect(carolSeen.first?.first?.data == photo)

            let carolUpdates = carolJournal.attachments
            try await aliceJournal.remove(added)
            #expect(aliceJournal.currentAttachments.isEmpty)
            let afterRemoval = await collect(2, from: carolUpdates)
            #expect(afterRemoval.last == [])
            group.cancelAll()
        }
    }

    @Test func aDamagedAttachmentIsDropped() async throws {
        let hub = InMemorySessionHub(activity: nil)
        let alice = try await hub.connect(name: "alice", isHost: true)
        let bob = try await hub.connect(name: "bob")
        // Alice's hasher disagrees with Bob's: what arrives does not match the announced digest.
        // The journals run in a task group the test owns, as an app runs them.
        try await withThrowingDiscardingTaskGroup { group in
            let aliceJournal = GroupSessionJournal(link: alice, hasher: { _ in "0000" })
            let bobJournal = GroupSessionJournal(link: bob, hasher: { data in String(data.count) })
            group.addTask { await bobJournal.run() }
            let bobUpdates = bobJournal.attachments
            try await aliceJournal.add(Data(count: 10), name: "a")
            try await GroupSessionJournal(link: alice, hasher: { data in String(data.count) }).add(Data(count: 20), name: "b")
            let seen = await collect(2, from: bobUpdates)
            #expect(seen.last?.map(\.info.name) == ["b"])
            #expect(bobJournal.failures.count == 1)
            group.cancelAll()
        }
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// Wraps any async sequence as an `AsyncStream`.
    func asStream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let task = Task {
            do { for try await value in self { continuation.yield(value) } } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
