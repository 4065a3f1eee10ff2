import Foundation
import TandemCore
import Testing
@testable import TandemNet

@Suite("App data cipher")
struct AppDataCipherTests {
    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(hex: String) -> Data {
        var out = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    /// Computed independently with Python's `cryptography` package:
    /// `HKDF(SHA256(), 32, salt=b"movie-night", info=b"tandem app data v1").derive(b"correct horse battery staple")`,
    /// and `nonce ‖ AESGCM(key).encrypt(nonce, b"hello, tandem", None)` with nonce = bytes(range(12)).
    @Test("the key derivation and box layout match an independent implementation")
    func knownAnswer() throws {
        let cipher = AppDataCipher(secret: "correct horse battery staple", session: "movie-night")
        #expect(Self.hex(cipher.keyBytes) == "bcf9205a0233efbc8782c7348bcd78ac1342039a4b9d79f25c7415be9b317456")
        let box = Self.bytes(hex: "000102030405060708090a0bb9b434f42913247e6f7a937b33e402fba794b135c579cda46dacf18b0e")
        #expect(try cipher.open(box) == Data("hello, tandem".utf8))
        #expect(cipher.overhead == 28)
    }

    @Test("a sealed box opens to the plaintext; two seals of the same plaintext differ")
    func roundTrip() throws {
        let cipher = AppDataCipher(invite: Invite(host: "127.0.0.1", session: "s1", secret: "sesame"))
        for plaintext in [Data(), Data("hi".utf8), Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })] {
            let first = try cipher.seal(plaintext)
            let second = try cipher.seal(plaintext)
            #expect(first.count == plaintext.count + cipher.overhead)
            #expect(first != second)
            #expect(first.prefix(12) != second.prefix(12), "nonces repeat")
            #expect(try cipher.open(first) == plaintext)
            #expect(try cipher.open(second) == plaintext)
        }
    }

    @Test("an altered, truncated or foreign box does not open")
    func tampering() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let box = try cipher.seal(Data("pay the bearer".utf8))
        for index in [0, 11, 12, box.count - 17, box.count - 1] {
            var altered = box
            altered[index] ^= 0x01
            #expect(throws: (any Error).self) { try cipher.open(altered) }
        }
        #expect(throws: (any Error).self) { try cipher.open(box.dropLast()) }
        #expect(throws: (any Error).self) { try cipher.open(Data(count: 10)) }
        // Same secret, another session: another key.
        #expect(throws: (any Error).self) { try AppDataCipher(secret: "sesame", session: "s2").open(box) }
        #expect(throws: (any Error).self) { try AppDataCipher(secret: "sesame!", session: "s1").open(box) }
    }

    @Test("a long attachment name is bounded before sealing, so the authority never truncates a sealed name")
    func longNamesFitSealed() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let sealed = try cipher.sealName(String(repeating: "é", count: 1_000))
        #expect(sealed.utf8.count <= TextBounds.maxAttachmentNameBytes)
        let opened = try cipher.openName(sealed)
        #expect(opened.utf8.count <= TextBounds.maxPlainAttachmentNameBytes && opened.utf8.count >= 250)
        #expect(opened.allSatisfy { $0 == "é" })
    }

    @Test("attachment records open however the sealed stream is cut; names are sealed")
    func records() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let data = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let sealed = try cipher.sealRecords(data, pieceSize: 4096)
        // Three records: 4096, 4096 and 1808 plaintext bytes, each framed by a 4-byte length.
        #expect(sealed.count == data.count + 3 * (4 + cipher.overhead))
        #expect(sealed.prefix(4) == Data([0, 0, 0x10, 0x1c]))  // 4096 + 28
        #expect(try cipher.openRecords(sealed) == data)
        #expect(try cipher.openRecords(Data(sealed)) == data)
        #expect(try cipher.openRecords(cipher.sealRecords(Data(), pieceSize: 4096)) == Data())
        #expect(throws: (any Error).self) { try cipher.openRecords(sealed.dropLast()) }
        var altered = sealed
        altered[sealed.count / 2] ^= 0x80
        #expect(throws: (any Error).self) { try cipher.openRecords(altered) }

        let name = try cipher.sealName("holiday photos.zip")
        #expect(!name.contains("holiday"))
        #expect(try cipher.openName(name) == "holiday photos.zip")
        #expect(throws: (any Error).self) { try AppDataCipher(secret: "x", session: "s1").openName(name) }
    }
}
