import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// The host's shared items through a relay (`serve --relay-media`), over real sockets on loopback: a joiner reads
/// what the host's file holds, the relay passes only sealed bytes and a chunk it alters does not open, the
/// session's cap holds, a member's open requests are bounded, and a relay without the option refuses in words.
@Suite(.serialized)
struct RelayedMediaTests {
    static let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("media-samples/countdown.webm").path

    struct Session: Sendable {
        let server: SessionServer
        let host: TandemClientConnection
        let joiner: TandemClientConnection
        let answering: RelayedMediaHost
        let reader: RelayedMediaReader

        func close() async {
            await joiner.close()
            await host.close()
            await server.shutdown()
        }
    }

    /// A relay (`relayMedia` nil: without `--relay-media`), a host answering for item "film" (the sample), a joiner.
    static func start(relayMedia: RelayMediaConfiguration?, tap: (@Sendable (Frame) -> Frame)? = nil) async throws -> Session {
        var configuration = ServerConfiguration()
        configuration.relayMedia = relayMedia
        configuration.mediaTap = tap
        configuration.allowsRemoteSessionCreation = true
        var logger = Logger(label: "tandem.test.relay")
        logger.logLevel = .warning
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: logger)
        let invite = try server.createSession(id: "relayed-media")
        let host = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions(asHost: true))
        let offers = SharedMedia()
        offers.offer(session: invite.session, item: "film", path: sample)
        let answering = RelayedMediaHost(connection: host, offers: offers)
        let joiner = try await TandemClient.connect(invite: invite, name: "bob", options: clientOptions())
        return Session(server: server, host: host, joiner: joiner, answering: answering,
                       reader: RelayedMediaReader(connection: joiner))
    }

    @Test("a joiner reads the host's bytes through the relay; the relay passes sealed chunks only, never the file's bytes")
    func readsSealedBytes() async throws {
        let content = try Data(contentsOf: URL(fileURLWithPath: Self.sample))
        let seen = NIOLockedValueBox<[Data]>([])
        let session = try await Self.start(relayMedia: RelayMediaConfiguration()) { frame in
            if let chunk = try? MediaFrames.parseChunk(frame) { seen.withLockedValue { $0.append(Data(chunk.payload.readableBytesView)) } }
            return frame
        }
        let (first, size) = try await session.reader.read(item: "film", offset: 0, length: 65_536)
        #expect(size == Int64(content.count))
        #expect(first == content.prefix(65_536))
        let (middle, _) = try await session.reader.read(item: "film", offset: 100_000, length: 5_000)
        #expect(middle == content[100_000..<105_000])
        let (tail, _) = try await session.reader.read(item: "film", offset: size - 10, length: 65_536)
        #expect(tail == content.suffix(10), "a range past the end is cut at the end")
        let passed = seen.withLockedValue { $0 }
        #expect(passed.count == 3)
        // What the relay read of each chunk: nonce, ciphertext and tag, never the plain range (nor any 64 bytes of it).
        for (box, plain) in zip(passed, [first, middle, tail]) {
            #expect(box.count == plain.count + MediaChunkCipher.overhead)
            #expect(box.range(of: plain.prefix(64)) == nil)
            #expect(box.range(of: content.prefix(64)) == nil)
        }
        await session.close()
    }

    @Test("a chunk the relay alters (one bit), or moves to another offset, does not open: the joiner rejects it")
    func tamperedChunksAreRejected() async throws {
        let flip = NIOLockedValueBox(true)
        let session = try await Self.start(relayMedia: RelayMediaConfiguration()) { frame in
            guard flip.withLockedValue({ $0 }) else { return frame }
            var body = frame.body
            let last = body.writerIndex - 1
            body.setInteger(body.getInteger(at: last, as: UInt8.self)! ^ 1, at: last)
            return Frame(kind: frame.kind, body: body)
        }
        await #expect(throws: RelayedMediaError.altered) {
            _ = try await session.reader.read(item: "film", offset: 0, length: 1_000)
        }
        flip.withLockedValue { $0 = false }
        let (bytes, _) = try await session.reader.read(item: "film", offset: 0, length: 1_000)
        #expect(bytes.count == 1_000, "an unaltered chunk opens")
        // A chunk sealed for one offset does not open as another (the associated data binds the place).
        let cipher = MediaChunkCipher(invite: session.joiner.invite)
        let box = try cipher.seal(bytes, item: "film", offset: 0, itemSize: 5)
        #expect(throws: (any Error).self) { try cipher.open(box, item: "film", offset: 1_000, length: 1_000, itemSize: 5) }
        #expect(throws: (any Error).self) { try cipher.open(box, item: "other", offset: 0, length: 1_000, itemSize: 5) }
        #expect(throws: (any Error).self) { try cipher.open(box, item: "film", offset: 0, length: 1_000, itemSize: 6) }
        await session.close()
    }

    @Test("a relay without --relay-media refuses with words that say what to do")
    func refusedWithoutRelayMedia() async throws {
        let session = try await Self.start(relayMedia: nil)
        do {
            _ = try await session.reader.read(item: "film", offset: 0, length: 1)
            Issue.record("the relay passed media without --relay-media")
        } catch {
            guard case .relayRefuses(let why) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(why.contains("--relay-media") && why.contains("operator") && why.contains("your own copy"), "\(why)")
        }
        #expect(session.answering.rangesAnswered == 0, "the host was never asked")
        await session.close()
    }

    @Test("the session's cap holds: bytes passed over a window are at most cap × window + one request")
    func capHolds() async throws {
        let rate = 256 * 1024
        let session = try await Self.start(relayMedia: RelayMediaConfiguration(bytesPerSecond: rate))
        let started = ContinuousClock.now
        let received = NIOLockedValueBox<[(at: Duration, bytes: Int)]>([])
        // Eight readers at once, as a player's window asks ahead: 16 requests of 64 KiB in all (1 MiB of the sample).
        try await withThrowingTaskGroup(of: Void.self) { group in
            for reader in 0..<8 {
                group.addTask {
                    for piece in 0..<2 {
                        let offset = Int64((reader * 2 + piece) * 65_536)
                        let (bytes, _) = try await session.reader.read(item: "film", offset: offset, length: 65_536)
                        received.withLockedValue { $0.append((ContinuousClock.now - started, bytes.count)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let arrivals = received.withLockedValue { $0 }.sorted { $0.at < $1.at }
        var total = 0
        for arrival in arrivals {
            total += arrival.bytes
            let window = Double(arrival.at.components.seconds) + Double(arrival.at.components.attoseconds) / 1e18
            // Everything that arrived by `window` passed the relay within it: at most the cap and one request's bytes.
            #expect(Double(total) <= Double(rate) * window + 65_536, "\(total) bytes by \(window) s")
        }
        #expect(total == 16 * 65_536)
        await session.close()
    }

    @Test("a member's open requests are bounded: beyond its share the relay answers busy at once")
    func openRequestsBounded() async throws {
        let session = try await Self.start(relayMedia: RelayMediaConfiguration())
        // A host that never answers, so that every request it is passed stays open at the relay; the requests go out
        // raw, all at once, as a member that ignores the reader's own window would send them.
        session.host.receiveMedia { _ in }
        let limit = MediaPassageLimits().openPerMember
        let answers = NIOLockedValueBox<[MediaFrames.Status]>([])
        session.joiner.receiveMedia { frame in
            guard let chunk = try? MediaFrames.parseChunk(frame) else { return }
            answers.withLockedValue { $0.append(chunk.status) }
        }
        for id in 1...UInt32(limit + 6) {
            try await session.joiner.sendMedia { allocator in
                try MediaFrames.encode(.init(id: id, item: "film", offset: Int64(id) * 16_384, length: 16_384), allocator: allocator)
            }
        }
        #expect(await WebPeerServerTests.eventually(within: 5) { answers.withLockedValue { $0.count } >= 6 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(answers.withLockedValue { $0 } == Array(repeating: .busy, count: 6), "the first \(limit) stay open")
        await session.close()
    }
}
