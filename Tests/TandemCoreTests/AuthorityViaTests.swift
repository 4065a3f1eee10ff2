import Foundation
import Testing
@testable import TandemCore

/// A participant followed another way (a Syncplay client) carries `via` for everyone to see.
@Suite("Authority: participants followed another way")
struct AuthorityViaTests {
    @Test("via is kept, bounded to 16 characters, cleaned, survives a reconnect, and survives the wire")
    func viaIsKeptAndBounded() throws {
        var h = AuthorityHarness()
        let (ann, _) = h.join("ann", host: true)
        guard case .joined(let bob, _) = h.authority.join(name: "bob", prerollEstimate: .zero, wantsHost: false,
                                                         newReconnectToken: "t-bob", via: "syncplay", now: h.now) else {
            Issue.record("bob refused"); return
        }
        guard case .joined(let eve, _) = h.authority.join(name: "eve", prerollEstimate: .zero, wantsHost: false,
                                                         newReconnectToken: "t-eve",
                                                         via: "a\u{1B}very-long-way-of-following-this", now: h.now) else {
            Issue.record("eve refused"); return
        }
        let participants = Dictionary(uniqueKeysWithValues: h.authority.participants.map { ($0.participant.id, $0.participant) })
        #expect(participants[ann]?.via == nil)
        #expect(participants[bob]?.via == "syncplay")
        let eveVia = try #require(participants[eve]?.via)
        #expect(eveVia.count <= 16 && !eveVia.contains("\u{1B}"))

        // A reconnect with the token keeps the identity and says how it follows now.
        guard case .joined(let again, _) = h.authority.join(name: "bob", reconnectAs: bob, reconnectToken: "t-bob",
                                                           prerollEstimate: .zero, wantsHost: false,
                                                           newReconnectToken: "t-bob2", via: "syncplay", now: h.now) else {
            Issue.record("bob's reconnect refused"); return
        }
        #expect(again == bob && h.authority.participants.first { $0.participant.id == bob }?.participant.via == "syncplay")

        // On the wire: present when set, absent otherwise, and a join without it decodes as before.
        let encoded = String(decoding: try JSONEncoder().encode(participants[bob]!), as: UTF8.self)
        #expect(encoded.contains(#""via":"syncplay""#))
        #expect(!String(decoding: try JSONEncoder().encode(participants[ann]!), as: UTF8.self).contains("via"))
        let old = try JSONDecoder().decode(ClientMessage.self, from: Data(#"{"join":{"name":"x","prerollEstimate":0}}"#.utf8))
        guard case .join(_, _, _, _, _, _, let via, _, _) = old else { Issue.record("not a join"); return }
        #expect(via == nil)
    }
}
