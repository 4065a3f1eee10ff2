import Foundation
import Testing
@testable import TandemCore

/// Participant abuse inside a session: identities, roles, journal quotas and bounded shared state.
@Suite struct AuthorityHardeningTests {
    // MARK: Reconnect tokens

    @Test func theWelcomeCarriesTheJoinersOwnTokenAndParticipantListsNever() throws {
        var h = AuthorityHarness()
        let (a, joinedA) = h.join("alice", host: true)
        let (b, joinedB) = h.join("bob")
        #expect(joinedA.welcome(to: a)?.reconnectToken == h.token(of: a))
        #expect(joinedB.welcome(to: b)?.reconnectToken == h.token(of: b))
        #expect(h.token(of: a) != h.token(of: b))
        // bob's welcome does not carry alice's token, and nothing else carries bob's (alice hears of him).
        let welcome = try JSONEncoder().encode(try #require(joinedB.welcome(to: b)))
        #expect(!String(decoding: welcome, as: UTF8.self).contains(h.token(of: a)))
        #expect(!joinedB.messages(to: a).isEmpty)
        for case .send(let message, _) in joinedB {
            if case .welcome = message { continue }
            #expect(!String(decoding: try JSONEncoder().encode(message), as: UTF8.self).contains(h.token(of: b)))
        }
    }

    @Test func reconnectAsWithoutTheRightTokenGetsANewIdentityAndNoHostRole() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        _ = h.authority.connectionLost(a, now: h.now)
        let (missing, _) = h.join("mallory", host: true, reconnectAs: a)
        let (wrong, _) = h.join("mallory", host: true, reconnectAs: a, token: "token-9")
        let (almost, _) = h.join("mallory", host: true, reconnectAs: a, token: h.token(of: a) + "x")
        for id in [missing, wrong, almost] {
            #expect(id != a)
            #expect(h.authority.members[id]?.isHost == false)
        }
        #expect(h.authority.members[a]?.isConnected == false)
    }

    @Test func theRightTokenTakesBackTheIdentityAndTheHostRoleAfterADrop() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let token = h.token(of: a)
        _ = h.authority.connectionLost(a, now: h.now)
        h.advance(ms: 2_000)
        let (again, actions) = h.join("alice", reconnectAs: a, token: token)
        #expect(again == a)
        #expect(h.authority.members[a]?.isHost == true)
        // The token is kept, so it stays good for a later reconnect.
        #expect(actions.welcome(to: a)?.reconnectToken == token)
        #expect(actions.notices(.joined, to: a).first?.text == "alice reconnected")
    }

    @Test func theRightTokenTakesOverAStillConnectedIdentity() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        h.send(.journal(.begin(AttachmentInfo(id: "half", owner: a, name: "half.bin", size: 10, sha256: ""))), from: a)
        let (again, actions) = h.join("alice", reconnectAs: a, token: h.token(of: a))
        #expect(again == a)
        #expect(h.authority.members[a]?.isHost == true)
        #expect(h.authority.participants.map(\.participant.id) == [a, b])
        // The authority closes nobody (the transport replaces the connection); what it was sending is dropped.
        #expect(actions.closes.isEmpty)
        #expect(actions.messages(to: b).contains { if case .journal(.failed(id: "half", _)) = $0 { true } else { false } })
        #expect(h.authority.attachments["half"] == nil)
    }

    @Test func tokensMatchOnlyWhenEqual() {
        #expect(TextBounds.tokensMatch("abc", "abc"))
        #expect(!TextBounds.tokensMatch("abd", "abc"))
        #expect(!TextBounds.tokensMatch("ab", "abc"))
        #expect(!TextBounds.tokensMatch("", ""))
    }

    // MARK: Roles

    @Test func onlyTheFirstParticipantAskingForItGetsTheHostRole() {
        var config = AuthorityConfiguration()
        config.endsWhenHostLeaves = false
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let (b, _) = h.join("bob", host: true)
        #expect(h.authority.members[a]?.isHost == true)
        #expect(h.authority.members[b]?.isHost == false)
        h.send(.leave, from: a)
        let (c, _) = h.join("carol", host: true)
        #expect(h.authority.members[c]?.isHost == false)
    }

    @Test func aJoinerCannotEndTheSessionForEveryone() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let refused = h.send(.end, from: b)
        #expect(refused.refusals(to: b) == ["only the host can end the session for everyone; leave with q instead"])
        #expect(refused.closes.isEmpty && refused.sessionEnd == nil && h.authority.endReason == nil)
        h.request(.play, from: a)
        #expect(h.authority.timeline.isPlaying)
        let ended = h.send(.end, from: a)
        #expect(ended.sessionEnd == InvalidationReason(code: .ended, message: "alice ended the session"))
    }

    @Test func aJoinerCannotChangeTheActivityUnlessTheConfigurationAllows() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        var other = AuthorityHarness.movie
        other.itemID = "other"
        let refused = h.send(.setActivity(other), from: b)
        #expect(refused.refusals(to: b) == ["only the host can change the activity"])
        #expect(refused.messages(to: a).isEmpty)
        #expect(h.authority.activity == AuthorityHarness.movie)
        h.send(.setActivity(other), from: a)
        #expect(h.authority.activity == other)

        var everyone = AuthorityConfiguration()
        everyone.everyoneMayChangeActivity = true
        var open = AuthorityHarness(configuration: everyone)
        open.joinReady("alice", host: true)
        let bob = open.joinReady("bob")
        open.send(.setActivity(other), from: bob)
        #expect(open.authority.activity == other)
    }

    @Test func removingSomeoneElsesAttachmentIsTheHosts() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        let c = h.joinReady("carol")
        for (id, owner) in [("ha", a), ("hb", a), ("bb", b)] {
            h.send(.journal(.begin(AttachmentInfo(id: id, owner: owner, name: "\(id).txt", size: 0, sha256: ""))),
                   from: owner)
            h.send(.journal(.commit(id: id)), from: owner)
        }
        let refused = h.send(.journal(.remove(id: "ha")), from: b)
        #expect(refused.refusals(to: b) == ["only the host can remove alice's attachment; you can remove your own attachments"])
        #expect(refused.messages(to: a).isEmpty && refused.messages(to: c).isEmpty)
        #expect(h.authority.committedAttachments.map(\.id) == ["ha", "hb", "bb"])
        // The owner removes its own; the host removes anyone's.
        h.send(.journal(.remove(id: "hb")), from: a)
        let byHost = h.send(.journal(.remove(id: "bb")), from: a)
        #expect(byHost.messages(to: b) == [.journal(.remove(id: "bb"))])
        #expect(h.authority.committedAttachments.map(\.id) == ["ha"])

        var everyone = AuthorityConfiguration()
        everyone.everyoneMayRemoveAttachments = true
        var open = AuthorityHarness(configuration: everyone)
        let host = open.joinReady("alice", host: true)
        let bob = open.joinReady("bob")
        open.send(.journal(.begin(AttachmentInfo(id: "x", owner: host, name: "x", size: 0, sha256: ""))), from: host)
        open.send(.journal(.remove(id: "x")), from: bob)
        #expect(open.authority.attachments.isEmpty)
    }

    // MARK: Journal quotas

    static func begin(_ h: inout AuthorityHarness, _ id: String, size: Int64, from owner: ParticipantID) -> [SessionAuthority.Action] {
        h.send(.journal(.begin(AttachmentInfo(id: id, owner: owner, name: id, size: size, sha256: ""))), from: owner)
    }

    static func failure(_ actions: [SessionAuthority.Action], to id: ParticipantID) -> String? {
        for case .journal(.failed(_, let reason)) in actions.messages(to: id) { return reason }
        return nil
    }

    @Test func attachmentCountsAreLimitedPerParticipantAndPerSession() {
        var config = AuthorityConfiguration()
        config.maxAttachmentsPerParticipant = 2
        config.maxAttachmentsPerSession = 3
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        _ = Self.begin(&h, "a1", size: 1, from: a)
        _ = Self.begin(&h, "a2", size: 1, from: a)
        let third = Self.begin(&h, "a3", size: 1, from: a)
        #expect(Self.failure(third, to: a) == "cannot add 'a3': you already have 2 attachments; the limit is 2 per "
            + "participant — remove one first")
        #expect(third.messages(to: b).isEmpty)
        _ = Self.begin(&h, "b1", size: 1, from: b)
        let full = Self.begin(&h, "b2", size: 1, from: b)
        #expect(Self.failure(full, to: b) == "cannot add 'b2': the session already has 3 attachments; the limit is 3 per session")
        // Removing one (committed or not) frees its place.
        h.send(.journal(.remove(id: "a1")), from: a)
        #expect(Self.failure(Self.begin(&h, "b2", size: 1, from: b), to: b) == nil)
    }

    @Test func attachmentBytesAreLimitedPerParticipantAndPerSession() {
        var config = AuthorityConfiguration()
        config.maxAttachmentBytesPerParticipant = 250
        config.maxAttachmentBytesPerSession = 400
        var h = AuthorityHarness(configuration: config)
        let a = h.joinReady("alice", host: true)
        let b = h.joinReady("bob")
        _ = Self.begin(&h, "a1", size: 200, from: a)
        let over = Self.begin(&h, "a2", size: 51, from: a)
        #expect(Self.failure(over, to: a) == "cannot add 'a2' (51 bytes): your attachments already hold 200 bytes; "
            + "the limit is 250 bytes per participant — remove one first")
        #expect(Self.failure(Self.begin(&h, "a2", size: 50, from: a), to: a) == nil)
        _ = Self.begin(&h, "b1", size: 150, from: b)
        let sessionFull = Self.begin(&h, "b2", size: 1, from: b)
        #expect(Self.failure(sessionFull, to: b)?.contains("the limit is 400 bytes per session") == true)
        // A failed upload frees its bytes.
        h.send(.journal(.failed(id: "a1", reason: "cancelled")), from: a)
        #expect(Self.failure(Self.begin(&h, "b2", size: 100, from: b), to: b) == nil)
        #expect(h.authority.journalUsage().bytes == 300 && h.authority.journalUsage().count == 3)
    }

    @Test func theDefaultQuotasRefuseTheTwentyHundredMegabyteAttachments() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        var accepted = 0
        for index in 0..<20 {
            let actions = Self.begin(&h, "big\(index)", size: 100_000_000, from: a)
            if Self.failure(actions, to: a) == nil { accepted += 1 }
        }
        #expect(accepted == 2)
        #expect(h.authority.journalUsage(of: a).bytes == 200_000_000)
    }

    // MARK: Bounded text

    @Test func namesAreCleanedAndBounded() {
        #expect(TextBounds.name("bob\nINFO forged line") == "bobINFO forged line")
        #expect(TextBounds.name("\u{1B}[31mred\u{1B}[0m\t") == "[31mred[0m")
        #expect(TextBounds.name("al\u{202E}ice\u{2028}") == "alice")
        #expect(TextBounds.name("  \n\t ") == "guest")
        #expect(TextBounds.name("") == "guest")
        #expect(TextBounds.name(String(repeating: "x", count: 300)) == String(repeating: "x", count: 64))
        // Multi-byte characters are never cut in half.
        let accented = TextBounds.name(String(repeating: "é", count: 40))
        #expect(accented.utf8.count == 64 && accented == String(repeating: "é", count: 32))
        let family = "👨‍👩‍👧"
        #expect(TextBounds.name(family) == family)
        // One Character of about a megabyte cannot be kept whole.
        let huge = "e" + String(repeating: "\u{301}", count: 524_263)
        #expect(huge.count == 1 && huge.utf8.count == 1_048_527)
        #expect(TextBounds.name(huge) == "guest")
    }

    @Test func theAuthorityStoresTheCleanName() {
        var h = AuthorityHarness()
        let (a, actions) = h.join("mallory\n2026-01-01 INFO admin joined", host: true)
        #expect(h.authority.participantName(a) == "mallory2026-01-01 INFO admin joined")
        #expect(actions.notices(.joined, to: a).first?.text == "mallory2026-01-01 INFO admin joined joined")
    }

    @Test func largeActivitiesAreRefusedAndTitlesTruncated() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        var big = AuthorityHarness.movie
        big.payload = Data(repeating: 0x41, count: 1 << 20)
        let refused = h.send(.setActivity(big), from: a)
        #expect(refused.refusals(to: a).first?.hasSuffix("the limit is 64 KiB — keep large data (e.g. a preview image) "
            + "small or send it as a journal attachment") == true)
        #expect(h.authority.activity == AuthorityHarness.movie)

        var longID = AuthorityHarness.movie
        longID.itemID = String(repeating: "i", count: 2_000)
        #expect(h.send(.setActivity(longID), from: a).refusals(to: a)
            == ["the activity's item id is 1 KiB; the limit is 1024 bytes"])

        var titled = AuthorityHarness.movie
        titled.metadata.title = "Line\n" + String(repeating: "t", count: 1_000)
        let changed = h.send(.setActivity(titled), from: a)
        #expect(h.authority.activity?.metadata.title?.utf8.count == 256)
        #expect(h.authority.activity?.metadata.title?.contains("\n") == false)
        #expect(changed.notices(.activityChanged, to: a).allSatisfy { $0.text.utf8.count <= TextBounds.maxNoticeBytes })
    }

    @Test func peerTextInParticipantStateIsBounded() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        h.send(.readiness(.failed(String(repeating: "f", count: 10_000))), from: a)
        if case .failed(let why)? = h.authority.members[a]?.readiness {
            #expect(why.utf8.count == TextBounds.maxNoticeBytes)
        } else {
            Issue.record("readiness not stored")
        }
        for index in 0..<20 {
            h.send(.suspension(.begin(id: UInt64(index), reason: .custom(String(repeating: "r", count: 1_000) + "\(index)"))),
                   from: a)
        }
        let held = h.authority.members[a]!.suspensions
        #expect(held.count == TextBounds.maxSuspensionsPerParticipant)
        #expect(held.allSatisfy { $0.reason.rawValue.utf8.count <= TextBounds.maxReasonBytes })
    }

    @Test func appMessageRecipientListsAreBounded() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let many = Set((0..<100).map { ParticipantID("p\($0)") })
        let actions = h.send(.appMessage(OutgoingAppMessage(recipients: .only(many), delivery: .reliable, sequence: 1,
                                                            payload: Data())), from: a)
        #expect(actions.refusals(to: a) == ["a message for 100 recipients; a session has at most 32 participants"])
    }

    @Test func longAttachmentNamesAreTruncatedAndLongIdsRefused() {
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let longName = String(repeating: "n", count: 1_000)
        _ = h.send(.journal(.begin(AttachmentInfo(id: "ok", owner: a, name: longName, size: 0, sha256: ""))), from: a)
        #expect(h.authority.attachments["ok"]?.info.name.utf8.count == TextBounds.maxAttachmentNameBytes)
        let longID = String(repeating: "i", count: 1_000)
        let refused = h.send(.journal(.begin(AttachmentInfo(id: longID, owner: a, name: "x", size: 0, sha256: ""))), from: a)
        #expect(Self.failure(refused, to: a) == "an attachment id must be 1 to 128 bytes")
        #expect(h.authority.attachments[longID] == nil)
    }

    /// A full session with everything as large as the bounds allow still welcomes a joiner far below 1 MiB.
    @Test func aMaximalSessionEncodesWellUnderTheFrameLimit() throws {
        var h = AuthorityHarness()
        let name = String(repeating: "ñ", count: 500)
        func fill(_ id: ParticipantID) {
            h.send(.readiness(.failed(String(repeating: "w", count: 10_000))), from: id)
            for reason in 0..<TextBounds.maxSuspensionsPerParticipant {
                let long = SuspensionReason.custom(String(repeating: "s", count: 500) + "\(reason)")
                h.send(.suspension(.begin(id: UInt64(reason), reason: long)), from: id)
            }
        }
        var ids: [ParticipantID] = []
        for index in 0..<31 {
            let (id, _) = h.join(name, host: index == 0)
            ids.append(id)
            fill(id)
        }
        #expect(ids.allSatisfy { h.authority.participantName($0)?.utf8.count == 64 })
        // 128 attachments with the longest ids and names.
        for index in 0..<128 {
            let owner = ids[index / 32]
            let id = String(format: "%03d", index) + String(repeating: "a", count: TextBounds.maxAttachmentIDBytes - 3)
            h.send(.journal(.begin(AttachmentInfo(id: id, owner: owner, name: String(repeating: "m", count: 1_000), size: 0,
                                                  sha256: String(repeating: "0", count: 64)))), from: owner)
            h.send(.journal(.commit(id: id)), from: owner)
        }
        #expect(h.authority.committedAttachments.count == 128)
        // The largest activity the limit lets through.
        var activity = AuthorityHarness.movie
        activity.metadata.title = String(repeating: "T", count: 10_000)
        activity.metadata.subtitle = String(repeating: "S", count: 10_000)
        activity.itemID = String(repeating: "I", count: TextBounds.maxIdentifierBytes)
        activity.activityIdentifier = String(repeating: "A", count: TextBounds.maxIdentifierBytes)
        let base = try JSONEncoder().encode(h.authority.bounded(activity).get()).count
        activity.payload = Data(repeating: 0x42, count: (64 * 1024 - base) * 3 / 4 - 8)
        h.send(.setActivity(activity), from: ids[0])
        #expect(h.authority.activity?.payload == activity.payload)
        for id in ids { fill(id) }
        // A waiting timeline naming everyone with every reason.
        h.request(.play, from: ids[0])

        let (last, joined) = h.join(name)
        fill(last)
        #expect(h.authority.participants.count == 32)
        let welcome = try #require(joined.welcome(to: last))
        let welcomeSize = try JSONEncoder().encode(ServerMessage.welcome(welcome)).count
        let participantsSize = try JSONEncoder().encode(ServerMessage.participants(h.authority.participants)).count
        let timelineSize = try JSONEncoder().encode(ServerMessage.timeline(h.authority.timeline)).count
        #expect(welcomeSize < 512 * 1024, "welcome of \(welcomeSize) bytes")
        #expect(participantsSize < 256 * 1024, "participants of \(participantsSize) bytes")
        #expect(timelineSize < 256 * 1024, "timeline of \(timelineSize) bytes")
    }
}
