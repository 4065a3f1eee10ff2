import Foundation
import Synchronization
import Testing
import TandemCore
import TandemSyncplay
import TandemBench
#if canImport(Glibc)
import Glibc
#endif

/// A certificate for 127.0.0.1 and localhost signed by a test authority, laid out as `syncplay-server --tls DIR`
/// wants it (cert.pem, privkey.pem, chain.pem), made with openssl; `authority` is the authority's certificate (the
/// trust root to give Tandem's clients), and `roots` holds it as OpenSSL's hashed directory, which the real Syncplay
/// client trusts through `SSL_CERT_DIR` (`SyncplayClientProcess(trustDirectory:)`). Not self-signed: Tandem offers
/// Syncplay clients STARTTLS only with a certificate they could check against roots. `selfSigned` is one that is.
struct SyncplayCertificate {
    let directory: String
    var certificate: String { directory + "/cert.pem" }
    var authority: String { directory + "/ca.pem" }
    var roots: String { directory + "/roots" }
    var selfSigned: String { directory + "/self-signed.pem" }

    /// Nil (with the test recorded as failed, saying why) when openssl is missing.
    static func make() throws -> SyncplayCertificate? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            Issue.record("openssl is not installed — `make deps` installs it")
            return nil
        }
        let directory = NSTemporaryDirectory() + "syncplay-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/roots", withIntermediateDirectories: true)
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<300 where process.isRunning { usleep(20_000) }
            guard !process.isRunning, process.terminationStatus == 0 else {
                throw SyncplayTestError("openssl \(arguments.first ?? "") could not make the test certificates")
            }
        }
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: directory + "/leaf.ext", atomically: true, encoding: .utf8)
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Tandem test authority",
                     "-keyout", "ca-key.pem", "-out", "ca.pem"])
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "privkey.pem", "-out", "leaf.csr"])
        try openssl(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "2",
                     "-extfile", "leaf.ext", "-out", "cert.pem"])
        try openssl(["req", "-x509", "-key", "privkey.pem", "-days", "2", "-subj", "/CN=localhost",
                     "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-out", "self-signed.pem"])
        try FileManager.default.copyItem(atPath: directory + "/ca.pem", toPath: directory + "/chain.pem")
        try FileManager.default.copyItem(atPath: directory + "/ca.pem", toPath: directory + "/roots/ca.pem")
        try openssl(["rehash", directory + "/roots"])
        return SyncplayCertificate(directory: directory)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

struct SyncplayTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One peer in the room: its connection, a play state that follows the room like a player would, and what it heard.
final class SyncplayTestPeer: Sendable {
    let connection: SyncplayConnection
    let playstate: Shared<SyncplayLocalPlaystate>
    private let heard: Shared<[SyncplayClientState.Event]>
    private let listener: Task<Void, Never>

    init(_ name: String, port: Int, room: String, tls: SyncplayTLS? = nil,
         file: SyncplayFile = SyncplayFile(name: "countdown.webm", duration: 92, size: .number(123_456))) async throws {
        let playstate = Shared(SyncplayLocalPlaystate(position: 0, paused: true))
        let heard = Shared<[SyncplayClientState.Event]>([])
        self.heard = heard
        connection = try await SyncplayConnection.connect(
            host: "127.0.0.1", port: port, tls: tls,
            configuration: .init(username: name, room: room, file: file)) { playstate.withLock { $0 } }
        self.playstate = playstate
        let events = connection.events
        listener = Task {
            for await event in events {
                heard.withLock { $0.append(event) }
                if case .roomState(let paused, let position, _, _) = event {
                    playstate.withLock { $0 = SyncplayLocalPlaystate(position: position, paused: paused) }
                }
            }
        }
    }

    var events: [SyncplayClientState.Event] { heard.withLock { $0 } }

    /// Waits up to `seconds` for an event that `matches`.
    func waitFor(_ seconds: Double = 10, _ matches: (SyncplayClientState.Event) -> Bool) async -> Bool {
        for _ in 0..<Int(seconds * 20) {
            if events.contains(where: matches) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// This peer's own change: its player state, then the room is told.
    func change(position: Double, paused: Bool, seek: Bool) {
        playstate.withLock { $0 = SyncplayLocalPlaystate(position: position, paused: paused) }
        connection.localChange(.init(position: position, paused: paused), seek: seek)
    }

    func close() async {
        await connection.close()
        listener.cancel()
    }
}

@Suite("Syncplay: Tandem connections in a real syncplay-server room", .serialized)
struct SyncplayServerTests {
    @Test("two peers in a room see each other join, follow each other's play, pause and seek, chat, and leave")
    func twoPeersInARoom() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let ann = try await SyncplayTestPeer("ann", port: server.port, room: "tandem-room")
        #expect(await ann.waitFor { if case .welcomed(let name, let room, _) = $0 { name == "ann" && room == "tandem-room" } else { false } })
        let bob = try await SyncplayTestPeer("bob", port: server.port, room: "tandem-room")
        #expect(await bob.waitFor { if case .usersListed(let users) = $0 { users["ann"] != nil } else { false } })
        #expect(await ann.waitFor { if case .userJoined("bob", _) = $0 { true } else { false } })

        // ann plays: bob hears the room playing, set by ann.
        ann.change(position: 0, paused: false, seek: false)
        #expect(await bob.waitFor { if case .roomState(false, _, _, "ann") = $0 { true } else { false } }, "\(bob.events.suffix(6))")
        // ann seeks to 42 s and pauses: bob hears a seek to 42 s, paused.
        ann.change(position: 42, paused: true, seek: true)
        #expect(await bob.waitFor { event in
            if case .roomState(true, let position, true, "ann") = event { abs(position - 42) < 0.5 } else { false }
        }, "\(bob.events.suffix(6))")
        // bob seeks back to 10 s: ann follows.
        bob.change(position: 10, paused: true, seek: true)
        #expect(await ann.waitFor { event in
            if case .roomState(true, let position, true, "bob") = event { abs(position - 10) < 0.5 } else { false }
        }, "\(ann.events.suffix(6))")
        // Heartbeats keep flowing and give a round trip on loopback; nobody toggles anybody in the meantime.
        let before = ann.events.count
        try await Task.sleep(for: .seconds(2.5))
        let flips = ann.events.dropFirst(before).filter { if case .roomState(false, _, _, _) = $0 { true } else { false } }
        #expect(flips.isEmpty, "the room played by itself: \(flips.prefix(4))")
        #expect(ann.connection.averageRTT > 0 && ann.connection.averageRTT < 0.5)
        #expect(ann.connection.endReason == nil && bob.connection.endReason == nil)

        ann.connection.chat("hello bob")
        #expect(await bob.waitFor { $0 == .chat(from: "ann", message: "hello bob") }, "\(bob.events.suffix(6))")

        await bob.close()
        #expect(await ann.waitFor { $0 == .userLeft("bob") }, "\(ann.events.suffix(6))")
        await ann.close()
    }

    @Test("an unreachable server is an error; a hello the server refuses ends the connection with its reason")
    func refusals() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        // This server has no password: a nonexistent port stands in for the unreachable case.
        await #expect(throws: SyncplayConnectionError.self) {
            _ = try await SyncplayConnection.connect(host: "127.0.0.1", port: 1, configuration: .init(username: "x", room: "r")) {
                SyncplayLocalPlaystate(position: 0, paused: true)
            }
        }
        // A Hello without a user name is refused by the server with an Error: connecting throws it, with its words.
        do {
            let peer = try await SyncplayTestPeer("", port: server.port, room: "r")
            await peer.close()
            Issue.record("a hello without a name was let in")
        } catch let error as SyncplayConnectionError {
            guard case .refused(let message) = error else { Issue.record("\(error)"); return }
            #expect(!message.isEmpty)
            #expect(error.description.contains("refused"))
        }
        // Something that never answers the hello (a listener that says nothing) is given up on in bounded time.
        let (silent, silentPort) = try #require(Self.silentListener())
        defer { close(silent) }
        let started = ContinuousClock.now
        await #expect(throws: SyncplayConnectionError.self) {
            _ = try await SyncplayConnection.connect(host: "127.0.0.1", port: silentPort, configuration: .init(username: "x", room: "r"),
                                                     answerTimeout: .milliseconds(500)) { nil }
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}

extension SyncplayServerTests {
    /// A TCP listener on 127.0.0.1 that never accepts: the kernel completes connections to it, nothing is ever said.
    static func silentListener() -> (Int32, Int)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound else { close(fd); return nil }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func isTLSError(_ error: any Error, containing text: String) -> Bool {
        guard case .tls(let detail) = error as? SyncplayConnectionError else { return false }
        return detail.contains(text)
    }

    @Test("STARTTLS: a server that offers TLS is joined over it (its certificate checked), beside a plain peer; one without TLS and an untrusted certificate are refused")
    func startTLS() async throws {
        guard let certificate = try SyncplayCertificate.make() else { return }
        defer { certificate.remove() }
        let secure = try await SyncplayServerProcess(tls: certificate.directory)
        defer { secure.stop() }
        let ann = try await SyncplayTestPeer("ann", port: secure.port, room: "tls-room",
                                             tls: SyncplayTLS(trustRootsPath: certificate.authority))
        #expect(await ann.waitFor { if case .welcomed("ann", "tls-room", _) = $0 { true } else { false } }, "\(ann.events.prefix(4))")
        // A plain Syncplay peer in the same room: both ways across the server.
        let bob = try await SyncplayTestPeer("bob", port: secure.port, room: "tls-room")
        #expect(await ann.waitFor { if case .userJoined("bob", _) = $0 { true } else { false } })
        bob.change(position: 42, paused: true, seek: true)
        #expect(await ann.waitFor { event in
            if case .roomState(true, let position, true, "bob") = event { abs(position - 42) < 0.5 } else { false }
        }, "\(ann.events.suffix(6))")
        ann.connection.chat("over tls")
        #expect(await bob.waitFor { $0 == .chat(from: "ann", message: "over tls") })
        await bob.close()
        await ann.close()

        // The same server, but this certificate is not among the system's roots.
        await #expect { _ = try await SyncplayConnection.connect(host: "127.0.0.1", port: secure.port, tls: SyncplayTLS(),
                                                                 configuration: .init(username: "eve", room: "tls-room")) {
            SyncplayLocalPlaystate(position: 0, paused: true) } } throws: { Self.isTLSError($0, containing: "the handshake failed") }

        // A server without TLS says so, and nothing goes out in the clear.
        let plain = try await SyncplayServerProcess()
        defer { plain.stop() }
        await #expect { _ = try await SyncplayConnection.connect(host: "127.0.0.1", port: plain.port,
                                                                 tls: SyncplayTLS(trustRootsPath: certificate.authority),
                                                                 configuration: .init(username: "eve", room: "r")) {
            SyncplayLocalPlaystate(position: 0, paused: true) } } throws: { Self.isTLSError($0, containing: "does not offer TLS") }
    }
}

/// `tandem join syncplay://…`: real tandem processes in a real syncplay-server room.
@Suite("Syncplay rooms from the command line", .serialized)
struct SyncplayJoinProcessTests {
    static let sample = TandemBinary.sample("countdown.webm")

    static func join(_ port: Int, room: String, name: String, extra: [String] = []) throws -> TandemProcess {
        try TandemProcess(["join", "syncplay://127.0.0.1:\(port)/\(room)", sample, "--headless", "--json", "--name", name] + extra)
    }

    static func settled(_ process: TandemProcess) -> JSON? {
        process.events("timeline").last { $0["state"]?.string != "waiting" }
    }

    @Test("two tandem peers following a syncplay-server room by its rules (--syncplay-only) follow each other's play, seek and pause; chat and arrivals cross")
    func twoTandemPeersInARoom() async throws {
        let server = try await SyncplayServerProcess()
        defer { server.stop() }
        let ann = try Self.join(server.port, room: "movie", name: "ann", extra: ["--syncplay-only"])
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")
        let bob = try Self.join(server.port, room: "movie", name: "bob", extra: ["--syncplay-only"])
        defer { bob.stop() }
        #expect(await ann.event("notice", within: 20) { $0["text"]?.string == "bob joined the Syncplay room" } != nil,
                "\(ann.stderr)")
        #expect(await bob.event("participants", within: 20) != nil)

        // ann plays: bob's session plays.
        ann.send("play")
        #expect(await bob.wait(for: 15) { Self.settled($0)?["state"]?.string == "playing" }, "\(bob.events("timeline"))")
        // ann seeks to 0:30 while playing: bob plays from 0:30.
        ann.send("seek 30")
        #expect(await bob.wait(for: 15) { p in
            Self.settled(p)?["state"]?.string == "playing" && abs((Self.settled(p)?["anchorItemTime"]?.number ?? 0) - 30) < 1
        }, "\(bob.events("timeline").suffix(3))")
        // bob pauses: ann pauses near where bob did.
        try await Task.sleep(for: .seconds(1))
        bob.send("pause")
        #expect(await ann.wait(for: 15) { Self.settled($0)?["state"]?.string == "paused" }, "\(ann.events("timeline").suffix(3))")
        let annAt = Self.settled(ann)?["anchorItemTime"]?.number ?? 0
        let bobAt = Self.settled(bob)?["anchorItemTime"]?.number ?? 0
        #expect(abs(annAt - bobAt) < 0.5, "ann paused at \(annAt), bob at \(bobAt)")
        // Chat crosses the room (shown as the bridge's line, with the room member's name in it).
        ann.send("chat popcorn?")
        #expect(await bob.event("chat", within: 15) { $0["text"]?.string == "ann: popcorn?" } != nil)

        // bob leaves: ann hears it from the room.
        bob.send("leave")
        #expect(await bob.exitCode(within: 20) == 0, "\(bob.stderr)")
        #expect(await ann.event("notice", within: 20) { $0["text"]?.string == "bob left the Syncplay room" } != nil)
        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")
    }

    @Test("a bad room address and an unreachable server are clear errors with exit codes")
    func badAddresses() async throws {
        let noRoom = try TandemProcess(["join", "syncplay://127.0.0.1:1/", Self.sample, "--headless"])
        #expect(await noRoom.exitCode(within: 20) == 6)
        #expect(noRoom.stderr.contains("ROOM"))
        let unreachable = try TandemProcess(["join", "syncplay://127.0.0.1:1/movie", Self.sample, "--headless"])
        #expect(await unreachable.exitCode(within: 30) == 4, "\(unreachable.stderr)")
        #expect(unreachable.stderr.contains("Syncplay"))
    }
}

extension SyncplayJoinProcessTests {
    @Test("tandem join syncplays://: joins a TLS room with --trust-roots; refused without it, and by a server without TLS")
    func joinOverTLS() async throws {
        guard let certificate = try SyncplayCertificate.make() else { return }
        defer { certificate.remove() }
        let server = try await SyncplayServerProcess(tls: certificate.directory)
        defer { server.stop() }
        let watcher = try await SyncplayTestPeer("watcher", port: server.port, room: "movie")
        defer { Task { await watcher.close() } }
        let ann = try TandemProcess(["join", "syncplays://127.0.0.1:\(server.port)/movie", Self.sample, "--headless",
                                     "--json", "--name", "ann", "--trust-roots", certificate.authority])
        defer { ann.stop() }
        #expect(await ann.event("joined", within: 20) != nil, "\(ann.stderr)")
        #expect(await watcher.waitFor(20) { if case .userJoined("ann", _) = $0 { true } else { false } }, "\(watcher.events.suffix(4))")
        ann.send("leave")
        #expect(await ann.exitCode(within: 20) == 0, "\(ann.stderr)")

        let untrusted = try TandemProcess(["join", "syncplays://127.0.0.1:\(server.port)/movie", Self.sample, "--headless"])
        #expect(await untrusted.exitCode(within: 30) == 4, "\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("TLS"), "\(untrusted.stderr)")
        let plain = try await SyncplayServerProcess()
        defer { plain.stop() }
        let refused = try TandemProcess(["join", "syncplays://127.0.0.1:\(plain.port)/movie", Self.sample, "--headless",
                                         "--trust-roots", certificate.authority])
        #expect(await refused.exitCode(within: 30) == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("does not offer TLS"), "\(refused.stderr)")
    }
}
