import CTandemCrypto
import Foundation

/// AES (FIPS 197).
public enum AES {
    /// AES in Galois/Counter Mode (NIST SP 800-38D) with 16-byte tags, from OpenSSL's libcrypto.
    public enum GCM {
        static let tagByteCount = 16
        static let standardNonceByteCount = 12

        /// A nonce: 12 random bytes, or given ones. Never use one twice under a key.
        public struct Nonce: Sendable, ContiguousBytes, Sequence {
            let bytes: [UInt8]
            /// 12 bytes from OpenSSL's CSPRNG.
            public init() {
                var bytes = [UInt8](repeating: 0, count: GCM.standardNonceByteCount)
                guard tdm_random(&bytes, bytes.count) == 1 else { fatalError("OpenSSL's random number generator failed") }
                self.bytes = bytes
            }
            /// These bytes (12 or more), without the generic path (datagrams).
            package init(bytes: [UInt8]) throws {
                guard bytes.count >= GCM.standardNonceByteCount else { throw CryptoKitError.incorrectParameterSize }
                self.bytes = bytes
            }
            /// These bytes (12 or more).
            public init<D: DataProtocol>(data: D) throws {
                guard data.count >= GCM.standardNonceByteCount else { throw CryptoKitError.incorrectParameterSize }
                bytes = Array(data)
            }
            public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
                try bytes.withUnsafeBytes(body)
            }
            public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
        }

        /// A sealed message: its nonce, ciphertext and tag.
        public struct SealedBox: Sendable {
            public let nonce: Nonce
            public let ciphertext: Data
            public let tag: Data

            public init<C: DataProtocol, T: DataProtocol>(nonce: Nonce, ciphertext: C, tag: T) throws {
                guard tag.count == GCM.tagByteCount else { throw CryptoKitError.incorrectParameterSize }
                self.nonce = nonce
                self.ciphertext = Data(ciphertext)
                self.tag = Data(tag)
            }

            /// Nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes).
            public init<D: DataProtocol>(combined: D) throws {
                let bytes = Array(combined)
                guard bytes.count >= GCM.standardNonceByteCount + GCM.tagByteCount else {
                    throw CryptoKitError.incorrectParameterSize
                }
                nonce = try Nonce(data: bytes[..<GCM.standardNonceByteCount])
                ciphertext = Data(bytes[GCM.standardNonceByteCount..<(bytes.count - GCM.tagByteCount)])
                tag = Data(bytes[(bytes.count - GCM.tagByteCount)...])
            }

            /// Nonce ‖ ciphertext ‖ tag, where the nonce has GCM's own 12 bytes; else nil.
            public var combined: Data? {
                guard nonce.bytes.count == GCM.standardNonceByteCount else { return nil }
                return Data(nonce.bytes) + ciphertext + tag
            }
        }

        public static func seal<P: DataProtocol>(_ message: P, using key: SymmetricKey, nonce: Nonce? = nil) throws
            -> SealedBox {
            try seal(message, using: key, nonce: nonce, authenticating: [UInt8]())
        }

        public static func seal<P: DataProtocol, A: DataProtocol>(_ message: P, using key: SymmetricKey,
                                                                  nonce: Nonce? = nil, authenticating aad: A) throws
            -> SealedBox {
            let nonce = nonce ?? Nonce()
            guard [16, 24, 32].contains(key.bitCount / 8) else { throw CryptoKitError.incorrectKeySize }
            var ciphertext = [UInt8](repeating: 0, count: message.count)
            var tag = [UInt8](repeating: 0, count: tagByteCount)
            let ok = key.withUnsafeBytes { key in
                nonce.withUnsafeBytes { nonce in
                    withContiguous(aad) { aad in
                        withContiguous(message) { plain in
                            ciphertext.withUnsafeMutableBytes { out in
                                tdm_aes_gcm_seal(key.bindMemory(to: UInt8.self).baseAddress, key.count,
                                                 nonce.bindMemory(to: UInt8.self).baseAddress, nonce.count,
                                                 aad.baseAddress, aad.count, plain.baseAddress, plain.count,
                                                 out.bindMemory(to: UInt8.self).baseAddress, &tag)
                            }
                        }
                    }
                }
            }
            guard ok == 1 else { throw CryptoKitError.underlyingCoreCryptoError(error: ok) }
            return try SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
        }

        /// Seals `plaintext` under `key` and `nonce`, authenticating `aad`, and writes the ciphertext and then the
        /// tag into `out`, which must be `plaintext.count + 16` bytes: no generic path and no copies (datagrams).
        package static func seal(_ plaintext: UnsafeRawBufferPointer, using key: SymmetricKey, nonce: Nonce,
                                 authenticating aad: UnsafeRawBufferPointer,
                                 into out: UnsafeMutableRawBufferPointer) throws {
            guard [16, 24, 32].contains(key.bitCount / 8) else { throw CryptoKitError.incorrectKeySize }
            guard out.count == plaintext.count + tagByteCount else { throw CryptoKitError.incorrectParameterSize }
            let bytes = out.bindMemory(to: UInt8.self)
            guard let start = bytes.baseAddress else { throw CryptoKitError.incorrectParameterSize }
            let ok = key.withUnsafeBytes { key in
                nonce.bytes.withUnsafeBufferPointer { nonce in
                    tdm_aes_gcm_seal(key.bindMemory(to: UInt8.self).baseAddress, key.count, nonce.baseAddress, nonce.count,
                                     aad.baseAddress, aad.count, plaintext.baseAddress, plaintext.count,
                                     start, start + plaintext.count)
                }
            }
            guard ok == 1 else { throw CryptoKitError.underlyingCoreCryptoError(error: ok) }
        }

        /// Opens `ciphertext` with its 16-byte `tag` under `key` and `nonce`, authenticating `aad`, into `out`
        /// (`ciphertext.count` bytes); throws `CryptoKitError.authenticationFailure` where the tag does not
        /// authenticate them (`out` is then zeroed). No generic path and no copies (datagrams).
        package static func open(_ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, using key: SymmetricKey,
                                 nonce: Nonce, authenticating aad: UnsafeRawBufferPointer,
                                 into out: UnsafeMutableRawBufferPointer) throws {
            guard [16, 24, 32].contains(key.bitCount / 8) else { throw CryptoKitError.incorrectKeySize }
            guard tag.count == tagByteCount, out.count == ciphertext.count else {
                throw CryptoKitError.incorrectParameterSize
            }
            let result = key.withUnsafeBytes { key in
                nonce.bytes.withUnsafeBufferPointer { nonce in
                    tdm_aes_gcm_open(key.bindMemory(to: UInt8.self).baseAddress, key.count, nonce.baseAddress, nonce.count,
                                     aad.baseAddress, aad.count, ciphertext.baseAddress, ciphertext.count,
                                     tag.bindMemory(to: UInt8.self).baseAddress, out.bindMemory(to: UInt8.self).baseAddress)
                }
            }
            switch result {
            case 1: return
            case 0: throw CryptoKitError.authenticationFailure
            default: throw CryptoKitError.underlyingCoreCryptoError(error: result)
            }
        }

        public static func open(_ box: SealedBox, using key: SymmetricKey) throws -> Data {
            try open(box, using: key, authenticating: [UInt8]())
        }

        /// The plaintext, where the tag authenticates the ciphertext and `aad` under `key`; else it throws
        /// `CryptoKitError.authenticationFailure`.
        public static func open<A: DataProtocol>(_ box: SealedBox, using key: SymmetricKey, authenticating aad: A) throws
            -> Data {
            guard [16, 24, 32].contains(key.bitCount / 8) else { throw CryptoKitError.incorrectKeySize }
            var plaintext = Data(count: box.ciphertext.count)
            let result = key.withUnsafeBytes { key in
                box.nonce.withUnsafeBytes { nonce in
                    withContiguous(aad) { aad in
                        box.ciphertext.withUnsafeBytes { ciphertext in
                            box.tag.withUnsafeBytes { tag in
                                plaintext.withUnsafeMutableBytes { out in
                                    tdm_aes_gcm_open(key.bindMemory(to: UInt8.self).baseAddress, key.count,
                                                     nonce.bindMemory(to: UInt8.self).baseAddress, nonce.count,
                                                     aad.baseAddress, aad.count, ciphertext.baseAddress, ciphertext.count,
                                                     tag.bindMemory(to: UInt8.self).baseAddress,
                                                     out.bindMemory(to: UInt8.self).baseAddress)
                                }
                            }
                        }
                    }
                }
            }
            switch result {
            case 1: return plaintext
            case 0: throw CryptoKitError.authenticationFailure
            default: throw CryptoKitError.underlyingCoreCryptoError(error: result)
            }
        }
    }
}
