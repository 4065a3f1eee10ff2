import CTandemCrypto
import Foundation

/// A hash function Tandem uses: SHA-256 (the only one with HMAC and HKDF here).
public protocol HashFunction: Sendable {
    associatedtype Digest: Sequence<UInt8> & Sendable
    /// The digest's length in bytes.
    static var byteCount: Int { get }
    static func hash<D: DataProtocol>(data: D) -> Digest
}

/// A digest's bytes: a sequence of them, compared and hashed by value, printed in hex.
public struct DigestBytes: Sequence, Hashable, Sendable, CustomStringConvertible, ContiguousBytes {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
    public var underestimatedCount: Int { bytes.count }
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
    public var description: String { bytes.map { String(format: "%02x", $0) }.joined() }
}

/// SHA-256 (FIPS 180-4), from OpenSSL's libcrypto: in one call (`hash(data:)`), or over several `update`s then
/// `finalize()`. A value: a copy goes on on its own.
public struct SHA256: HashFunction {
    public typealias Digest = DigestBytes
    public static let byteCount = 32

    /// The running state, copied before a change where another value shares it.
    final class Context: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
        deinit { tdm_sha256_free(pointer) }
    }
    private var context: Context

    public init() {
        guard let pointer = tdm_sha256_new() else { fatalError("OpenSSL could not set up SHA-256 (out of memory)") }
        context = Context(pointer)
    }

    public mutating func update<D: DataProtocol>(data: D) {
        if !isKnownUniquelyReferenced(&context) {
            guard let copy = tdm_sha256_copy(context.pointer) else { fatalError("OpenSSL could not copy a SHA-256 state") }
            context = Context(copy)
        }
        for region in data.regions {
            region.withUnsafeBytes { bytes in
                guard tdm_sha256_update(context.pointer, bytes.baseAddress, bytes.count) == 1 else {
                    fatalError("OpenSSL's SHA-256 failed")
                }
            }
        }
    }

    public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        update(data: bufferPointer)
    }

    /// The digest of everything given so far; this value can go on being updated.
    public func finalize() -> DigestBytes {
        var digest = [UInt8](repeating: 0, count: 32)
        guard tdm_sha256_digest(context.pointer, &digest) == 1 else { fatalError("OpenSSL's SHA-256 failed") }
        return DigestBytes(digest)
    }

    public static func hash<D: DataProtocol>(data: D) -> DigestBytes {
        var digest = [UInt8](repeating: 0, count: 32)
        let ok = withContiguous(data) { tdm_sha256($0.baseAddress, $0.count, &digest) }
        guard ok == 1 else { fatalError("OpenSSL's SHA-256 failed") }
        return DigestBytes(digest)
    }
}

/// Digests for compatibility with other programs only, never for security.
public enum Insecure {
    /// MD5 (RFC 1321): what Syncplay carries a room password as.
    public enum MD5 {
        public static func hash<D: DataProtocol>(data: D) -> DigestBytes {
            var digest = [UInt8](repeating: 0, count: 16)
            let ok = withContiguous(data) { tdm_md5($0.baseAddress, $0.count, &digest) }
            guard ok == 1 else { fatalError("OpenSSL's MD5 failed") }
            return DigestBytes(digest)
        }
    }
}

/// `data`'s bytes in one contiguous buffer: its own where it has one, else a copy.
func withContiguous<D: DataProtocol, R>(_ data: D, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    if let result = try data.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    if data.regions.count == 1, let region = data.regions.first {
        return try region.withUnsafeBytes { try body($0) }
    }
    return try Array(data).withUnsafeBytes { try body($0) }
}
