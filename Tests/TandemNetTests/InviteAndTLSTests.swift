import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

@Suite("Invites")
struct InviteTests {
    @Test("format and parse round-trip, with TLS and a pin")
    func roundTrip() throws {
        let pin = [UInt8](repeating: 0xab, count: 32)
        let invite = Invite(host: "relay.example.org", port: 9000, session: "movie-night", secret: "s3cr3t-_x",
                            tls: true, pinnedCertificateSHA256: pin)
        #expect(invite.description == "tandems://relay.example.org:9000/movie-night?pin=\(String(repeating: "ab", count: 32))#s3cr3t-_x")
        #expect(try Invite(parsing: invite.description) == invite)
        let plain = try Invite(parsing: "tandem://10.0.0.2/abc#xyz")
        #expect(plain.port == Invite.defaultPort && !plain.tls && plain.session == "abc" && plain.secret == "xyz")
        let v6 = try Invite(parsing: "tandem://[::1]:7000/abc#xyz")
        #expect(v6.host == "::1" && v6.port == 7000)
        #expect(try Invite(parsing: v6.description) == v6)
        let random = Invite.random(host: "h", port: 1)
        #expect(try Invite(parsing: random.description) == random)
    }

    @Test("malformed invites say what is wrong")
    func malformed() {
        #expect(throws: InviteError.unsupportedScheme("http")) { try Invite(parsing: "http://h:1/s#x") }
        #expect(throws: InviteError.missingSecret) { try Invite(parsing: "tandem://h:1/s") }
        #expect(throws: InviteError.missingSession) { try Invite(parsing: "tandem://h:1/#x") }
        #expect(throws: InviteError.missingSession) { try Invite(parsing: "tandem://h:1/a/b#x") }
        #expect(throws: InviteError.missingHost) { try Invite(parsing: "tandem:///s#x") }
        #expect(throws: InviteError.badPin("zz")) { try Invite(parsing: "tandems://h:1/s?pin=zz#x") }
        #expect(throws: InviteError.self) { try Invite(parsing: "not an invite") }
        #expect(InviteError.missingSecret.description.contains("#"))
    }

    @Test("the proof depends on secret, nonces and session, and verifies only with the right key")
    func proof() {
        let key = SessionAuth.key(forSecret: "right")
        let serverNonce = SessionAuth.nonce()
        let clientNonce = SessionAuth.nonce()
        let proof = SessionAuth.proof(key: key, serverNonce: serverNonce, session: "s", clientNonce: clientNonce)
        #expect(SessionAuth.verify(proof: proof, key: key, serverNonce: serverNonce, session: "s", clientNonce: clientNonce))
        #expect(!SessionAuth.verify(proof: proof, key: SessionAuth.key(forSecret: "wrong"), serverNonce: serverNonce,
                                    session: "s", clientNonce: clientNonce))
        #expect(!SessionAuth.verify(proof: proof, key: key, serverNonce: SessionAuth.nonce(), session: "s",
                                    clientNonce: clientNonce))
        #expect(!SessionAuth.verify(proof: proof, key: key, serverNonce: serverNonce, session: "t", clientNonce: clientNonce))
        #expect(serverNonce != clientNonce)
    }
}

@Suite("TLS")
struct TLSTests {
    /// A self-signed certificate made with openssl, or nil when openssl is not installed; the test removes its
    /// directory when done (`removeCertificate`).
    static func makeCertificate() throws -> ServerTLSFiles? {
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let openssl else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let cert = dir.appendingPathComponent("cert.pem").path
        let key = dir.appendingPathComponent("key.pem").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            try? FileManager.default.removeItem(at: dir)
            return nil
        }
        return ServerTLSFiles(certificateChainPath: cert, privateKeyPath: key)
    }

    static func removeCertificate(_ files: ServerTLSFiles) {
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: files.certificateChainPath).deletingLastPathComponent())
    }

    @Test("a pinned TLS link works; a wrong pin is refused; CA verification works")
    func tlsPinning() async throws {
        guard let files = try Self.makeCertificate() else {
            Issue.record("openssl is not installed: TLS test skipped (install openssl to run it)")
            return
        }
        defer { Self.removeCertificate(files) }
        let server = try await startTestServer(tls: files)
        let invite = try server.createSession(id: "secure")
        #expect(invite.tls && invite.pinnedCertificateSHA256 != nil)
        let parsed = try Invite(parsing: invite.description)
        let a = try await TandemClient.connect(invite: parsed, name: "a", options: clientOptions())
        var viaCA = invite
        viaCA.pinnedCertificateSHA256 = nil
        var caOptions = clientOptions()
        caOptions.trustRootsPath = files.certificateChainPath
        let b = try await TandemClient.connect(invite: viaCA, name: "b", options: caOptions)
        let stream = b.serverMessages()
        try await a.sendAppMessage(Data("over tls".utf8))
        #expect(await collectAppMessages(stream, count: 1, within: 3, opening: b).first?.payload == Data("over tls".utf8))

        var badPin = invite
        badPin.pinnedCertificateSHA256 = [UInt8](repeating: 0, count: 32)
        await #expect {
            _ = try await TandemClient.connect(invite: badPin, name: "eve", options: clientOptions())
        } throws: { error in
            if case TandemClientError.tls = error { return true }
            if case TandemClientError.unreachable = error { return true }
            return false
        }
        // A plain-TCP client cannot talk to a TLS server.
        var plain = invite
        plain.tls = false
        var quick = clientOptions()
        quick.connectTimeout = 1_000_000_000
        await #expect(throws: TandemClientError.self) {
            _ = try await TandemClient.connect(invite: plain, name: "eve", options: quick)
        }
        await server.shutdown()
    }
}
