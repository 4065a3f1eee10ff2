/// Where the operator's listener listens: `HOST:PORT` as `--metrics` takes it (`[::1]:9464` for IPv6; port 0 picks
/// a free one).
public struct OperatorAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host, without brackets.
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `HOST:PORT`; a host with a colon (IPv6) is written in brackets.
    public init(parsing text: String) throws(OperatorListenerError) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65535).contains(port) else { throw .badAddress(text) }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw .badAddress(text)
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }) else {
            throw .badAddress(text)
        }
        self.init(host: host, port: port)
    }

    public var description: String { "\(hostForURL):\(port)" }

    /// The host as a URL writes it (IPv6 in brackets).
    public var hostForURL: String { host.contains(":") ? "[\(host)]" : host }

    /// Whether the host is this machine's or a private network's (RFC 1918, IPv6 unique-local and link-local):
    /// the places a listener for the operator belongs. A name other than `localhost` is not judged private.
    public var isPrivate: Bool {
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "::1" { return true }
        if lowered.hasPrefix("fc") || lowered.hasPrefix("fd") || lowered.hasPrefix("fe80:") { return lowered.contains(":") }
        let octets = lowered.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
        guard octets.count == 4 else { return false }
        switch (octets[0], octets[1]) {
        case (127, _), (10, _), (192, 168): return true
        case (172, let second): return (16...31).contains(second)
        default: return false
        }
    }
}
