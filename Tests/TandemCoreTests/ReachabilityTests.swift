import Testing
import TandemCore

@Suite("Reachability: what a host is told, and when a router's port mapping is renewed")
struct ReachabilityTests {
    static func at(_ seconds: Double) -> LocalInstant { LocalInstant(nanoseconds: Int64(seconds * 1e9)) }

    @Test("a granted lease is renewed at half; a failed renewal is retried after 5 s, doubling to a minute; past its expiry the mapping is lost, and a renewal brings it back")
    func leaseSchedule() {
        var lease = PortMappingLease(granted: .seconds(300), at: Self.at(0))
        #expect(lease.nextRenewal == Self.at(150))
        #expect(lease.holds(at: Self.at(299.9)) && !lease.holds(at: Self.at(300)))
        lease.renewed(granted: .seconds(300), at: Self.at(150))
        #expect(lease.nextRenewal == Self.at(300) && lease.expiry == Self.at(450))

        var retries: [Double] = []
        var now = 300.0
        for _ in 0..<6 {
            lease.renewalFailed(at: Self.at(now))
            let next = Double(lease.nextRenewal.nanoseconds) / 1e9
            retries.append(next - now)
            now = next
        }
        #expect(retries == [5, 10, 20, 40, 60, 60])
        #expect(lease.holds(at: Self.at(449)) && !lease.holds(at: Self.at(450)), "the lease still ran until its expiry")
        lease.renewed(granted: .seconds(4), at: Self.at(500))
        #expect(lease.failures == 0 && lease.holds(at: Self.at(503)) && lease.nextRenewal == Self.at(502))
        // A lease of a second or two is still renewed no more often than every second.
        let short = PortMappingLease(granted: .seconds(1), at: Self.at(0))
        #expect(short.nextRenewal == Self.at(1))
    }

    @Test("a permanent lease (UPnP routers that grant only those) holds until a renewal fails, and is renewed every ten minutes")
    func permanentLease() {
        var lease = PortMappingLease(granted: .zero, at: Self.at(0))
        #expect(lease.expiry == nil && lease.nextRenewal == Self.at(600) && lease.holds(at: Self.at(1e6)))
        lease.renewalFailed(at: Self.at(600))
        #expect(!lease.holds(at: Self.at(600)))
        lease.renewed(granted: .zero, at: Self.at(605))
        #expect(lease.holds(at: Self.at(605)))
    }

    @Test("private, shared and reserved IPv4 addresses are not public: a router with one is behind another NAT")
    func nonPublicAddresses() {
        for address in ["10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.255",
                        "127.0.0.1", "169.254.1.1", "192.0.2.7", "198.51.100.7", "203.0.113.7", "198.18.0.1",
                        "224.0.0.1", "255.255.255.255", "0.0.0.0", "not an address", "1.2.3"] {
            #expect(isNonPublicIPv4(address), "\(address)")
        }
        for address in ["11.0.113.7", "8.8.8.8", "172.15.0.1", "172.32.0.1", "100.63.0.1", "100.128.0.1", "192.169.0.1",
                        "203.0.114.1"] {
            #expect(!isNonPublicIPv4(address), "\(address)")
        }
    }

    @Test("each way in says where, how and, when there is none, why and what to do")
    func texts() {
        #expect(Reachability.mapped(address: "203.0.113.7", port: 7420, method: .upnp).text
                == "reachable from the internet at 203.0.113.7:7420 (UPnP-IGD on your router)")
        #expect(Reachability.mapped(address: "203.0.113.7", port: 7427, method: .natPMP).way == "nat-pmp")
        let ipv6 = Reachability.ipv6(address: "2001:db8:a::20", port: 7420)
        #expect(ipv6.text.hasPrefix("reachable from the internet at [2001:db8:a::20]:7420 (your global IPv6 address"))
        #expect(ipv6.isReachableFromOutside && ipv6.way == "ipv6")
        let none = Reachability.localNetworkOnly(address: "192.168.1.20", port: 7420, reason: .noRouterAnswered)
        #expect(!none.isReachableFromOutside && none.way == "none")
        #expect(none.text == "not reachable from outside: no router answered UPnP or NAT-PMP — friends on your network "
                + "can join at 192.168.1.20:7420; for others use --server tandem://RELAY:PORT (a `tandem serve` both can reach)")
        let carrier = Reachability.localNetworkOnly(address: "192.168.1.20", port: 7420,
                                                    reason: .behindAnotherNAT(externalAddress: "100.64.3.4"))
        #expect(carrier.text.contains("your router's external address 100.64.3.4 is itself behind another NAT"))
        #expect(Reachability.thisMachineOnly(address: "127.0.0.1", port: 9000).text.contains("only this machine can join"))
        #expect(Reachability.relay(address: "relay.example.org", port: 7420).text
                == "hosted on the relay relay.example.org:7420: whoever reaches the relay can join")
    }
}
