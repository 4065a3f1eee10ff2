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

/// A TCP relay on 127.0.0.1 between clients and a server that keeps a copy of every byte passing either way:
/// what a network observer, or the server itself, sees.
final class RecordingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let captured = NIOLockedValueBox(Data())
    private let sockets = NIOLockedValueBox<[Int32]>([])

    init(upstreamPort: Int) throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listening >= 0 else { throw POSIXError(.EIO) }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listening, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = listening
        let captured = self.captured
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
                Thread.detachNewThread { Self.pump(from: client, to: server, into: captured) }
                Thread.detachNewThread { Self.pump(from: server, to: client, into: captured) }
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

    private static func pump(from source: Int32, to destination: Int32, into captured: NIOLockedValueBox<Data>) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            captured.withLockedValue { $0.append(contentsOf: buffer[0..<count]) }
            var sent = 0
            while sent < count {
                let n = buffer.withUnsafeBytes {
                    send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                }
                guard n > 0 else {
                    shutdown(source, Int32(SHUT_RDWR))
                    return
                }
                sent += n
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    /// Every byte relayed so far, both directions interleaved.
    var bytes: Data { captured.withLockedValue { $0 } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets.withLockedValue({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }
}

/// A connection's link with another session's key: what a participant sealing with the wrong key would send.
final class ForeignKeyLink: SessionLink {
    let base: TandemClientConnection
    let payloadCipher: (any PayloadCipher)?
    let seal: AppMessageSeal
    init(_ base: TandemClientConnection, cipher: AppDataCipher) {
        self.base = base
        payloadCipher = cipher
        seal = AppMessageSeal(cipher: cipher)
    }
    /// Sealed in its place, but with the other key.
    func sendAppMessage(_ message: OutgoingAppMessage) async throws {
        try await base.send(.appMessage(try seal.seal(message, from: localParticipantID, epoch: 0)))
    }
    var localParticipantID: ParticipantID { base.localParticipantID }
    var welcome: SessionSnapshot { base.welcome }
    var attachmentHasher: (@Sendable (Data) -> String)? { base.attachmentHasher }
    func send(_ message: ClientMessage) async throws { try await base.send(message) }
    func serverMessages() -> AsyncStream<ServerMessage> { base.serverMessages() }
    func clockMapping() -> ClockMapping? { base.clockMapping() }
    func clockQuality() -> (errorBound: TimeSpan, roundTrip: TimeSpan)? { base.clockQuality() }
    func close() async { await base.close() }
}

struct SecretNote: Codable, Sendable, Hashable {
    var text: String
}

/// Waits until `condition` holds, polling, for at most `seconds`.
func eventually(within seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return condition()
}

/// The first `count` elements of `stream`, or fewer after `seconds`.
func first<T: Sendable>(_ count: Int, of stream: AsyncStream<T>, within seconds: Double) async -> [T] {
    await withTaskGroup(of: [T]?.self) { group in
        group.addTask {
            var out: [T] = []
            for await value in stream {
                out.append(value)
                if out.count == count { break }
            }
            return out
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result ?? []
    }
}

@Suite("End-to-end encryption", .serialized)
struct EndToEndEncryptionTests {
    @Test("the relay carries messages and attachments it cannot read; participants get the plaintext")
    func relaySeesOnlyCiphertext() async throws {
        // A handshake timeout that a loaded machine and the proxy's extra hop cannot exceed.
        let server = try await startTestServer(handshakeTimeout: 10_000_000_000)
        let invite = try server.createSession(id: "e2e-watch")
        let proxy = try RecordingProxy(upstreamPort: server.port)
        var viaProxy = invite
        viaProxy.host = "127.0.0.1"
        viaProxy.port = proxy.port
        let ann = try await TandemClient.connect(invite: viaProxy, name: "ann", options: clientOptions())
        let bob = try await TandemClient.connect(invite: viaProxy, name: "bob", options: clientOptions())

        let marker = String(repeating: "PLAINTEXT-MARKER-7f3a9c ", count: 40)
        let fileName = "PLAINTEXT-NAME-our-secret-plans.mkv"
        var attachment = Data()
        while attachment.count < 300_000 { attachment.append(Data(marker.utf8)) }

        let annMessenger = GroupSessionMessenger(link: ann)
        let bobMessenger = GroupSessionMessenger(link: bob)
        let notes = bobMessenger.messages(of: SecretNote.self)
        let raw = bobMessenger.messages(of: Data.self)
        let bobJournal = GroupSessionJournal(link: bob)
        let annJournal = GroupSessionJournal(link: ann)
        // The journal receives while its run loop runs: a child task of this test, cancelled when it ends.
        async let _ = bobJournal.run()

        try await annMessenger.send(SecretNote(text: marker))
        try await annMessenger.send(Data(marker.utf8))
        let gotNotes = await first(1, of: notes, within: 5)
        let gotRaw = await first(1, of: raw, within: 5)
        #expect(gotNotes.map(\.0) == [SecretNote(text: marker)])
        #expect(gotNotes.first?.1.source == ann.localParticipantID)
        #expect(gotRaw.map(\.0) == [Data(marker.utf8)])

        let added = try await annJournal.add(attachment, name: fileName)
        #expect(added.info.name == fileName && added.info.size == Int64(attachment.count))
        #expect(await eventually(within: 10) { !bobJournal.currentAttachments.isEmpty || !bobJournal.failures.isEmpty })
        let received = try #require(bobJournal.currentAttachments.first)
        #expect(bobJournal.failures.isEmpty)
        #expect(received.data == attachment)
        #expect(received.info.name == fileName)
        #expect(received.info.size == Int64(attachment.count))
        #expect(received.info.id == added.info.id && received.info.owner == ann.localParticipantID)
        #expect(received.info == added.info)

        // A late joiner gets the stored (sealed) attachment replayed, and opens it.
        let carol = try await TandemClient.connect(invite: viaProxy, name: "carol", options: clientOptions())
        let carolJournal = GroupSessionJournal(link: carol)
        async let _ = carolJournal.run()
        #expect(await eventually(within: 10) { !carolJournal.currentAttachments.isEmpty || !carolJournal.failures.isEmpty })
        #expect(carolJournal.currentAttachments.first?.data == attachment)
        #expect(carolJournal.currentAttachments.first?.info.name == fileName)
        #expect(carol.welcome.attachments.first?.name != fileName)

        // Also the connection's own helpers seal.
        let carolStream = carol.serverMessages()
        try await ann.sendAppMessage(Data(marker.utf8))
        let helper = await collectAppMessages(carolStream, count: 1, within: 3)
        #expect(helper.first.map { $0.payload != Data(marker.utf8) } == true)
        #expect(helper.first.flatMap { openedPayload($0, with: carol) } == Data(marker.utf8))
        try await ann.uploadAttachment(attachment, name: fileName, id: "via-helper")
        #expect(await eventually(within: 10) { carolJournal.currentAttachments.count == 2 || !carolJournal.failures.isEmpty })
        #expect(carolJournal.currentAttachments.last?.info.name == fileName)
        #expect(carolJournal.currentAttachments.last?.data == attachment)

        await ann.close()
        await bob.close()
        await carol.close()
        proxy.stop()
        await server.shutdown()

        let seen = proxy.bytes
        // Everything above went through the proxy...
        #expect(seen.count > 3 * attachment.count)
        #expect(seen.range(of: Data("carol".utf8)) != nil, "the capture misses the session traffic")
        #expect(seen.range(of: Data(added.info.id.utf8)) != nil, "the capture misses the journal traffic")
        // ...and none of the app data was readable on the way.
        #expect(seen.range(of: Data("PLAINTEXT-MARKER".utf8)) == nil, "a message or attachment crossed in the clear")
        #expect(seen.range(of: Data("PLAINTEXT-NAME".utf8)) == nil, "an attachment name crossed in the clear")
        #expect(seen.range(of: Data("secret-plans".utf8)) == nil)
        #expect(seen.range(of: Data("SecretNote".utf8)) == nil, "a Codable message's type crossed in the clear")
        // Nor the secret itself (the handshake is a challenge–response).
        #expect(seen.range(of: Data(invite.secret.utf8)) == nil)
    }

    @Test("a message or attachment sealed with another session's key is dropped; the session goes on")
    func foreignKeyIsDropped() async throws {
        // A handshake timeout that a loaded machine and the proxy's extra hop cannot exceed.
        let server = try await startTestServer(handshakeTimeout: 10_000_000_000)
        let invite = try server.createSession(id: "e2e-foreign")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions())
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: clientOptions())
        let foreign = ForeignKeyLink(ann, cipher: AppDataCipher(secret: invite.secret, session: "another-session"))

        let bobMessenger = GroupSessionMessenger(link: bob)
        let notes = bobMessenger.messages(of: SecretNote.self)
        let bobJournal = GroupSessionJournal(link: bob)
        async let _ = bobJournal.run()

        try await GroupSessionMessenger(link: foreign).send(SecretNote(text: "from elsewhere"))
        try await GroupSessionMessenger(link: ann).send(SecretNote(text: "from ann"))
        let got = await first(1, of: notes, within: 5)
        #expect(got.map(\.0) == [SecretNote(text: "from ann")])
        #expect(bob.appDataDrops.altered == 1)

        // The server accepts the foreign attachment (its digest matches what passed) but Bob cannot open it.
        try await GroupSessionJournal(link: foreign).add(Data("not for you".utf8), name: "elsewhere.txt")
        #expect(await eventually(within: 5) { !bobJournal.failures.isEmpty })
        #expect(bobJournal.currentAttachments.isEmpty)
        #expect(bobJournal.failures.first?.contains("could not be opened") == true)
        #expect(bobJournal.failures.first?.contains("elsewhere.txt") == false)
        try await GroupSessionJournal(link: ann).add(Data("for you".utf8), name: "here.txt")
        #expect(await eventually(within: 5) { !bobJournal.currentAttachments.isEmpty })
        #expect(bobJournal.currentAttachments.map(\.info.name) == ["here.txt"])

        #expect(ann.closedReason == nil && bob.closedReason == nil)
        let later = bobMessenger.messages(of: SecretNote.self)
        try await GroupSessionMessenger(link: ann).send(SecretNote(text: "still here"))
        #expect(await first(1, of: later, within: 5).map(\.0) == [SecretNote(text: "still here")])
        await server.shutdown()
    }
}
