import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import TandemCore
import Testing
@testable import TandemNet

@Suite("Fan-out writes: one encoding per message, flushes once per tick")
struct FanOutWriteTests {
    @Test("a relayed app message is encoded once; every recipient's channel writes the same bytes, not a copy")
    func encodedOnceSharesStorage() throws {
        let message = ServerMessage.appMessage(IncomingAppMessage(source: ParticipantID("p1"), delivery: .reliable,
                                                                  sequence: 7, payload: Data(repeating: 0xAB, count: 300)))
        let frame = try SessionCodec.encode(message, allocator: ByteBufferAllocator())
        let recipients = (0..<3).map { _ in EmbeddedChannel(handler: FrameWriter()) }
        for channel in recipients { try channel.writeOutbound(frame) }
        let written = try recipients.map { try #require(try $0.readOutbound(as: ByteBuffer.self)) }
        // The bytes are what the generic encoder writes for the same kind and body...
        var expected = ByteBuffer()
        try FrameEncoder().encode(data: Frame(kind: frame.kind, body: frame.body), out: &expected)
        for bytes in written { #expect(bytes == expected) }
        // ...and all three writes are the one buffer built when the message was encoded.
        let wire = try #require(frame.wire)
        let origin = wire.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        for bytes in written { #expect(bytes.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } == origin) }
        #expect(try SessionCodec.decodeServerMessage(frame) == message)
        for channel in recipients { _ = try channel.finish() }
    }

    @Test("a reliable message for everyone is forwarded as its bytes: the frame decoding and encoding would make; other app messages are decoded")
    func broadcastForwardedAsBytes() throws {
        let allocator = ByteBufferAllocator()
        let payload = Data((0..<700).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let outgoing = OutgoingAppMessage(recipients: .all, delivery: .reliable, sequence: 0x0102_0304_0506_0708,
                                          payload: payload)
        let sent = try SessionCodec.encode(ClientMessage.appMessage(outgoing), allocator: allocator)
        let (sequence, bytes) = try #require(SessionCodec.broadcastAppMessage(sent))
        #expect(sequence == outgoing.sequence)
        #expect(bytes.readableBytes == payload.count)
        let forwarded = try SessionCodec.forwardedAppMessage(source: ParticipantID("p-7"), sequence: sequence,
                                                             payload: bytes, allocator: allocator)
        let decoded = ServerMessage.appMessage(IncomingAppMessage(source: ParticipantID("p-7"), delivery: .reliable,
                                                                  sequence: outgoing.sequence, payload: payload))
        let encoded = try SessionCodec.encode(decoded, allocator: allocator)
        #expect(forwarded.wire == encoded.wire)
        #expect(try SessionCodec.decodeServerMessage(forwarded) == decoded)
        // Unreliable, for chosen recipients, or cut short: not this path.
        for other in [OutgoingAppMessage(recipients: .all, delivery: .unreliable, sequence: 1, payload: payload),
                      OutgoingAppMessage(recipients: .only([ParticipantID("p-2")]), delivery: .reliable, sequence: 1,
                                         payload: payload)] {
            #expect(SessionCodec.broadcastAppMessage(try SessionCodec.encode(ClientMessage.appMessage(other),
                                                                             allocator: allocator)) == nil)
        }
        #expect(SessionCodec.broadcastAppMessage(Frame(kind: .appMessage, body: ByteBuffer(bytes: [0, 1, 2]))) == nil)
        #expect(SessionCodec.broadcastAppMessage(Frame(kind: .journalChunk, body: sent.body)) == nil)
    }

    @Test("the server frames a byte stream however it is cut: frames split byte by byte, across reads, and many to a write")
    func framingAcrossReads() async throws {
        let server = try await HardeningServerTests.startServer { $0.heartbeatTimeout = 60_000_000_000 }
        let invite = try server.createSession(id: "framing")
        let alice = try await RawPeer.connect(port: server.port)
        try await alice.joinAndGoSilent(invite: invite, name: "alice")
        let bob = try await RawPeer.connect(port: server.port)
        try await bob.joinAndGoSilent(invite: invite, name: "bob")
        var stream: [UInt8] = []
        let payloads = (0..<40).map { index in Data((0..<(index % 4 == 0 ? 3_000 : 40 + index)).map { UInt8(truncatingIfNeeded: $0 &+ index) }) }
        for (index, payload) in payloads.enumerated() {
            let message = ClientMessage.appMessage(OutgoingAppMessage(recipients: .all, delivery: .reliable,
                                                                      sequence: UInt64(index + 1), payload: payload))
            let frame = try SessionCodec.encode(message, allocator: ByteBufferAllocator())
            var bytes = ByteBuffer()
            try FrameEncoder().encode(data: frame, out: &bytes)
            stream += Array(bytes.readableBytesView)
        }
        // The first frame and a half in one write, the next ten bytes one write each, the rest in one write.
        let firstCut = stream.count / 60
        try await alice.send(Array(stream[..<firstCut]))
        for index in firstCut..<(firstCut + 10) {
            try await alice.send([stream[index]])
            try await Task.sleep(for: .milliseconds(2))
        }
        try await alice.send(Array(stream[(firstCut + 10)...]))
        let deadline = ContinuousClock.now + .seconds(5)
        while bob.appMessageCount() < payloads.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let received = try await bob.appMessages()
        #expect(received.map(\.sequence) == (1...UInt64(payloads.count)).map { $0 })
        #expect(received.map(\.payload) == payloads)
        #expect(received.allSatisfy { $0.source == received.first?.source })
        await server.shutdown()
    }

    @Test("a sender's broadcasts follow the session's membership: a newcomer gets the next one, someone gone does not")
    func broadcastsFollowMembership() async throws {
        let server = try await HardeningServerTests.startServer { $0.heartbeatTimeout = 60_000_000_000 }
        let invite = try server.createSession(id: "members")
        let alice = try await RawPeer.connect(port: server.port)
        try await alice.joinAndGoSilent(invite: invite, name: "alice")
        let bob = try await RawPeer.connect(port: server.port)
        try await bob.joinAndGoSilent(invite: invite, name: "bob")
        func waitUntil(_ condition: () throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(3)
            while try !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        }
        for sequence in 1...3 { try await alice.sendAppMessage(sequence: UInt64(sequence)) }
        try await waitUntil { bob.appMessageCount() == 3 }
        let carol = try await RawPeer.connect(port: server.port)
        try await carol.joinAndGoSilent(invite: invite, name: "carol")
        try await alice.sendAppMessage(sequence: 4)
        try await waitUntil { bob.appMessageCount() == 4 && carol.appMessageCount() == 1 }
        #expect(try carol.appMessages().map(\.sequence) == [4])
        try await bob.channel.close()
        // Once the server has seen bob go (its notice reaches carol), alice's broadcasts go to carol alone.
        let noticesBefore = carol.count(of: .session)
        try await waitUntil { carol.count(of: .session) > noticesBefore }
        for sequence in 5...6 { try await alice.sendAppMessage(sequence: UInt64(sequence)) }
        try await waitUntil { carol.appMessageCount() == 3 }
        #expect(try carol.appMessages().map(\.sequence) == [4, 5, 6])
        #expect(try bob.appMessages().map(\.sequence) == [1, 2, 3, 4])
        // And carol's own broadcast reaches alice (a second sender's targets, learnt after the change).
        try await carol.sendAppMessage(sequence: 1)
        try await waitUntil { alice.appMessageCount() == 1 }
        #expect(try alice.appMessages().map(\.sequence) == [1])
        await server.shutdown()
    }

    @Test("changing a frame's body drops its pre-encoded bytes; frames built elsewhere are encoded on write")
    func otherFramesEncodedOnWrite() throws {
        var frame = try SessionCodec.encode(ServerMessage.journal(.chunk(id: "a", offset: 0, bytes: Data([1, 2, 3]))),
                                            allocator: ByteBufferAllocator())
        #expect(frame.wire != nil)
        frame.body = ByteBuffer(bytes: [9, 9])
        #expect(frame.wire == nil)
        let channel = EmbeddedChannel(handler: FrameWriter())
        try channel.writeOutbound(frame)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(bytes: [0, 0, 0, 3, FrameKind.journalChunk.rawValue, 9, 9]))
        _ = try channel.finish()
    }

    @Test("bursts of small frames, flushed once per tick: a recipient that stops reading is still cut at the bound, and one that reads gets everything")
    func slowRecipientBoundedUnderBursts() async throws {
        let cap = 256 * 1024
        let server = try await HardeningServerTests.startServer {
            $0.maxQueuedBytesPerConnection = cap
            $0.heartbeatTimeout = 60_000_000_000
        }
        let invite = try server.createSession(id: "bursts")
        let alice = try await RawPeer.connect(port: server.port)
        try await alice.joinAndGoSilent(invite: invite, name: "alice")
        let carol = try await RawPeer.connect(port: server.port)
        try await carol.joinAndGoSilent(invite: invite, name: "carol")
        let bob = try await RawPeer.connect(port: server.port, receiveBuffer: 4096)
        try await bob.joinAndGoSilent(invite: invite, name: "bob")
        try await bob.channel.setOption(ChannelOptions.autoRead, value: false).get()
        // Forty 4 KB app messages per write: the server reads them in one burst and fans them out together.
        let payload = [UInt8](repeating: 0x42, count: 4096)
        var burst: [UInt8] = []
        for sequence in 0..<40 {
            var body: [UInt8] = [0]
            body += withUnsafeBytes(of: UInt64(sequence).bigEndian, Array.init)
            body += [0xFF, 0xFF]
            body += payload
            let length = UInt32(body.count + 1)
            burst += withUnsafeBytes(of: length.bigEndian, Array.init) + [FrameKind.appMessage.rawValue] + body
        }
        let start = ContinuousClock.now
        var bursts = 0
        while server.slowConsumersDisconnected == 0, bursts < 300, ContinuousClock.now - start < .seconds(20) {
            try await alice.send(burst)
            bursts += 1
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(await HardeningServerTests.eventually(within: 5) { server.slowConsumersDisconnected == 1 },
                "bob was not dropped after \(bursts) bursts")
        #expect(server.peakQueuedBytesPerConnection <= cap + payload.count + 1_024)
        // Carol read along: every message reached her.
        let sent = bursts * 40
        #expect(await HardeningServerTests.eventually(within: 10) {
            carol.appMessageCount() == sent
        }, "carol got \(carol.appMessageCount()) of \(sent)")
        await server.shutdown()
    }
}
