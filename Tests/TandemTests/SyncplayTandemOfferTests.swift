import Foundation
import Testing
import TandemCore
import TandemPeer
@testable import TandemSyncplay

/// How Tandem peers in a Syncplay room find the session one of them offers: the offer in a file's
/// `tandemSession`, read back bounded, and the same choice made by everyone who looks.
@Suite("Syncplay: a Tandem session offered through the room")
struct SyncplayTandemOfferTests {
    static let invite = "tandem://127.0.0.1:7420/room-session#s3cret"

    static func member(_ offer: String?) -> SyncplayListedUser {
        SyncplayListedUser(file: SyncplayFile(name: "movie.webm", duration: 60, size: .number(1), tandemSession: offer),
                           isReady: true, controller: false)
    }

    @Test("the offer crosses a file setting unchanged; an oversized one is dropped and the file kept")
    func codec() throws {
        let file = SyncplayFile(name: "movie.webm", duration: 60, size: .number(42), tandemSession: Self.invite)
        let line = SyncplayCodec.encode(.set([.file(file)]))
        #expect(line.contains("\"tandemSession\""))
        #expect(try SyncplayCodec.decode(line) == [.set([.file(file)])])
        // Syncplay's own file, without the key, reads as before.
        let plain = SyncplayFile(name: "movie.webm", duration: 60, size: .number(42))
        #expect(try SyncplayCodec.decode(SyncplayCodec.encode(.set([.file(plain)]))) == [.set([.file(plain)])])
        let huge = #"{"Set":{"file":{"name":"a","duration":1,"size":1,"tandemSession":"\#(String(repeating: "x", count: 600))"}}}"#
        #expect(try SyncplayCodec.decode(huge) == [.set([.file(SyncplayFile(name: "a", duration: 1, size: .number(1)))])])
        let notText = #"{"Set":{"file":{"name":"a","duration":1,"size":1,"tandemSession":{"x":1}}}}"#
        #expect(try SyncplayCodec.decode(notText) == [.set([.file(SyncplayFile(name: "a", duration: 1, size: .number(1)))])])
    }

    @Test("everyone picks the same offer: the first member by name whose offer is an invite, never their own")
    func choice() {
        let other = "tandem://127.0.0.1:7421/other#key"
        let members = ["zoe": Self.member(other), "bob": Self.member(nil), "ann": Self.member("not an invite"),
                       "carl": Self.member(Self.invite), "me": Self.member("tandem://127.0.0.1:9/mine#k")]
        let found = SyncplayBridge.offeredSession(in: members, except: "me")
        #expect(found?.member == "carl")
        #expect(found?.invite.description == Self.invite)
        #expect(SyncplayBridge.offeredSession(in: ["me": Self.member(Self.invite), "bob": Self.member(nil)], except: "me") == nil)
        #expect(SyncplayBridge.offeredSession(in: [:], except: "me") == nil)
    }

    @Test("the address offered is the one this machine reaches the Syncplay server from")
    func address() {
        #expect(localAddress(toward: "127.0.0.1", port: 8999) == "127.0.0.1")
        #expect(localAddress(toward: "::1", port: 8999) == "::1")
        #expect(localAddress(toward: "no-such-host.invalid", port: 8999) == nil)
    }
}
