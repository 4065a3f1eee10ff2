import Foundation
import Logging
import Tandem
import TandemPortMapping

/// Whether `tandem host` asks the home router for its port, and for how long a lease: `--no-port-mapping` or
/// `TANDEM_PORT_MAPPING=off` turn it off; `TANDEM_PORT_MAPPING_LEASE=SECONDS` sets the lease (default 300 s,
/// renewed at half: what a killed host leaves on the router lasts at most that long).
package struct PortMappingChoice: Sendable, Equatable {
    package static let environmentVariable = "TANDEM_PORT_MAPPING"
    package static let leaseVariable = "TANDEM_PORT_MAPPING_LEASE"
    package static let defaultLease: Duration = .seconds(300)

    package var enabled: Bool
    package var lease: Duration

    package init(enabled: Bool = true, lease: Duration = Self.defaultLease) {
        self.enabled = enabled
        self.lease = lease
    }

    /// The choice from the flag and the environment; a lease that is no whole number of seconds from 2 to 86400 is
    /// an error that says so.
    package static func from(noPortMapping: Bool,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws(PeerFailure) -> Self {
        var choice = PortMappingChoice()
        if noPortMapping || ["off", "0", "no", "false"].contains(environment[environmentVariable]?.lowercased() ?? "") {
            choice.enabled = false
        }
        if let text = environment[leaseVariable] {
            guard let seconds = Int(text), (2...86_400).contains(seconds) else {
                throw PeerFailure(.usage, "\(leaseVariable)=\(text): give the port mapping's lease in whole seconds, 2 to 86400")
            }
            choice.lease = .seconds(seconds)
        }
        return choice
    }
}

/// How a host on an embedded server is reached from outside (`Reachability`), found as it starts: a loopback
/// listener only from here; a public address of its own as it is; else the port mapped on the router (UPnP-IGD or
/// NAT-PMP, asked at once, 2 s each), kept by a `PortMappingKeeper`; else its global IPv6 address when it listens on
/// `::`; else its own network only, with the reason.
package enum HostReachability {
    package static func find(bind: String, port: Int, choice: PortMappingChoice,
                             logger: Logger = Logger(label: "tandem.port-mapping")) async -> (Reachability, PortMappingKeeper?) {
        if isLoopback(bind) { return (.thisMachineOnly(address: bind, port: port), nil) }
        let everywhere = bind == "0.0.0.0" || bind == "::"
        let local = everywhere ? primaryIPv4Address() : bind
        if !bind.contains(":"), !isNonPublicIPv4(local) { return (.publicAddress(address: local, port: port), nil) }
        let ipv6 = bind == "::" ? globalIPv6Address() : (bind.contains(":") && !isLoopback(bind) ? bind : nil)
        var reason = UnreachableReason.mappingOff
        if choice.enabled, !bind.contains(":") || bind == "::" {
            let request = RouterPortMapping.Request(internalPort: port, lease: choice.lease,
                                                    description: "Tandem session on port \(port)")
            switch await RouterPortMapping.open(request) {
            case .success(let (mapping, granted)):
                let keeper = PortMappingKeeper(mapping, granted: granted) { holds in
                    logger.warning(holds ? "the router's port mapping holds again: reachable at \(Reachability.endpoint(mapping.externalAddress, mapping.externalPort))"
                                         : "\(UnreachableReason.mappingLost.text): joiners from outside cannot reach this session until it is back")
                }
                return (.mapped(address: mapping.externalAddress, port: mapping.externalPort, method: mapping.method), keeper)
            case .failure(let why):
                reason = why
            }
        }
        if let ipv6 { return (.ipv6(address: ipv6, port: port), nil) }
        return (.localNetworkOnly(address: local, port: port, reason: reason), nil)
    }
}
