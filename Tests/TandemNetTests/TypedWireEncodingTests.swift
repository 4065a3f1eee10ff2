import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// The wire messages carry typed times (`LocalInstant`, `SessionInstant`, `ItemTime`, `TimeSpan`); the bytes must
/// stay the bare nanosecond numbers they always were, so that older peers, the fuzz corpus and the examples in
/// docs/PROTOCOL.md read exactly as before.
@Suite struct TypedWireEncodingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized

    /// `value` as the codec writes it, re-read as a JSON object (key order is not significant on the wire).
    static func json<T: Encodable>(_ value: T) throws -> NSDictionary {
        try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? NSDictionary)
    }

    static func json(_ text: String) throws -> NSDictionary {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary)
    }

    /// Sorted keys, so the text can be compared byte for byte.
    static func sortedText<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func typedClientMessagesEncodeAsBareNanoseconds() throws {
        let cases: [(ClientMessage, String)] = [
            (.linkReport(oneWayDelay: .microseconds(40), errorBound: .nanoseconds(40_000)),
             #"{"linkReport":{"errorBound":40000,"oneWayDelay":40000}}"#),
            (.renderedPast(generation: 12, itemTime: .milliseconds(754_200)),
             #"{"renderedPast":{"generation":12,"itemTime":754200000000}}"#),
            (.join(name: "ann", reconnectAs: nil, prerollEstimate: .milliseconds(300)),
             #"{"join":{"name":"ann","prerollEstimate":300000000}}"#),
            (.suspension(.end(id: 1, proposedItemTime: ItemTime(nanoseconds: 5_000))),
             #"{"suspension":{"_0":{"end":{"id":1,"proposedItemTime":5000}}}}"#),
            (.timelineRequest(TimelineRequest(requestID: 3, command: .seek(itemTime: .seconds(9), play: true),
                                              basedOnGeneration: 2, requestedAtSessionTime: -5)),
             #"{"timelineRequest":{"_0":{"basedOnGeneration":2,"command":{"seek":{"itemTime":9000000000,"play":true}},"#
                + #""requestID":3,"requestedAtSessionTime":-5}}}"#),
            (.clockPing(ClockPing(sequence: 1, t1: LocalInstant(nanoseconds: .max))),
             #"{"clockPing":{"_0":{"sequence":1,"t1":9223372036854775807}}}"#),
        ]
        for (message, expected) in cases {
            let text = try Self.sortedText(message)
            #expect(text == expected, "\(text)")
            let frame = try SessionCodec.encode(message, allocator: ByteBufferAllocator())
            #expect(try SessionCodec.decodeClientMessage(frame) == message)
        }
    }

    @Test func typedServerMessagesEncodeAsBareNanoseconds() throws {
        let pong = ServerMessage.clockPong(ClockPong(sequence: 2, t1: 10, t2: SessionInstant(nanoseconds: -20), t3: 30))
        #expect(try Self.sortedText(pong) == #"{"clockPong":{"_0":{"sequence":2,"t1":10,"t2":-20,"t3":30}}}"#)
        let notice = ServerMessage.notice(Notice(kind: .paused, participant: ParticipantID("p1"), text: "ann paused",
                                                 sessionTime: .seconds(2)))
        #expect(try Self.sortedText(notice)
            == #"{"notice":{"_0":{"kind":"paused","participant":"p1","sessionTime":2000000000,"text":"ann paused"}}}"#)
        let state = ParticipantState(participant: Participant(id: ParticipantID("p1"), name: "ann"), oneWayDelay: .milliseconds(20),
                                     prerollEstimate: .milliseconds(300))
        let encoded = try Self.json(state)
        #expect((encoded["oneWayDelay"] as? NSNumber)?.int64Value == 20_000_000)
        #expect((encoded["prerollEstimate"] as? NSNumber)?.int64Value == 300_000_000)
        let frame = try SessionCodec.encode(ServerMessage.participants([state]), allocator: ByteBufferAllocator())
        #expect(try SessionCodec.decodeServerMessage(frame) == .participants([state]))
    }

    @Test func binaryClockFramesKeepTheirBytes() throws {
        let allocator = ByteBufferAllocator()
        let ping = FrameCodec.clockPing(sequence: 7, t1: LocalInstant(nanoseconds: 0x0102_0304_0506_0708),
                                        allocator: allocator)
        #expect(Array(ping.body.readableBytesView) == [0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8])
        let parsed = try FrameCodec.parseClockPing(ping)
        #expect(parsed.sequence == 7 && parsed.t1 == LocalInstant(nanoseconds: 0x0102_0304_0506_0708))

        var body = allocator.buffer(capacity: 28)
        body.writeInteger(UInt32(9))
        body.writeInteger(Int64(-1))
        body.writeInteger(Int64(2))
        body.writeInteger(Int64(3))
        let pong = try FrameCodec.parseClockPong(Frame(kind: .clockPong, body: body))
        #expect(pong == ClockPong(sequence: 9, t1: LocalInstant(nanoseconds: -1), t2: 2, t3: 3))
    }

    /// Every JSON seed of the fuzz corpus decodes, and encodes back to the same JSON object.
    @Test func fuzzCorpusDecodesAndEncodesIdentically() throws {
        let corpus = Self.root.appendingPathComponent("Fuzz/corpus")
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).filter { $0.hasPrefix("json-") }
        #expect(names.count >= 20)
        for name in names.sorted() {
            let bytes = try #require(FileManager.default.contents(atPath: corpus.appendingPathComponent(name).path))
            let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
            let message = try JSONDecoder().decode(ClientMessage.self, from: Data(text.utf8))
            #expect(try Self.json(message) == Self.json(text), "\(name)")
        }
    }

    /// Every session-message example in docs/PROTOCOL.md decodes, and encodes back to the same JSON object.
    @Test func protocolExamplesDecodeAndEncodeIdentically() throws {
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        var inJSON = false
        var examples: [String] = []
        for line in doc.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inJSON = line == "```json"; continue }
            if inJSON, line.hasPrefix("{") { examples.append(String(line)) }
        }
        #expect(examples.count >= 8)
        for example in examples {
            let data = Data(example.utf8)
            if let client = try? JSONDecoder().decode(ClientMessage.self, from: data) {
                #expect(try Self.json(client) == Self.json(example), "\(example)")
            } else if let server = try? JSONDecoder().decode(ServerMessage.self, from: data) {
                #expect(try Self.json(server) == Self.json(example), "\(example)")
            } else {
                Issue.record("a PROTOCOL.md example decodes as no session message: \(example)")
            }
        }
    }
}
