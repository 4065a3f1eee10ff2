import Foundation

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
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        if getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0,
                       NI_NUMERICHOST) == 0 {
            return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
    return "127.0.0.1"
}
