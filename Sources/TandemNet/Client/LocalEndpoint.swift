#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// The endpoint a link's UDP socket has on its own network: the address the system would send from towards the
/// server (a route lookup: a socket `connect`ed to the server sends nothing), with the socket's port. A peer behind
/// the same router reaches it there, where the address the server sees seldom leads back in (docs/PROTOCOL.md,
/// "Datagrams", direct paths, revision 7).
package enum LocalEndpoint {
    /// Nil when there is no route, the address is a loopback one (the server then sees it as it is), or `port` is
    /// not a port.
    static func toward(_ server: SocketAddress, port: Int?) -> SocketAddress? {
        guard let port, UInt16(exactly: port) != nil, port != 0,
              var found = source(toward: server), !DirectPeerList.isLoopback(found) else { return nil }
        found.port = port
        return found
    }

    /// `source(toward:)` for a host name or address, as numbers; nil also for an IPv6 link-local address (fe80::/10,
    /// which needs its interface).
    package static func sourceAddress(toward host: String, port: Int) -> String? {
        guard let destination = try? SocketAddress.makeAddressResolvingHost(host, port: port),
              let source = source(toward: destination) else { return nil }
        if case .v6(let v6) = source,
           withUnsafeBytes(of: v6.address.sin6_addr, { $0[0] == 0xFE && $0[1] & 0xC0 == 0x80 }) { return nil }
        return source.ipAddress
    }

    /// The address (and an ephemeral port) packets to `destination` would leave this machine from, found by
    /// connecting a UDP socket, which sends nothing; nil when no route leads there.
    package static func source(toward destination: SocketAddress) -> SocketAddress? {
        let family: Int32
        switch destination {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        default: return nil
        }
        #if canImport(Glibc)
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        #else
        let descriptor = socket(family, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let connected = destination.withSockAddr { address, length in connect(descriptor, address, socklen_t(length)) }
        guard connected == 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET: return SocketAddress(withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }, host: "")
        case AF_INET6: return SocketAddress(withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }, host: "")
        default: return nil
        }
    }
}
