import Foundation
import TandemNet

/// The address to put in invites for a server listening on `bind`: this machine's first non-loopback IPv4 address
/// when it listens everywhere, else `bind` itself.
package func advertisedHost(bind: String) -> String {
    bind == "0.0.0.0" || bind == "::" ? primaryIPv4Address() : bind
}

/// The address others can reach this machine at: the first non-loopback IPv4 address, else 127.0.0.1.
package func primaryIPv4Address() -> String {
    var first: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&first) == 0, let head = first else { return "127.0.0.1" }
    defer { freeifaddrs(head) }
    var cursor: UnsafeMutablePointer<ifaddrs>? = head
    while let entry = cursor {
        defer { cursor = entry.pointee.ifa_next }
        let flags = Int32(entry.pointee.ifa_flags)
        guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == UInt8(AF_INET),
              flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0 else { continue }
        if let host = numericHost(address, length: socklen_t(MemoryLayout<sockaddr_in>.size)) { return host }
    }
    return "127.0.0.1"
}

/// The address of this machine that packets to `host:port` leave from (IPv4 or IPv6), found by connecting a UDP
/// socket, which sends nothing (`LocalEndpoint.source`); nil when `host` does not resolve, no route leads there, or
/// it is an IPv6 link-local address (which needs its interface, which an invite cannot carry).
package func localAddress(toward host: String, port: Int) -> String? {
    LocalEndpoint.sourceAddress(toward: host, port: port)
}

/// `address` as numbers (`192.168.1.20`, `::1`), or nil when it cannot be written so.
private func numericHost(_ address: UnsafePointer<sockaddr>, length: socklen_t) -> String? {
    var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    guard getnameinfo(address, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// This machine's first global IPv6 address (not loopback, link-local or unique-local), or nil.
package func globalIPv6Address() -> String? {
    var first: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&first) == 0, let head = first else { return nil }
    defer { freeifaddrs(head) }
    var cursor: UnsafeMutablePointer<ifaddrs>? = head
    while let entry = cursor {
        defer { cursor = entry.pointee.ifa_next }
        let flags = Int32(entry.pointee.ifa_flags)
        guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == UInt8(AF_INET6),
              flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0,
              let text = numericHost(address, length: socklen_t(MemoryLayout<sockaddr_in6>.size)) else { continue }
        let lower = text.lowercased()
        // Link-local (fe80::/10, which carries its interface after '%') and unique-local (fc00::/7) stay home.
        guard !lower.contains("%"), !lower.hasPrefix("fe8"), !lower.hasPrefix("fe9"), !lower.hasPrefix("fea"),
              !lower.hasPrefix("feb"), !lower.hasPrefix("fc"), !lower.hasPrefix("fd"), lower != "::1" else { continue }
        return text
    }
    return nil
}

/// Whether `bind` is a loopback address (only this machine can connect).
package func isLoopback(_ bind: String) -> Bool {
    bind.hasPrefix("127.") || bind == "::1" || bind == "localhost"
}
