#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOConcurrencyHelpers
import TandemCore
import Testing
@testable import TandemNet

/// A TCP relay on 127.0.0.1 between one client and the server that passes every frame the server sends through
/// `edit`, which may drop it, pass it on changed, or pass on others with it: a malicious relay, as far as app data
/// goes (it cannot read or forge boxes, only move them).
final class FrameEditingProxy: @unchecked Sendable {
    /// One whole frame (length, kind, body) in, the frames to pass on out.
    typealias Edit = @Sendable (Data) -> [Data]
    let port: Int
    private let listener: Int32
    private let sockets = NIOLockedValueBox<[Int32]>([])

    init(upstreamPort: Int, edit: @escaping Edit) throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listening >= 0 else { throw POSIXError(.EIO) }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listening, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = listening
        let sockets = self.sockets
        Thread.detachNewThread {
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var upstream = Self.loopback(port: upstreamPort)
                let connected = withUnsafePointer(to: &upstream) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else {
                    close(client)
                    close(server)
                    continue
                }
                sockets.withLockedValue { $0 += [client, server] }
                Thread.detachNewThread { Self.pump(from: client, to: server, edit: nil) }
                Thread.detachNewThread { Self.pump(from: server, to: client, edit: edit) }
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    /// Copies `source` to `destination`; with `edit`, frame by frame through it.
    private static func pump(from source: Int32, to destination: Int32, edit: Edit?) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var pending = Data()
        func write(_ bytes: Data) -> Bool {
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { send(destination, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return false }
                sent += n
            }
            return true
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            pending.append(contentsOf: buffer[0..<count])
            var out = Data()
            if let edit {
                while pending.count >= 4 {
                    let length = pending.prefix(4).reduce(0) { ($0 << 8) | Int($1) }
                    guard pending.count >= 4 + length else { break }
                    for frame in edit(Data(pending.prefix(4 + length))) { out.append(frame) }
                    pending = Data(pending.dropFirst(4 + length))
                }
            } else {
                out = pending
                pending = Data()
            }
            guard write(out) else {
                shutdown(source, Int32(SHUT_RDWR))
                return
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets.withLockedValue({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }
}

/// An app-message frame the server sends (`delivery u8 | sequence u64 | source str | payload`), taken apart and
/// put together again.
struct RelayedAppMessage {
    var delivery: UInt8
    var sequence: UInt64
    var source: String
    var payload: Data

    init?(frame: Data) {
        let bytes = [UInt8](frame)
        guard bytes.count >= 16, bytes[4] == FrameKind.appMessage.rawValue else { return nil }
        delivery = bytes[5]
        sequence = bytes[6..<14].reduce(0) { ($0 << 8) | UInt64($1) }
        let sourceLength = Int(bytes[14]) << 8 | Int(bytes[15])
        guard bytes.count >= 16 + sourceLength else { return nil }
        source = String(decoding: bytes[16..<16 + sourceLength], as: UTF8.self)
        payload = Data(bytes[(16 + sourceLength)...])
    }

    var frame: Data {
        var body = Data([delivery])
        withUnsafeBytes(of: sequence.bigEndian) { body.append(contentsOf: $0) }
        let source = Data(self.source.utf8)
        body.append(contentsOf: [UInt8(source.count >> 8), UInt8(source.count & 0xff)])
        body.append(source)
        body.append(payload)
        let length = UInt32(body.count + 1)
        var out = Data([UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)])
        out.append(FrameKind.appMessage.rawValue)
        out.append(body)
        return out
    }
}

@Suite("A relay that alters app data", .serialized)
struct AlteringRelayTests {
    @Test("a relay that replays, swaps and re-attributes chat: the receiver shows none of it, counts it, says so once")
    func replaySwapReattribute() async throws {
        let server = try await startTestServer(handshakeTimeout: 10_000_000_000)
        let invite = try server.createSession(id: "altering-relay")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        let carol = try await TandemClient.connect(invite: invite, name: "carol", options: clientOptions())
        let annID = ann.localParticipantID.rawValue, carolID = carol.localParticipantID.rawValue

        // What the relay does to ann's messages to everyone, by number: #1 twice, #3 held back until #4 has gone
        // (a swap), #5 credited to carol. Everything else passes as it came.
        let held = NIOLockedValueBox<Data?>(nil)
        let proxy = try FrameEditingProxy(upstreamPort: server.port) { frame in
            guard var message = RelayedAppMessage(frame: frame), message.source == annID else { return [frame] }
            switch message.sequence {
            case 1: return [frame, frame]
            case 3: held.withLockedValue { $0 = frame }; return []
            case 4: return [frame] + (held.withLockedValue { $0 }.map { [$0] } ?? [])
            case 5:
                message.source = carolID
                return [message.frame]
            default: return [frame]
            }
        }
        defer { proxy.stop() }
        var bobOptions = clientOptions()
        bobOptions.datagrams = false  // everything through the relay
        let viaProxy = Invite(host: "127.0.0.1", port: proxy.port, session: invite.session, secret: invite.secret)
        let bob = try await TandemClient.connect(invite: viaProxy, name: "bob", options: bobOptions)

        let bobNotes = GroupSessionMessenger(link: bob).messages(of: SecretNote.self)
        let carolNotes = GroupSessionMessenger(link: carol).messages(of: SecretNote.self)
        let bobNotices = bob.serverMessages()
        let annMessenger = GroupSessionMessenger(link: ann)
        for number in 1...6 { try await annMessenger.send(SecretNote(text: "ann \(number)")) }
        try await GroupSessionMessenger(link: carol).send(SecretNote(text: "carol 1"))

        // Bob: ann's 1, 2, 4 and 6 once each and in order, carol's own line; not ann's 1 again, not 3 after 4, not
        // ann's 5 as carol's.
        let shown = await first(5, of: bobNotes, within: 5)
        let lines = shown.map { "\($0.1.source.rawValue): \($0.0.text)" }
        #expect(lines == ["\(annID): ann 1", "\(annID): ann 2", "\(annID): ann 4", "\(annID): ann 6",
                          "\(carolID): carol 1"], "\(lines)")
        let drops = bob.appDataDrops
        #expect(drops.replayed == 1 && drops.reordered == 1 && drops.altered == 1, "\(drops)")
        #expect(drops.missing == 2, "ann's 3 and 5 never came as ann's: \(drops)")
        // Told once, however many were dropped.
        let notices = await collectNotices(bobNotices, within: 1)
        #expect(notices.filter { $0.kind == .appDataAltered }.count == 1, "\(notices)")
        #expect(notices.first { $0.kind == .appDataAltered }?.text == ClientShared.alteredText)

        // Carol, on an honest path, gets every one of ann's lines in order and drops nothing.
        let atCarol = await first(6, of: carolNotes, within: 5).map(\.0.text)
        #expect(atCarol == (1...6).map { "ann \($0)" })
        #expect(carol.appDataDrops == AppMessageDrops())

        // The session goes on: an honest message after all that is the next thing bob sees (nothing of the relay's
        // came in between).
        try await annMessenger.send(SecretNote(text: "ann 7"))
        #expect(await first(1, of: bobNotes, within: 5).map(\.0.text) == ["ann 7"])
        #expect(bob.appDataDrops.missing == 2)

        await bob.close()
        await carol.close()
        await ann.close()
        await server.shutdown()
    }

    @Test("an attachment whose records were shuffled, cut short or moved from another attachment fails at its receivers")
    func movedRecords() async throws {
        let server = try await startTestServer(handshakeTimeout: 10_000_000_000)
        let invite = try server.createSession(id: "moved-records")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: clientOptions())
        let bobJournal = GroupSessionJournal(link: bob)
        async let _ = bobJournal.run()
        let cipher = try #require(ann.payloadCipher)
        let owner = ann.localParticipantID
        let data = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        // What a relay could put together from genuine records (it rewrites the size and digest the server checks).
        func records(_ id: String) throws -> [Data] {
            AppDataCipherTests.records(try cipher.sealRecords(data, pieceSize: 2_000, owner: owner, id: id))
        }
        let genuine = try records("a"), other = try records("b")
        let forged: [(String, Data)] = [("shuffled", genuine[1] + genuine[0] + genuine[2]),
                                        ("cut", genuine[0] + genuine[1]),
                                        ("moved", other[0] + other[1] + other[2])]
        for (id, stream) in forged {
            try await ann.send(.journal(.begin(AttachmentInfo(id: id, owner: owner,
                                                             name: try cipher.sealName(id, owner: owner, id: id),
                                                             size: Int64(stream.count), sha256: SHA256Hex.digest(stream)))))
            try await ann.send(.journal(.chunk(id: id, offset: 0, bytes: stream)))
            try await ann.send(.journal(.commit(id: id)))
        }
        // And one whose name was sealed for another attachment; then an honest one, which arrives.
        try await ann.send(.journal(.begin(AttachmentInfo(id: "renamed", owner: owner,
                                                         name: try cipher.sealName("x", owner: owner, id: "a"),
                                                         size: Int64(genuine.reduce(0) { $0 + $1.count }),
                                                         sha256: SHA256Hex.digest(genuine.reduce(Data(), +))))))
        try await ann.send(.journal(.chunk(id: "renamed", offset: 0, bytes: genuine.reduce(Data(), +))))
        try await ann.send(.journal(.commit(id: "renamed")))
        try await ann.uploadAttachment(data, name: "honest.bin", id: "honest")

        #expect(await eventually(within: 10) { bobJournal.currentAttachments.count == 1 })
        #expect(bobJournal.currentAttachments.map(\.info.name) == ["honest.bin"])
        #expect(bobJournal.currentAttachments.first?.isLoaded == true)
        let failures = bobJournal.failures
        #expect(failures.count == 4, "\(failures)")
        #expect(failures.allSatisfy { $0.contains("could not be opened") }, "\(failures)")
        await bob.close()
        await ann.close()
        await server.shutdown()
    }

    /// The notices that arrive on `stream` within `seconds`.
    func collectNotices(_ stream: AsyncStream<ServerMessage>, within seconds: Double) async -> [Notice] {
        let found = NIOLockedValueBox<[Notice]>([])
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await message in stream {
                    if case .notice(let notice) = message { found.withLockedValue { $0.append(notice) } }
                }
            }
            group.addTask { try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) }
            await group.next()
            group.cancelAll()
        }
        return found.withLockedValue { $0 }
    }
}
