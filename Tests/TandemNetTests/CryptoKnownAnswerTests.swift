import Foundation
import Synchronization
import TandemCrypto
import Testing

/// The primitives behind sessions' keys, proofs and sealed messages (TandemCrypto, over OpenSSL's libcrypto)
/// against the published known answers of their standards.
@Suite("Cryptographic primitives: known answers")
struct CryptoKnownAnswerTests {
    // The hex helpers of the app-data cipher's known-answer tests.
    static func bytes(_ hex: String) -> [UInt8] { Array(AppDataCipherTests.bytes(hex: hex)) }

    static func hex<S: Sequence<UInt8>>(_ bytes: S) -> String { AppDataCipherTests.hex(bytes) }

    @Test("SHA-256 (FIPS 180-4 examples) in one call and over updates; a copy of a running hash goes on on its own; MD5 (RFC 1321)")
    func digests() {
        #expect(Self.hex(SHA256.hash(data: Data("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Self.hex(SHA256.hash(data: Data()))
            == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var running = SHA256()
        running.update(data: Data("a".utf8))
        let copy = running
        running.update(data: Data("bc".utf8))
        #expect(Self.hex(running.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Self.hex(copy.finalize()) == Self.hex(SHA256.hash(data: Data("a".utf8))), "the copy kept its own state")
        #expect(Self.hex(running.finalize()) == Self.hex(SHA256.hash(data: Data("abc".utf8))), "finalize changes nothing")
        // A million 'a's, in uneven pieces (FIPS 180-2's third example).
        var long = SHA256()
        var left = 1_000_000
        while left > 0 {
            let piece = min(left, 4093)
            long.update(data: [UInt8](repeating: 0x61, count: piece))
            left -= piece
        }
        #expect(Self.hex(long.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(Self.hex(Insecure.MD5.hash(data: Data("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
    }

    @Test("HMAC-SHA256 (RFC 4231 cases 1, 2 and 6: a key longer than a block), in one call and over updates")
    func hmac() {
        let one = HMAC<SHA256>.authenticationCode(for: Data("Hi There".utf8),
                                                  using: SymmetricKey(data: [UInt8](repeating: 0x0b, count: 20)))
        #expect(Self.hex(one) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        var two = HMAC<SHA256>(key: SymmetricKey(data: Data("Jefe".utf8)))
        two.update(data: Data("what do ya want ".utf8))
        two.update(data: Data("for nothing?".utf8))
        #expect(Self.hex(two.finalize()) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let six = HMAC<SHA256>.authenticationCode(for: Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                                                  using: SymmetricKey(data: [UInt8](repeating: 0xaa, count: 131)))
        #expect(Self.hex(six) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(HMAC<SHA256>.isValidAuthenticationCode(Array(one), authenticating: Data("Hi There".utf8),
                                                       using: SymmetricKey(data: [UInt8](repeating: 0x0b, count: 20))))
        #expect(!HMAC<SHA256>.isValidAuthenticationCode(Array(one), authenticating: Data("Hi there".utf8),
                                                        using: SymmetricKey(data: [UInt8](repeating: 0x0b, count: 20))))
    }

    @Test("HKDF-SHA256 (RFC 5869 cases 1 and 3: with salt and info, and with neither)")
    func hkdf() {
        let ikm = SymmetricKey(data: [UInt8](repeating: 0x0b, count: 22))
        let one = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: Self.bytes("000102030405060708090a0b0c"),
                                         info: Self.bytes("f0f1f2f3f4f5f6f7f8f9"), outputByteCount: 42)
        #expect(one.withUnsafeBytes { Self.hex($0) }
            == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let three = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: [UInt8](), info: [UInt8](), outputByteCount: 42)
        #expect(three.withUnsafeBytes { Self.hex($0) }
            == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
        #expect(three.bitCount == 42 * 8)
    }

    @Test("AES-GCM (the GCM specification's test cases 2 and 16); a changed byte of ciphertext, tag, data or key is refused; sizes")
    func aesGCM() throws {
        let two = try AES.GCM.seal([UInt8](repeating: 0, count: 16), using: SymmetricKey(data: [UInt8](repeating: 0, count: 16)),
                                   nonce: AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12)))
        #expect(Self.hex(two.ciphertext) == "0388dace60b6a392f328c2b971b2fe78")
        #expect(Self.hex(two.tag) == "ab6e47d42cec13bdf53a67b21257bddf")

        let key = SymmetricKey(data: Self.bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let nonce = try AES.GCM.Nonce(data: Self.bytes("cafebabefacedbaddecaf888"))
        let plaintext = Self.bytes("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = Self.bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
        #expect(Self.hex(box.ciphertext) == "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")
        #expect(Self.hex(box.tag) == "76fc6ece0f4e1768cddf8853bb2d551b")
        let combined = try #require(box.combined)
        #expect(combined.count == 12 + plaintext.count + 16)
        #expect(try AES.GCM.open(AES.GCM.SealedBox(combined: combined), using: key, authenticating: aad) == Data(plaintext))

        func refused(_ body: () throws -> Data) {
            #expect(throws: CryptoKitError.authenticationFailure) { _ = try body() }
        }
        for index in [12, 12 + 30, combined.count - 1] {
            var changed = combined
            changed[index] ^= 0x01
            refused { try AES.GCM.open(AES.GCM.SealedBox(combined: changed), using: key, authenticating: aad) }
        }
        refused { try AES.GCM.open(box, using: key, authenticating: aad.dropLast()) }
        refused { try AES.GCM.open(box, using: SymmetricKey(size: .bits256), authenticating: aad) }
        // Nothing to seal still authenticates the data.
        let empty = try AES.GCM.seal(Data(), using: key, authenticating: aad)
        #expect(empty.ciphertext.isEmpty && empty.tag.count == 16)
        #expect(try AES.GCM.open(empty, using: key, authenticating: aad).isEmpty)
        refused { try AES.GCM.open(empty, using: key, authenticating: Data()) }

        #expect(throws: CryptoKitError.incorrectParameterSize) { try AES.GCM.SealedBox(combined: [UInt8](repeating: 0, count: 27)) }
        #expect(throws: CryptoKitError.incorrectParameterSize) { try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 11)) }
        #expect(throws: CryptoKitError.incorrectKeySize) {
            try AES.GCM.seal(Data("x".utf8), using: SymmetricKey(data: [UInt8](repeating: 0, count: 20)))
        }
        #expect(Set((0..<64).map { _ in Array(AES.GCM.Nonce()) }).count == 64, "random nonces")
        #expect(SymmetricKey(size: .bits128).bitCount == 128)
    }

    @Test("each thread's AES-GCM contexts are set up once and reused: seals and opens in place and boxed, across key sizes, a 16-byte nonce and a refused open, on four threads at once, each the known answer")
    func aesGCMContextsReused() throws {
        let zeroKey = SymmetricKey(data: [UInt8](repeating: 0, count: 16))
        let zeroNonce = try AES.GCM.Nonce(bytes: [UInt8](repeating: 0, count: 12))
        let key = SymmetricKey(data: Self.bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let nonce = try AES.GCM.Nonce(bytes: Self.bytes("cafebabefacedbaddecaf888"))
        let plaintext = Self.bytes("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = Self.bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sixteen = Self.bytes("000102030405060708090a0b0c0d0e0f")
        let caseSixteen = "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
            + "76fc6ece0f4e1768cddf8853bb2d551b"

        /// One round: case 2 boxed, case 16 in place, a 16-byte nonce's round trip, a refused open, case 2 again.
        @Sendable func round() throws -> [String] {
            var answers: [String] = []
            let two = try AES.GCM.seal([UInt8](repeating: 0, count: 16), using: zeroKey, nonce: zeroNonce)
            answers.append(Self.hex(two.ciphertext) + Self.hex(two.tag))
            var sealed = [UInt8](repeating: 0, count: plaintext.count + 16)
            try plaintext.withUnsafeBytes { plain in
                try aad.withUnsafeBytes { aad in
                    try sealed.withUnsafeMutableBytes { out in
                        try AES.GCM.seal(plain, using: key, nonce: nonce, authenticating: aad, into: out)
                    }
                }
            }
            answers.append(Self.hex(sealed))
            var opened = [UInt8](repeating: 0xff, count: plaintext.count)
            try sealed.withUnsafeBytes { box in
                try aad.withUnsafeBytes { aad in
                    try opened.withUnsafeMutableBytes { out in
                        try AES.GCM.open(UnsafeRawBufferPointer(rebasing: box[..<plaintext.count]),
                                         tag: UnsafeRawBufferPointer(rebasing: box[plaintext.count...]),
                                         using: key, nonce: nonce, authenticating: aad, into: out)
                    }
                }
            }
            answers.append(opened == plaintext ? "opened" : "wrong plaintext")
            let long = try AES.GCM.Nonce(bytes: sixteen)
            let other = try AES.GCM.seal(plaintext, using: key, nonce: long, authenticating: aad)
            answers.append(try AES.GCM.open(other, using: key, authenticating: aad) == Data(plaintext) ? "long nonce" : "wrong")
            var changed = sealed
            changed[3] ^= 0x01
            let refused = (try? changed.withUnsafeBytes { box in
                try aad.withUnsafeBytes { aad in
                    try opened.withUnsafeMutableBytes { out in
                        try AES.GCM.open(UnsafeRawBufferPointer(rebasing: box[..<plaintext.count]),
                                         tag: UnsafeRawBufferPointer(rebasing: box[plaintext.count...]),
                                         using: key, nonce: nonce, authenticating: aad, into: out)
                    }
                }
            }) == nil
            answers.append(refused && opened.allSatisfy { $0 == 0 } ? "refused, zeroed" : "not refused")
            let again = try AES.GCM.open(AES.GCM.SealedBox(nonce: zeroNonce, ciphertext: two.ciphertext, tag: two.tag),
                                         using: zeroKey)
            answers.append(again == Data(count: 16) ? "case 2 opened" : "wrong")
            return answers
        }
        let expected = ["0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf", caseSixteen, "opened", "long nonce",
                        "refused, zeroed", "case 2 opened"]
        #expect(try round() == expected)
        let results = Mutex<[[String]]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<50 {
                let answers = (try? round()) ?? ["threw"]
                results.withLock { $0.append(answers) }
            }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 200)
        #expect(all.allSatisfy { $0 == expected })
    }
}
