import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// Link reports — every peer sends one a second — travel as a binary `linkReport` frame to a server that offers it
/// in `accepted`, and as JSON otherwise; the server takes both.
@Suite("Link reports as binary frames")
struct LinkReportFrameTests {
    @Test("the binary frame holds the two (or three) times as big-endian nanoseconds and decodes to the same message")
    func codec() throws {
        let allocator = ByteBufferAllocator()
        let plain = ClientMessage.linkReport(oneWayDelay: .microseconds(1_234), errorBound: .nanoseconds(-5))
        let frame = try SessionCodec.encode(plain, allocator: allocator, linkReportFrames: true)
        #expect(frame.kind == .linkReport)
        #expect(Array(frame.body.readableBytesView) == [0, 0, 0, 0, 0, 0x12, 0xD4, 0x50] + [UInt8](repeating: 0xFF, count: 7) + [0xFB])
        #expect(try SessionCodec.decodeClientMessage(frame) == plain)

        let withOffset = ClientMessage.linkReport(oneWayDelay: .milliseconds(3), errorBound: .milliseconds(1),
                                                  renderOffset: .milliseconds(-2.5))
        let longer = try SessionCodec.encode(withOffset, allocator: allocator, linkReportFrames: true)
        #expect(longer.body.readableBytes == 24)
        #expect(try SessionCodec.decodeClientMessage(longer) == withOffset)

        // To a server that did not offer the frame, JSON as before.
        let json = try SessionCodec.encode(plain, allocator: allocator)
        #expect(json.kind == .session)
        #expect(try SessionCodec.decodeClientMessage(json) == plain)

        // A report with a delay spread (sent when it changes) goes as JSON, which servers before the field read
        // without it.
        let withSpread = ClientMessage.linkReport(oneWayDelay: .milliseconds(50), errorBound: .milliseconds(1),
                                                  returnDelaySpread: .milliseconds(23))
        let spreadFrame = try SessionCodec.encode(withSpread, allocator: allocator, linkReportFrames: true)
        #expect(spreadFrame.kind == .session)
        #expect(String(buffer: spreadFrame.body).contains("\"returnDelaySpread\":23000000"))
        #expect(try SessionCodec.decodeClientMessage(spreadFrame) == withSpread)

        // A display (browser pages send it) goes as JSON too, and the page's JSON decodes to it.
        let grid = DisplayGrid(refresh: .nanoseconds(16_666_667), refreshAt: SessionInstant(nanoseconds: 81_234_567_890_123),
                               frame: .nanoseconds(33_366_667), frameAt: ItemTime(nanoseconds: 12_433_000_000))
        let withDisplay = ClientMessage.linkReport(oneWayDelay: .microseconds(150), errorBound: .microseconds(150), display: grid)
        let displayFrame = try SessionCodec.encode(withDisplay, allocator: allocator, linkReportFrames: true)
        #expect(displayFrame.kind == .session)
        #expect(try SessionCodec.decodeClientMessage(displayFrame) == withDisplay)
        let page = #"{"linkReport":{"oneWayDelay":150000,"errorBound":150000,"display":{"refresh":16666667,"refreshAt":81234567890123,"frame":33366667,"frameAt":12433000000}}}"#
        let pageFrame = Frame(kind: .session, body: ByteBuffer(string: page))
        #expect(try SessionCodec.decodeClientMessage(pageFrame) == withDisplay)
        // Before its frames are known, a page sends the refresh alone.
        let early = #"{"linkReport":{"oneWayDelay":150000,"errorBound":150000,"display":{"refresh":16666667,"refreshAt":81234567890123}}}"#
        #expect(try SessionCodec.decodeClientMessage(Frame(kind: .session, body: ByteBuffer(string: early)))
                == .linkReport(oneWayDelay: .microseconds(150), errorBound: .microseconds(150),
                               display: DisplayGrid(refresh: grid.refresh, refreshAt: grid.refreshAt)))
    }

    @Test("a link report frame of any other length is malformed", arguments: [0, 1, 8, 15, 17, 23, 25, 32])
    func malformed(length: Int) {
        let frame = Frame(kind: .linkReport, body: ByteBuffer(bytes: [UInt8](repeating: 7, count: length)))
        #expect(throws: FrameError.self) { try SessionCodec.decodeClientMessage(frame) }
    }

    @Test("a client sends binary link reports to a server that offers them, JSON still counts, a bad one closes its sender alone")
    func endToEnd() async throws {
        let server = try await startTestServer()
        defer { Task { await server.shutdown() } }
        let invite = try server.createSession(id: "reports")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        defer { Task { await ann.abort() } }
        let offered = ann.shared.linkReportFrames.load(ordering: .relaxed)
        #expect(offered)
        try await ann.send(.linkReport(oneWayDelay: .milliseconds(37), errorBound: .milliseconds(2)))

        // An older client's JSON report.
        let old = try await RawPeer.connect(port: server.port)
        try await old.joinAndGoSilent(invite: invite, name: "old")
        try await old.sendJSONFrame(.session, ClientMessage.linkReport(oneWayDelay: .milliseconds(41), errorBound: 0))

        // A frame of the wrong length closes that connection, with a reason, and nobody else's.
        let bad = try await RawPeer.connect(port: server.port)
        try await bad.joinAndGoSilent(invite: invite, name: "bad")
        try await bad.sendFrame(FrameKind.linkReport.rawValue, [1, 2, 3, 4, 5])
        #expect(await bad.closingErrorCode(within: 3) == .malformedFrame)

        // Someone joining later sees both delays in its welcome.
        var delays: [String: TimeSpan] = [:]
        for _ in 0..<50 {
            let bob = try await TandemClient.connect(invite: invite, name: "bob", options: clientOptions())
            delays = Dictionary(bob.welcome.participants.map { ($0.participant.name, $0.oneWayDelay) }, uniquingKeysWith: { a, _ in a })
            await bob.abort()
            if delays["ann"] == .milliseconds(37) && delays["old"] == .milliseconds(41) { break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(delays["ann"] == .milliseconds(37), "\(delays)")
        #expect(delays["old"] == .milliseconds(41), "\(delays)")
        #expect(ann.shared.closedReason == nil)
    }
}
