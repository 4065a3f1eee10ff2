import Foundation
import Testing
@testable import TandemCore

@Suite("A relay's passage of shared media: the session's cap, the bounds on open requests, timeouts")
struct MediaPassageTests {
    let bob = ParticipantID("p2"), carol = ParticipantID("p3")
    let start = LocalInstant(nanoseconds: 1_000_000_000)

    func limits(rate: Int = 100_000) -> MediaPassageLimits {
        var limits = MediaPassageLimits()
        limits.bytesPerSecond = rate
        limits.maxRequestBytes = 10_000
        limits.openPerMember = 3
        limits.openPerSession = 5
        return limits
    }

    func forwarded(_ actions: [MediaPassage.Action]) -> [MediaPassage.Key] {
        actions.compactMap { if case .forward(let key) = $0 { key } else { nil } }
    }

    @Test("over any window of T seconds at most rate × T + one request's bytes go on to the host")
    func capHolds() {
        var passage = MediaPassage(limits: limits(), now: start)
        var sent: [(at: LocalInstant, bytes: Int)] = []
        var now = start
        var id: UInt32 = 0
        // Requests of 10 kB keep arriving (answered as soon as forwarded); time moves in 1 ms steps for 3 s.
        for step in 0..<3_000 {
            now = start + .milliseconds(Double(step))
            if passage.openCount(for: bob) < 3 {
                id += 1
                for key in forwarded(passage.request(.init(member: bob, id: id), length: 10_000, now: now)) {
                    sent.append((now, 10_000))
                    let passed = passage.answered(key)
                    #expect(passed)
                }
            }
            for key in forwarded(passage.advance(now: now)) {
                sent.append((now, 10_000))
                let passed = passage.answered(key)
                #expect(passed)
            }
        }
        for (index, first) in sent.enumerated() {
            var bytes = 0
            for later in sent[index...] {
                bytes += later.bytes
                let window = (later.at - first.at).seconds
                #expect(Double(bytes) <= 100_000 * window + 10_000 + 1, "\(bytes) bytes in \(window) s")
            }
        }
        let total = sent.reduce(0) { $0 + $1.bytes }
        #expect(total >= 290_000 && total <= 310_000, "about 3 s at the cap: \(total)")
    }

    @Test("open requests are bounded per member and per session; a bad request is refused; the rest wait for the cap")
    func bounds() {
        var passage = MediaPassage(limits: limits(rate: 1), now: start)
        func ask(_ member: ParticipantID, _ id: UInt32, _ length: Int) -> [MediaPassage.Action] {
            passage.request(.init(member: member, id: id), length: length, now: start)
        }
        func answered(_ member: ParticipantID, _ id: UInt32) -> Bool { passage.answered(.init(member: member, id: id)) }
        // The bucket starts with one request's bytes: the first goes on, the others wait (the rate is 1 B/s).
        let first = forwarded(ask(bob, 1, 10_000)), second = forwarded(ask(bob, 2, 10_000))
        #expect(first.count == 1 && second.isEmpty)
        #expect(forwarded(ask(bob, 3, 10_000)).isEmpty)
        let overMember = ask(bob, 4, 10)
        #expect(overMember == [.refuse(.init(member: bob, id: 4), .busy)])
        let empty = ask(carol, 1, 0), tooLarge = ask(carol, 1, 10_001), again = ask(bob, 2, 10)
        #expect(empty == [.refuse(.init(member: carol, id: 1), .badRequest)])
        #expect(tooLarge == [.refuse(.init(member: carol, id: 1), .badRequest)])
        #expect(again == [.refuse(.init(member: bob, id: 2), .badRequest)], "a number already open")
        _ = ask(carol, 1, 10)
        _ = ask(carol, 2, 10)
        #expect(passage.openCount == 5)
        let overSession = ask(carol, 3, 10)
        #expect(overSession == [.refuse(.init(member: carol, id: 3), .busy)], "the session's bound")
        // An answer for a request that was never forwarded, or of someone else, is dropped.
        let notForwarded = answered(bob, 2), unknown = answered(carol, 9), forwardedOne = answered(bob, 1)
        let twice = answered(bob, 1)
        #expect(!notForwarded && !unknown && forwardedOne)
        #expect(!twice, "answered once")
        // A member who leaves frees its places.
        passage.forget(bob)
        #expect(passage.openCount == 2)
    }

    @Test("a request open longer than the timeout is refused and its place freed; the wake-up says when to look")
    func timeout() {
        var passage = MediaPassage(limits: limits(rate: 1), now: start)
        _ = passage.request(.init(member: bob, id: 1), length: 10_000, now: start)
        let actions = passage.request(.init(member: bob, id: 2), length: 10_000, now: start)
        #expect(actions.contains(.wakeUp(at: start + .seconds(10))), "\(actions)")
        let later = passage.advance(now: start + .seconds(10))
        #expect(later.contains(.refuse(.init(member: bob, id: 1), .timedOut)))
        #expect(later.contains(.refuse(.init(member: bob, id: 2), .timedOut)))
        #expect(passage.openCount == 0)
        let late = passage.answered(.init(member: bob, id: 1))
        #expect(!late, "a late answer is dropped")
    }

    @Test("a joiner's read window grows while pieces come back at the path's own delay and halves when they queue")
    func readWindow() {
        var window = MediaReadWindow(least: 2, most: 16, queueTarget: .milliseconds(40))
        #expect(window.limit == 2)
        for _ in 0..<30 { window.completed(roundTrip: .milliseconds(100)) }
        #expect(window.limit == 16, "a long path with no queue: as many as the relay lets a member have")
        window.completed(roundTrip: .milliseconds(300))
        #expect(window.limit == 8)
        for _ in 0..<5 { window.completed(roundTrip: .milliseconds(400)) }
        #expect(window.limit == 2, "never below the least")
        window.completed(roundTrip: .milliseconds(120))
        #expect(window.limit == 3 && window.fastest == .milliseconds(100))
    }
}
