import Foundation
import Testing
@testable import TandemCore

/// A peer prerolled where the group starts may still need its timeline some time ahead (a browser's play() takes
/// 80–100 ms to show its first frame): it reports that as `linkReport.startLatency`, and starts from a prepared
/// position are scheduled that much ahead for it, so it starts on the line instead of seeking further on.
@Suite struct StartLatencyTests {
    static let margin = AuthorityConfiguration().startMargin

    /// Alice (host, on the server's machine) and bob (30 ms away, 300 ms preroll), both prepared at 1:00, paused.
    static func preparedPair(startLatency: TimeSpan?) -> (AuthorityHarness, ParticipantID, ParticipantID) {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", preroll: .milliseconds(100), host: true)
        let b = h.joinReady("bob", preroll: .milliseconds(300))
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, startLatency: startLatency), from: b)
        h.request(.seek(itemTime: .seconds(60), play: false), from: a)
        let generation = h.authority.timeline.generation
        h.send(.prepared(generation: generation), from: a)
        h.send(.prepared(generation: generation), from: b)
        h.advance(ms: 500)
        return (h, a, b)
    }

    @Test func aPlayFromAPreparedPositionAllowsForAPagesStartLatency() {
        var (h, a, _) = Self.preparedPair(startLatency: nil)
        h.request(.play, from: a)
        // Without a start latency a prepared peer adds only its delay.
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(30) + Self.margin)

        (h, a, _) = Self.preparedPair(startLatency: .milliseconds(100))
        h.request(.play, from: a)
        #expect(h.authority.timeline.isPlaying)
        #expect(h.authority.timeline.anchorItemTime == .seconds(60))
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(30 + 100) + Self.margin)
    }

    @Test func theRestartAfterAPrepareRoundAllowsForIt() {
        var h = AuthorityHarness(configuration: .withPrepareRounds)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.send(.linkReport(oneWayDelay: .milliseconds(2), errorBound: 0, startLatency: .milliseconds(90)), from: b)
        h.request(.play, from: a)
        h.advance(ms: 10_000)
        h.request(.seek(itemTime: .seconds(600), play: true), from: a)
        let waiting = h.authority.timeline
        #expect(!waiting.isPlaying)
        h.send(.prepared(generation: waiting.generation), from: a)
        h.advance(ms: 40)
        h.send(.prepared(generation: waiting.generation), from: b)
        let playing = h.authority.timeline
        #expect(playing.isPlaying && playing.anchorItemTime == .seconds(600))
        // Everyone prepared: bob's 2 ms delay, his play()'s 90 ms and the margin (not 2 ms and the margin, which
        // a page meets only by seeking further on and starting late).
        #expect(playing.anchorSessionTime == h.now + .milliseconds(92) + AuthorityConfiguration().shortLinkStartMargin)
    }

    @Test func theLatestFigureCountsBoundedAndTheOthersHearIt() {
        var (h, a, b) = Self.preparedPair(startLatency: .milliseconds(100))
        let state = { h.authority.participants.first { $0.participant.id == b } }
        #expect(state()?.startLatency == .milliseconds(100))
        #expect(h.authority.participants.first { $0.participant.id == a }?.startLatency == nil)
        // A report without the figure keeps the last one; a new one replaces it.
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0), from: b)
        #expect(state()?.startLatency == .milliseconds(100))
        h.advance(ms: 2_000)
        let told = h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, startLatency: .milliseconds(60)),
                          from: b)
        #expect(state()?.startLatency == .milliseconds(60))
        #expect(told.messages(to: a).contains { if case .participants = $0 { true } else { false } })
        // An absurd figure (an hour, or negative) is bounded: one peer cannot hold every start for long.
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, startLatency: .seconds(3_600)), from: b)
        #expect(state()?.startLatency == .seconds(1))
        h.request(.play, from: a)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(30) + .seconds(1) + Self.margin)
        h.send(.linkReport(oneWayDelay: .milliseconds(30), errorBound: 0, startLatency: .milliseconds(-5)), from: b)
        #expect(state()?.startLatency == .zero)
    }

    @Test func theListCarriesItOnlyWhenReported() throws {
        var state = ParticipantState(participant: Participant(id: ParticipantID("p7"), name: "page"))
        let plain = try JSONEncoder().encode(state)
        #expect(!String(decoding: plain, as: UTF8.self).contains("startLatency"))
        state.startLatency = .milliseconds(95)
        let decoded = try JSONDecoder().decode(ParticipantState.self, from: JSONEncoder().encode(state))
        #expect(decoded.startLatency == .milliseconds(95))
        #expect(try JSONDecoder().decode(ParticipantState.self, from: plain).startLatency == nil)
        // A page's report, as the page sends it.
        let report = #"{"linkReport":{"oneWayDelay":1000000,"errorBound":1000000,"startLatency":95000000}}"#
        let message = try JSONDecoder().decode(ClientMessage.self, from: Data(report.utf8))
        guard case .linkReport(_, _, _, _, _, _, let latency) = message else { Issue.record("\(message)"); return }
        #expect(latency == .milliseconds(95))
    }
}
