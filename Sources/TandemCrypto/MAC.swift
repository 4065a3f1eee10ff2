import CTandemCrypto
import Foundation

/// HMAC (RFC 2104) over SHA-256, from OpenSSL's libcrypto: in one call, or over several `update`s then `finalize()`.
public struct HMAC<H: HashFunction>: Sendable {
    private let key: SymmetricKey
    private var message: [UInt8] = []

    /// Starts a code under `key`.
    public init(key: SymmetricKey) {
        precondition(H.self == SHA256.self, "only HMAC-SHA256 is built in")
        self.key = key
    }

    public mutating func update<D: DataProtocol>(data: D) { message.append(contentsOf: data) }

    /// The code of everything given so far.
    public func finalize() -> DigestBytes { Self.code(key: key, message: message) }

    public static func authenticationCode<D: DataProtocol>(for data: D, using key: SymmetricKey) -> DigestBytes {
        withContiguous(data) { bytes in code(key: key, message: bytes) }
    }

    /// Whether `code` is the code of `data` under `key`, compared in constant time.
    public static func isValidAuthenticationCode<C: ContiguousBytes, D: DataProtocol>(
        _ code: C, authenticating data: D, using key: SymmetricKey
    ) -> Bool {
        let expected = authenticationCode(for: data, using: key)
        return code.withUnsafeBytes { given in
            given.count == expected.bytes.count
                && zip(given, expected.bytes).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    private static func code<M: ContiguousBytes>(key: SymmetricKey, message: M) -> DigestBytes {
        precondition(H.self == SHA256.self, "only HMAC-SHA256 is built in")
        var code = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                tdm_hmac_sha256(key.baseAddress, key.count, message.baseAddress, message.count, &code)
            }
        }
        guard ok == 1 else { fatalError("OpenSSL's HMAC-SHA256 failed") }
        return DigestBytes(code)
    }
}

/// HKDF (RFC 5869) over HMAC-SHA256.
public enum HKDF<H: HashFunction> {
    /// Extract then expand: `outputByteCount` bytes (at most 255 × 32) from `inputKeyMaterial`, `salt` and `info`.
    public static func deriveKey<Salt: DataProtocol, Info: DataProtocol>(
        inputKeyMaterial: SymmetricKey, salt: Salt, info: Info, outputByteCount: Int
    ) -> SymmetricKey {
        precondition(outputByteCount > 0 && outputByteCount <= 255 * 32, "HKDF-SHA256 gives 1 to 8160 bytes")
        // Extract: PRK = HMAC(salt, IKM); an empty salt is HMAC's key of zeros, which is what an empty key is.
        let prk = SymmetricKey(data: HMAC<SHA256>.authenticationCode(
            for: inputKeyMaterial.withUnsafeBytes { Array($0) }, using: SymmetricKey(data: Array(salt))))
        // Expand: T(i) = HMAC(PRK, T(i-1) ‖ info ‖ i).
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        let info = Array(info)
        while output.count < outputByteCount {
            previous = Array(HMAC<SHA256>.authenticationCode(for: previous + info + [counter], using: prk))
            output.append(contentsOf: previous)
            counter &+= 1
        }
        let key = SymmetricKey(data: Array(output.prefix(outputByteCount)))
        output.withUnsafeMutableBytes { tdm_cleanse($0.baseAddress, $0.count) }
        previous.withUnsafeMutableBytes { tdm_cleanse($0.baseAddress, $0.count) }
        return key
    }
}
