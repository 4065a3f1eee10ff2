import Testing
import TandemPeer

@Suite("Port mapping: --no-port-mapping and the environment")
struct PortMappingChoiceTests {
    @Test("on by default with a 300 s lease; the flag or TANDEM_PORT_MAPPING=off turn it off; TANDEM_PORT_MAPPING_LEASE sets the lease, and a bad one says what it takes")
    func choices() throws {
        #expect(try PortMappingChoice.from(noPortMapping: false, environment: [:]) == PortMappingChoice(enabled: true, lease: .seconds(300)))
        #expect(try !PortMappingChoice.from(noPortMapping: true, environment: [:]).enabled)
        for off in ["off", "OFF", "0", "no", "false"] {
            #expect(try !PortMappingChoice.from(noPortMapping: false, environment: ["TANDEM_PORT_MAPPING": off]).enabled, "\(off)")
        }
        #expect(try PortMappingChoice.from(noPortMapping: false, environment: ["TANDEM_PORT_MAPPING": "on"]).enabled)
        #expect(try PortMappingChoice.from(noPortMapping: false, environment: ["TANDEM_PORT_MAPPING_LEASE": "4"]).lease == .seconds(4))
        for bad in ["1", "0", "-5", "ten", "86401", ""] {
            do {
                _ = try PortMappingChoice.from(noPortMapping: false, environment: ["TANDEM_PORT_MAPPING_LEASE": bad])
                Issue.record("\(bad) was taken")
            } catch {
                #expect(error.exit == .usage && error.description.contains("whole seconds, 2 to 86400"), "\(error)")
            }
        }
    }

    @Test("a loopback listener is not mapped: only this machine can join, and no router is asked")
    func loopbackIsNotMapped() async {
        let started = ContinuousClock.now
        let (reachability, keeper) = await HostReachability.find(bind: "127.0.0.1", port: 7420, choice: PortMappingChoice())
        #expect(reachability == .thisMachineOnly(address: "127.0.0.1", port: 7420) && keeper == nil)
        #expect(ContinuousClock.now - started < .milliseconds(500), "a router was asked")
    }
}
