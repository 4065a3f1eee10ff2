import CTandemTLS

/// Why TLS failed: its configuration, the handshake (a certificate that does not check out among them), the
/// connection after it, or a peer that closed without TLS's goodbye (`uncleanShutdown`).
public enum TandemTLSError: Error, Equatable, CustomStringConvertible {
    case configuration(String)
    case handshake(String)
    case failed(String)
    /// The connection ended without the peer's close_notify.
    case uncleanShutdown
    /// The server's certificate is not the one the invite pins.
    case pinMismatch

    public var description: String {
        switch self {
        case .configuration(let text), .handshake(let text), .failed(let text): text
        case .uncleanShutdown: "the connection ended without TLS's close_notify"
        case .pinMismatch: "the server's certificate is not the one the invite pins (its SHA-256 differs)"
        }
    }
}

/// What many TLS connections share: a server's certificate chain and key, or a client's way of checking servers.
/// Immutable once made (OpenSSL's `SSL_CTX`), so connections on any thread use it.
public final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The SHA-256 of the DER of a server context's leaf certificate (nil for a client's).
    public let leafSHA256: [UInt8]?
    /// Whether a server context's leaf certificate is self-signed (its subject is its issuer).
    public let leafIsSelfSigned: Bool

    /// A server's context from PEM files: the certificate chain (the leaf first) and its private key.
    public static func server(certificateChainPath: String,
                              privateKeyPath: String) throws(TandemTLSError) -> TLSContext {
        var error = [CChar](repeating: 0, count: 256)
        guard let pointer = tdm_tls_server_context(certificateChainPath, privateKeyPath, &error, error.count) else {
            throw .configuration(text(error))
        }
        return TLSContext(pointer)
    }

    /// A client's context that checks servers against trust roots: those in the PEM file `trustRootsPath`, or the
    /// system's; the host the connection names must be the certificate's.
    public static func client(trustRootsPath: String?) throws(TandemTLSError) -> TLSContext {
        try client(verify: true, trustRootsPath: trustRootsPath)
    }

    /// A client's context that checks nothing itself: for connections that pin the server's certificate.
    public static func pinningClient() throws(TandemTLSError) -> TLSContext {
        try client(verify: false, trustRootsPath: nil)
    }

    private static func client(verify: Bool, trustRootsPath: String?) throws(TandemTLSError) -> TLSContext {
        var error = [CChar](repeating: 0, count: 256)
        guard let pointer = tdm_tls_client_context(verify ? 1 : 0, trustRootsPath, &error, error.count) else {
            throw .configuration(text(error))
        }
        return TLSContext(pointer)
    }

    private init(_ pointer: OpaquePointer) {
        self.pointer = pointer
        var digest = [UInt8](repeating: 0, count: 32)
        var selfSigned: Int32 = 0
        if tdm_tls_context_leaf(pointer, &digest, &selfSigned) == 1 {
            leafSHA256 = digest
            leafIsSelfSigned = selfSigned != 0
        } else {
            leafSHA256 = nil
            leafIsSelfSigned = false
        }
    }

    deinit { tdm_tls_context_free(pointer) }
}

/// A NUL-terminated C string in `characters`, as text.
func text(_ characters: [CChar]) -> String {
    String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
