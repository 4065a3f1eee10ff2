import CTandemCrypto
import Foundation

/// The sizes of key `SymmetricKey(size:)` makes.
public struct SymmetricKeySize: Sendable, Hashable {
    public let bitCount: Int
    public init(bitCount: Int) {
        precondition(bitCount > 0 && bitCount % 8 == 0, "a key is a whole number of bytes")
        self.bitCount = bitCount
    }
    public static let bits128 = SymmetricKeySize(bitCount: 128)
    public static let bits192 = SymmetricKeySize(bitCount: 192)
    public static let bits256 = SymmetricKeySize(bitCount: 256)
}

/// A secret key's bytes, zeroed when the last copy of the key goes.
public struct SymmetricKey: Sendable, ContiguousBytes {
    final class Storage: @unchecked Sendable {
        var bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        deinit { bytes.withUnsafeMutableBytes { tdm_cleanse($0.baseAddress, $0.count) } }
    }
    let storage: Storage

    /// A key of these bytes.
    public init<D: ContiguousBytes>(data: D) {
        storage = Storage(data.withUnsafeBytes { Array($0) })
    }

    /// A fresh random key of `size` (OpenSSL's CSPRNG).
    public init(size: SymmetricKeySize) {
        var bytes = [UInt8](repeating: 0, count: size.bitCount / 8)
        guard tdm_random(&bytes, bytes.count) == 1 else { fatalError("OpenSSL's random number generator failed") }
        storage = Storage(bytes)
    }

    public var bitCount: Int { storage.bytes.count * 8 }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.bytes.withUnsafeBytes(body)
    }
}

/// What the ciphers throw.
public enum CryptoKitError: Error, Equatable, Sendable {
    /// A key, nonce, tag or sealed box of a size the operation cannot take.
    case incorrectParameterSize
    /// A key of a size the cipher has no variant for.
    case incorrectKeySize
    /// The tag does not authenticate the ciphertext and the data given with it.
    case authenticationFailure
    /// The underlying library failed.
    case underlyingCoreCryptoError(error: Int32)
}
