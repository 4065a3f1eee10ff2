import Foundation
import Testing
@testable import TandemCore

/// A whole session driven through the authority, checking after every step that each connected peer's latest
/// timeline is the authority's and that generations only grow.
@Suite("Session authority: a full session")
struct AuthorityFullSessionTests {
    struct Peers {
        var lastTimeline: [ParticipantID: Timeline] = [:]
        var notices: [ParticipantID: [Notice]] = [:]

        mutating func deliver(_ actions: [SessionAuthority.Action]) {
            for case .send(let message, let to) in actions {
                switch message {
                case .welcome(let snapshot): lastTimeline[to] = snapshot.timeline
                case .timeline(let timeline):
                    if let previous = lastTimeline[to] { #expect(timeline.generation > previous.generation) }
                    lastTimeline[to] = timeline
                case .notice(let notice): notices[to, default: []].append(notice)
                default: break
                }
            }
        }
    }

    @Test func fourPeersPlayPauseSeekChangeRateStallAndEnd() {
        // carol (not the host) ends the session for everyone, which this configuration allows.
        var h = AuthorityHarness(configuration: AuthorityConfiguration.withScheduledStarts.withHostRolesForEveryone)
        var peers = Peers()
        func check(_ h: AuthorityHarness, _ peers: Peers, _ step: String) {
            for state in h.authority.participants {
                #expect(peers.lastTimeline[state.participant.id] == h.authority.timeline, "\(step): \(state.participant.name)")
            }
        }
        var ids: [ParticipantID] = []
        for (name, preroll) in [("alice", 80.0), ("bob", 120.0), ("carol", 150.0), ("dave", 900.0)] {
            let (id, actions) = h.join(name, preroll: .milliseconds(preroll), host: name == "alice")
            peers.deliver(actions)
            peers.deliver(h.send(.readiness(.loading(progress: nil)), from: id))
            peers.deliver(h.send(.linkReport(oneWayDelay: .milliseconds(Double(10 * (ids.count + 1))), errorBound: 0),
                                 from: id))
            ids.append(id)
        }
        let (alice, bob, carol, dave) = (ids[0], ids[1], ids[2], ids[3])
        for id in [alice, bob, carol] { peers.deliver(h.send(.readiness(.ready(AuthorityHarness.info())), from: id)) }
        peers.deliver(h.request(.play, from: alice))
        #expect(h.authority.timeline.waitingFor == [dave: [.loading]])
        check(h, peers, "waiting for dave")

        h.advance(ms: 4_000)
        peers.deliver(h.send(.readiness(.ready(AuthorityHarness.info())), from: dave))
        #expect(h.authority.timeline.isPlaying)
        // dave: 40 ms delay + 900 ms preroll + 40 ms margin.
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(980))
        check(h, peers, "started")

        h.advance(ms: 60_000)
        peers.deliver(h.request(.pause(itemTime: .milliseconds(59_020)), from: bob))
        #expect(h.authority.timeline.anchorItemTime == .milliseconds(59_020))
        check(h, peers, "paused")

        h.advance(ms: 2_000)
        peers.deliver(h.request(.seek(itemTime: .seconds(1_800), play: true), from: carol))
        let seekGeneration = h.authority.timeline.generation
        check(h, peers, "seeking")
        for id in ids {
            h.advance(ms: 100)
            peers.deliver(h.send(.prepared(generation: seekGeneration), from: id))
            check(h, peers, "prepared \(id)")
        }
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.anchorItemTime == .seconds(1_800))

        h.advance(ms: 10_000)
        peers.deliver(h.request(.rate(1.5), from: dave))
        check(h, peers, "rate")
        // Like a seek: the new line starts once the slowest (dave: 40 ms away, 900 ms preroll) can have prerolled
        // there, without a prepare round.
        #expect(h.authority.timeline.rate == 1.5 && h.authority.timeline.isPlaying)
        #expect(h.authority.timeline.anchorSessionTime == h.now + .milliseconds(980))
        for id in ids {
            h.advance(ms: 20)
            peers.deliver(h.send(.prepared(generation: h.authority.timeline.generation), from: id))
        }
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.rate == 1.5)
        check(h, peers, "rate, prepared")

        h.advance(ms: 10_000)
        peers.deliver(h.send(.suspension(.begin(id: 1, reason: .stallRecovery)), from: carol))
        #expect(h.authority.timeline.waitingFor == [carol: [.stallRecovery]])
        h.advance(ms: 1_500)
        peers.deliver(h.send(.suspension(.end(id: 1, proposedItemTime: nil)), from: carol))
        #expect(h.authority.timeline.isPlaying && h.authority.timeline.rate == 1.5)
        check(h, peers, "after stall")

        h.advance(ms: 5_000)
        let (eve, joinActions) = h.join("eve", preroll: .milliseconds(300))
        peers.deliver(joinActions)
        let beforeLateJoin = h.authority.timeline
        peers.deliver(h.send(.readiness(.loading(progress: nil)), from: eve))
        peers.deliver(h.send(.readiness(.ready(AuthorityHarness.info())), from: eve))
        #expect(h.authority.timeline == beforeLateJoin)
        check(h, peers, "late joiner")

        for id in ids {
            let texts = peers.notices[id, default: []].map(\.text)
            #expect(texts.contains("bob paused at 0:59"))
            #expect(texts.contains("carol jumped to 30:00"))
            #expect(texts.contains("dave set the speed to 1.5×"))
            #expect(texts.contains("eve joined"))
        }

        let end = h.send(.end, from: carol)
        #expect(Set(end.closes.keys) == Set(ids + [eve]))
        #expect(end.sessionEnd == InvalidationReason(code: .ended, message: "carol ended the session"))
    }
}
