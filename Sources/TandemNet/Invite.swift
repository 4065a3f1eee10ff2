import TandemCrypto
import Foundation
import TandemCore
import NIOCore

/// An invitation to a session: `tandem://host:port/<session>#<secret>`, or `tandems://…` for TLS, optionally
/// with `?pin=<sha256 hex of the server certificate (DER)>` and `?lan=<address:port>` (the host's own address on its
/// network, for a joiner there whose router does not take it back in from its public address).
///
/// The secret sits in the URL fragment and never goes over the wire: joining proves knowledge of it with a
/// challenge–response (see docs/PROTOCOL.md).
public struct Invite: Hashable, Sendable, CustomStringConvertible {
    /// The port used when an invite names none.
    public static let defaultPort = 7420

    public var host: String
    public var port: Int
    public var session: String
    public var secret: String
    /// Whether the link is TLS (`tandems://`).
    public var tls: Bool
    /// SHA-256 of the server certificate (DER, 32 bytes) to pin instead of verifying against trust roots.
    public var pinnedCertificateSHA256: [UInt8]?
    /// The server's address and port on the host's own network (`?lan=`), an IP literal: dialled when `host` cannot
    /// be connected to — a home router that forwards its public port from outside but not from its own network.
    public var localNetworkAddress: (host: String, port: Int)? {
        get { lanHost.map { ($0, lanPort) } }
        set {
            lanHost = newValue?.host
            lanPort = newValue?.port ?? Invite.defaultPort
        }
    }
    private var lanHost: String?
    private var lanPort = Invite.defaultPort

    public init(host: String, port: Int = Invite.defaultPort, session: String, secret: String, tls: Bool = false,
                pinnedCertificateSHA256: [UInt8]? = nil) {
        self.host = host
        self.port = port
        self.session = session
        self.secret = secret
        self.tls = tls
        self.pinnedCertificateSHA256 = pinnedCertificateSHA256
    }

    /// Parses an invite URL, saying exactly what is wrong with a malformed one.
    public init(parsing text: String) throws(InviteError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased() else {
            throw .notAURL(trimmed)
        }
        switch scheme {
        case "tandem": tls = false
        case "tandems": tls = true
        default: throw .unsupportedScheme(scheme)
        }
        guard let host = components.host, !host.isEmpty else { throw .missingHost }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let port = components.port ?? Invite.defaultPort
        guard (1...65535).contains(port) else { throw .badPort(port) }
        self.port = port
        let path = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: true)
        guard path.count == 1, let session = String(path[0]).removingPercentEncoding, Invite.isValidSessionID(session)
        else { throw .missingSession }
        self.session = session
        guard let fragment = components.fragment, !fragment.isEmpty else { throw .missingSecret }
        self.secret = fragment
        if let pin = components.queryItems?.first(where: { $0.name == "pin" })?.value {
            let hex = pin.lowercased().hasPrefix("sha256:") ? String(pin.dropFirst(7)) : pin
            guard let bytes = Invite.bytes(fromHex: hex), bytes.count == 32 else { throw .badPin(pin) }
            pinnedCertificateSHA256 = bytes
        } else {
            pinnedCertificateSHA256 = nil
        }
        if let lan = components.queryItems?.first(where: { $0.name == "lan" })?.value {
            guard let address = Invite.localNetworkAddress(parsing: lan) else { throw .badLocalNetworkAddress(lan) }
            localNetworkAddress = address
        }
    }

    /// `a.b.c.d:port` or `[v6]:port`, an IP literal and a port in 1–65535; nil for anything else.
    static func localNetworkAddress(parsing text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (1...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard host.contains(":"), (try? SocketAddress(ipAddress: host, port: port)) != nil else { return nil }
        } else {
            guard !host.contains(":"), host.split(separator: ".").count == 4,
                  (try? SocketAddress(ipAddress: host, port: port)) != nil else { return nil }
        }
        return (host, port)
    }

    /// The invite as a URL string.
    public var description: String {
        var components = URLComponents()
        components.scheme = tls ? "tandems" : "tandem"
        components.host = host.contains(":") ? "[\(host)]" : host
        components.port = port
        components.path = "/" + session
        var items: [URLQueryItem] = []
        if let pin = pinnedCertificateSHA256 { items.append(URLQueryItem(name: "pin", value: SHA256Hex.hex(pin))) }
        if let lan = localNetworkAddress {
            items.append(URLQueryItem(name: "lan", value: (lan.host.contains(":") ? "[\(lan.host)]" : lan.host) + ":\(lan.port)"))
        }
        if !items.isEmpty { components.queryItems = items }
        components.fragment = secret
        return components.string ?? "\(components.scheme!)://\(host):\(port)/\(session)#\(secret)"
    }

    /// A fresh random session name and secret.
    public static func random(host: String, port: Int, tls: Bool = false,
                              pinnedCertificateSHA256: [UInt8]? = nil) -> Invite {
        Invite(host: host, port: port, session: randomToken(bytes: 6), secret: randomToken(bytes: 18), tls: tls,
               pinnedCertificateSHA256: pinnedCertificateSHA256)
    }

    /// Session names: 1–64 characters from `A–Z a–z 0–9 - _ .`.
    public static func isValidSessionID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64 && s.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
        }
    }

    static func randomToken(bytes count: Int) -> String {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func bytes(fromHex hex: String) -> [UInt8]? {
        let chars = Array(hex.replacingOccurrences(of: ":", with: ""))
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let b = UInt8(String(chars[i...i + 1]), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}

/// What is wrong with an invite.
public enum InviteError: Error, Hashable, Sendable, CustomStringConvertible {
    case notAURL(String)
    case unsupportedScheme(String)
    case missingHost
    case badPort(Int)
    case missingSession
    case missingSecret
    case badPin(String)
    case badLocalNetworkAddress(String)

    public var description: String {
        switch self {
        case .notAURL(let s): return "not an invite URL: \"\(s)\" (expected tandem://host:port/session#secret)"
        case .unsupportedScheme(let s): return "unsupported invite scheme \"\(s)\": use tandem:// or tandems:// (TLS)"
        case .missingHost: return "the invite names no server host (expected tandem://host:port/session#secret)"
        case .badPort(let p): return "the invite's port \(p) is out of range 1–65535"
        case .missingSession:
            return "the invite names no valid session (one path component of A–Z a–z 0–9 - _ ., e.g. tandem://host:port/movie-night#secret)"
        case .missingSecret: return "the invite has no secret after '#' (ask the host for the full invite)"
        case .badPin(let p): return "the invite's certificate pin \"\(p)\" is not 64 hex digits (a SHA-256)"
        case .badLocalNetworkAddress(let a):
            return "the invite's local address \"\(a)\" is not an IP address and port (e.g. lan=192.168.1.20:7420); ask the host for the invite again"
        }
    }
}

/// The challenge–response that proves knowledge of a session secret without sending it.
enum SessionAuth {
    /// The key both sides hold: SHA-256 of the secret's UTF-8 bytes. The server stores only this.
    static func key(forSecret secret: String) -> SymmetricKey {
        SymmetricKey(data: Data(SHA256.hash(data: Data(secret.utf8))))
    }

    /// HMAC-SHA256(key, serverNonce ‖ UTF-8(session) ‖ clientNonce).
    static func proof(key: SymmetricKey, serverNonce: Data, session: String, clientNonce: Data) -> Data {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: serverNonce)
        mac.update(data: Data(session.utf8))
        mac.update(data: clientNonce)
        return Data(mac.finalize())
    }

    static func verify(proof: Data, key: SymmetricKey, serverNonce: Data, session: String, clientNonce: Data) -> Bool {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: serverNonce)
        mac.update(data: Data(session.utf8))
        mac.update(data: clientNonce)
        return Data(mac.finalize()).constantTimeEquals(proof)
    }

    static func nonce() -> Data {
        var rng = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
}

extension Data {
    /// Compares without an early exit, so timing reveals nothing about where two MACs differ.
    func constantTimeEquals(_ other: Data) -> Bool {
        guard count == other.count else { return false }
        var diff: UInt8 = 0
        for (a, b) in zip(self, other) { diff |= a ^ b }
        return diff == 0
    }
}
