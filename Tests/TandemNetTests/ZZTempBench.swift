import Foundation
import Testing
import TandemCore
@testable import TandemNet

@Test func zzTempBench() async throws {
    let e = JSONEncoder()
    for m: ClientMessage in [.join(name: "ann", reconnectAs: nil, prerollEstimate: 3), .leave,
                             .journal(.commit(id: "x")), .linkReport(oneWayDelay: 1, errorBound: 2),
                             .appMessage(OutgoingAppMessage(recipients: .only([ParticipantID("p2")]), delivery: .reliable, sequence: 1, payload: Data("hi".utf8)))] {
        print(String(decoding: try e.encode(m), as: UTF8.self))
    }
    let env = ProcessInfo.processInfo.environment
    var c = RelayBenchmark.Configuration()
    c.participants = Int(env["BP"] ?? "200")!
    c.sessions = Int(env["BS"] ?? "50")!
    c.duration = Double(env["BD"] ?? "5")!
    let r = try await RelayBenchmark.run(c)
    print(r)
}
