/// How people outside this machine's network reach a host's session, as the host finds out when it starts: a port
/// mapped on the home router, a global IPv6 address, a public address of its own, a relay — or not at all, and why.
public enum Reachability: Sendable, Equatable {
    /// The router forwards `address:port` (its external address) to this machine, asked through `method`.
    case mapped(address: String, port: Int, method: PortMappingMethod)
    /// This machine's global IPv6 address: nothing to map (a router's IPv6 firewall may still say otherwise).
    case ipv6(address: String, port: Int)
    /// This machine has a public IPv4 address of its own.
    case publicAddress(address: String, port: Int)
    /// The session lives on a relay (`tandem serve`) at `address:port`: whoever reaches the relay can join. With
    /// `instead`, the default relay was taken because this machine's own server could not be reached, for that reason.
    case relay(address: String, port: Int, instead: UnreachableReason? = nil)
    /// Only this machine can join: the server listens on a loopback address.
    case thisMachineOnly(address: String, port: Int)
    /// Friends on the same network can join at `address:port`, nobody from outside, for `reason`.
    case localNetworkOnly(address: String, port: Int, reason: UnreachableReason)

    /// Whether someone on the internet can join.
    public var isReachableFromOutside: Bool {
        switch self {
        case .mapped, .ipv6, .publicAddress, .relay: return true
        case .thisMachineOnly, .localNetworkOnly: return false
        }
    }

    /// The address and port an invite should name.
    public var address: String {
        switch self {
        case .mapped(let address, _, _), .ipv6(let address, _), .publicAddress(let address, _), .relay(let address, _, _),
             .thisMachineOnly(let address, _), .localNetworkOnly(let address, _, _):
            return address
        }
    }

    public var port: Int {
        switch self {
        case .mapped(_, let port, _), .ipv6(_, let port), .publicAddress(_, let port), .relay(_, let port, _),
             .thisMachineOnly(_, let port), .localNetworkOnly(_, let port, _):
            return port
        }
    }

    /// A word for scripts: `upnp-igd`, `nat-pmp`, `ipv6`, `public-address`, `relay`, `loopback`, `none`.
    public var way: String {
        switch self {
        case .mapped(_, _, let method): return method.word
        case .ipv6: return "ipv6"
        case .publicAddress: return "public-address"
        case .relay: return "relay"
        case .thisMachineOnly: return "loopback"
        case .localNetworkOnly: return "none"
        }
    }

    /// What the host is told, one line.
    public var text: String {
        let at = Self.endpoint(address, port)
        switch self {
        case .mapped(_, _, let method):
            return "reachable from the internet at \(at) (\(method.rawValue) on your router)"
        case .ipv6:
            return "reachable from the internet at \(at) (your global IPv6 address; no port mapping needed — "
                + "joiners need IPv6 too)"
        case .publicAddress:
            return "reachable from the internet at \(at) (a public address of this machine)"
        case .relay(_, _, nil):
            return "hosted on the relay \(at): whoever reaches the relay can join"
        case .relay(_, _, let reason?):
            return "hosted on your relay \(at) (from your configuration): this machine is not reachable from outside "
                + "(\(reason.text))"
        case .thisMachineOnly:
            return "listening on \(at): only this machine can join (--bind 0.0.0.0 to let others in)"
        case .localNetworkOnly(_, _, let reason):
            return "not reachable from outside: \(reason.text) — friends on your network can join at \(at); "
                + "for others use --server tandem://RELAY:PORT (a `tandem serve` both can reach)"
        }
    }

    /// `address:port`, with an IPv6 address in brackets.
    public static func endpoint(_ address: String, _ port: Int) -> String {
        address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}

/// How a port was mapped on the router.
public enum PortMappingMethod: String, Sendable, Equatable, CaseIterable {
    case upnp = "UPnP-IGD"
    case natPMP = "NAT-PMP"

    public var word: String { self == .upnp ? "upnp-igd" : "nat-pmp" }
}

/// Why a host on a private network cannot be reached from outside.
public enum UnreachableReason: Error, Sendable, Equatable {
    /// `--no-port-mapping` (or `TANDEM_PORT_MAPPING=off`).
    case mappingOff
    /// Neither UPnP-IGD nor NAT-PMP answered.
    case noRouterAnswered
    /// The router answered but refused the mapping.
    case refused(String)
    /// The router's own external address is private or shared: another NAT (a carrier's) sits in front of it.
    case behindAnotherNAT(externalAddress: String)
    /// A mapping that held was lost (the router stopped renewing it).
    case mappingLost

    public var text: String {
        switch self {
        case .mappingOff: return "port mapping is off (--no-port-mapping)"
        case .noRouterAnswered: return "no router answered UPnP or NAT-PMP"
        case .refused(let detail): return "the router refused to map the port (\(detail))"
        case .behindAnotherNAT(let address):
            return "your router's external address \(address) is itself behind another NAT (your provider's)"
        case .mappingLost: return "the router's port mapping was lost and could not be renewed"
        }
    }
}

/// Whether an IPv4 address (dotted quad) is private, shared or otherwise not reachable from the internet: RFC 1918,
/// carrier-grade NAT (100.64/10), loopback, link-local, documentation and benchmarking ranges, multicast and above.
public func isNonPublicIPv4(_ text: String) -> Bool {
    let parts = text.split(separator: ".").compactMap { UInt8($0) }
    guard parts.count == 4 else { return true }
    let (a, b, c) = (parts[0], parts[1], parts[2])
    switch a {
    case 0, 10, 127: return true
    case 100: return (64...127).contains(b)
    case 169: return b == 254
    case 172: return (16...31).contains(b)
    case 192: return b == 168 || (b == 0 && (c == 0 || c == 2))
    case 198: return b == 18 || b == 19 || (b == 51 && c == 100)
    case 203: return b == 0 && c == 113
    default: return a >= 224
    }
}
