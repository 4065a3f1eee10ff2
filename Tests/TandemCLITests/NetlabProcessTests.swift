import Foundation
import Testing
import TandemPeer
import TandemBench

/// The network lab (`scripts/netlab.sh`): three homes behind NAT routers, one of which runs Debian's miniupnpd, and
/// an internet between them, in network namespaces of this suite's own (prefix `tdmt-`), removed at the end.
/// Needs root (CI runs as root); elsewhere the suite says so and checks nothing.
enum Netlab {
    static let prefix = "tdmt-"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/netlab.sh").path
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netlab-\(getpid())").path

    static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/miniupnpd")
            && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft")
    }

    @discardableResult
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let script = try TandemProcess([script] + arguments, executable: "/bin/bash",
                                       environment: ["NETLAB_PREFIX": prefix, "NETLAB_DIR": directory])
        let status = await script.exitCode(within: 60) ?? -1
        return (status, script.stdout + script.stderr)
    }

    /// The router's port forwards as miniupnpd wrote them (`dport N dnat … to ADDR:PORT`).
    static func forwards() async throws -> [String] {
        try await run(["exec", "router-a", "nft", "list", "chain", "inet", "filter", "prerouting_miniupnpd"]).output
            .split(separator: "\n").filter { $0.contains("dnat") }.map(String.init)
    }

    /// `tandem` in a node of the lab, with port mapping on (`TandemProcess` turns it off for every other test).
    static func tandem(in node: String, _ arguments: [String], environment: [String: String] = [:]) throws -> TandemProcess {
        var environment = environment
        environment["TANDEM_PORT_MAPPING"] = environment["TANDEM_PORT_MAPPING"] ?? "on"
        return try TandemProcess(["netns", "exec", prefix + node, TandemBinary.path] + arguments, executable: "/usr/sbin/ip",
                                 environment: environment)
    }

    static func waitUntil(within seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return try await condition()
    }

    /// Removes the lab at the end of a test, however it ends.
    static func down() {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, "down"]
        process.environment = ProcessInfo.processInfo.environment.merging(["NETLAB_PREFIX": prefix, "NETLAB_DIR": directory]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try? process.run()
        // Bounded: the script kills what runs in the lab and deletes five namespaces.
        for _ in 0..<100 where process.isRunning { usleep(100_000) }
    }
}

@Suite("Two homes: a host behind a home router, reached through its port mapping (network lab)", .serialized,
       .timeLimit(.minutes(3)))
struct NetlabProcessTests {
    static let sample = TandemBinary.sample("countdown.webm")

    @Test("UPnP-IGD: the host in home-a names the router's address; bob in home-b joins through the mapping (TCP and UDP), dan beside him reaches him straight, eve in home-a joins at ann's own address; leaving removes it; killed, its short lease expires it")
    func upnpMapping() async throws {
        guard Netlab.available else { print("netlab: needs root and miniupnpd (make deps); skipped"); return }
        let up = try await Netlab.run(["up"])
        defer { Netlab.down() }
        try #require(up.status == 0, "\(up.output)")

        let ann = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "ann"])
        defer { ann.stop() }
        let reach = await ann.event("reachability", within: 20)
        #expect(reach?["via"]?.string == "upnp-igd", "\(ann.stdout)\n\(ann.stderr)")
        #expect(reach?["reachable"] == .bool(true))
        #expect(reach?["text"]?.string == "reachable from the internet at 11.0.113.7:7420 (UPnP-IGD on your router)")
        let invite = try #require(ann.events("invite").first?["invite"]?.string)
        #expect(invite.hasPrefix("tandem://11.0.113.7:7420/"), "\(invite)")
        // Router-a forwards its public port from the internet only: the invite also names ann's own address.
        #expect(invite.contains("?lan=192.168.1.20:7420#"), "\(invite)")
        let forwards = try await Netlab.forwards()
        #expect(forwards.count == 2 && forwards.allSatisfy { $0.contains("dport 7420") && $0.contains("192.168.1.20:7420") },
                "\(forwards)")

        let bob = try Netlab.tandem(in: "home-b", ["join", Self.sample, "--headless", "--json", "--name", "bob"],
                                    environment: ["TANDEM_INVITE": invite])
        defer { bob.stop() }
        #expect(await bob.event("joined", within: 20) != nil, "\(bob.stderr)")
        // Datagrams take the mapped UDP port too.
        #expect(await bob.event("position", within: 15) { $0["unreliablePath"]?.string == "udp" } != nil, "\(bob.stdout.suffix(600))")
        // Dan joins from the same home: the server sees bob and dan at one address (router-b's), so it lists each
        // to the other with its address in home-b too, and they reach each other there.
        let dan = try Netlab.tandem(in: "home-b", ["join", Self.sample, "--headless", "--json", "--name", "dan"],
                                    environment: ["TANDEM_INVITE": invite])
        defer { dan.stop() }
        #expect(await dan.event("joined", within: 20) != nil, "\(dan.stderr)")
        #expect(await bob.event("position", within: 15) { $0["directPaths"]?.string?.hasPrefix("dan ") == true } != nil,
                "\(bob.stdout.suffix(600))")
        #expect(await dan.event("position", within: 15) { $0["directPaths"]?.string?.hasPrefix("bob ") == true } != nil,
                "\(dan.stdout.suffix(600))")
        // Eve in ann's own home: the router's address refuses her, so she joins at ann's address there.
        let eve = try Netlab.tandem(in: "home-a", ["join", Self.sample, "--headless", "--json", "--name", "eve"],
                                    environment: ["TANDEM_INVITE": invite])
        defer { eve.stop() }
        #expect(await eve.event("joined", within: 20) != nil, "\(eve.stderr)")
        #expect(await eve.event("position", within: 15) { $0["unreliablePath"]?.string == "udp" } != nil)
        ann.send("play")
        #expect(await bob.event("position", within: 15) { $0["state"]?.string == "playing" } != nil)
        #expect(await eve.event("position", within: 15) { $0["state"]?.string == "playing" } != nil)
        eve.send("leave")
        #expect(await eve.exitCode(within: 15) == 0)
        dan.send("leave")
        #expect(await dan.exitCode(within: 15) == 0)
        bob.send("leave")
        #expect(await bob.exitCode(within: 15) == 0)
        ann.send("leave")
        #expect(await ann.exitCode(within: 15) == 0, "\(ann.stderr)")
        #expect(try await Netlab.forwards().isEmpty, "the mapping outlived the host")

        // Killed, nothing removes the mapping but its lease (4 s here, renewed at 2 s while the host lives).
        let carol = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "carol"],
                                      environment: ["TANDEM_PORT_MAPPING_LEASE": "4"])
        defer { carol.stop() }
        #expect(await carol.event("reachability", within: 20) { $0["via"]?.string == "upnp-igd" } != nil, "\(carol.stderr)")
        try await Task.sleep(for: .seconds(6))
        #expect(try await Netlab.forwards().count == 2, "renewed past its first lease")
        carol.signal(SIGKILL)
        #expect(try await Netlab.waitUntil(within: 15) { try await Netlab.forwards().isEmpty }, "still mapped 15 s after kill -9")
    }

    @Test("NAT-PMP when the router speaks no UPnP-IGD; with no port mapping at all (or --no-port-mapping) the host says it is not reachable and why")
    func natPMPAndNone() async throws {
        guard Netlab.available else { print("netlab: needs root and miniupnpd (make deps); skipped"); return }
        let up = try await Netlab.run(["up"])
        defer { Netlab.down() }
        try #require(up.status == 0, "\(up.output)")

        let natPMPOnly = try await Netlab.run(["upnp", "natpmp-only"])
        try #require(natPMPOnly.status == 0, "\(natPMPOnly.output)")
        let ann = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "ann"])
        defer { ann.stop() }
        #expect(await ann.event("reachability", within: 20)?["text"]?.string
                == "reachable from the internet at 11.0.113.7:7420 (NAT-PMP on your router)", "\(ann.stdout)\n\(ann.stderr)")
        let invite = try #require(ann.events("invite").first?["invite"]?.string)
        let bob = try Netlab.tandem(in: "home-b", ["join", Self.sample, "--headless", "--json", "--name", "bob"],
                                    environment: ["TANDEM_INVITE": invite])
        defer { bob.stop() }
        #expect(await bob.event("joined", within: 20) != nil, "\(bob.stderr)")
        bob.send("leave")
        ann.send("leave")
        #expect(await ann.exitCode(within: 15) == 0)
        #expect(try await Netlab.forwards().isEmpty)

        let off = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "dan", "--no-port-mapping"])
        defer { off.stop() }
        let refused = await off.event("reachability", within: 20)
        #expect(refused?["reachable"] == .bool(false) && refused?["via"]?.string == "none")
        #expect(refused?["text"]?.string?.hasPrefix("not reachable from outside: port mapping is off (--no-port-mapping)") == true)
        #expect(try await Netlab.forwards().isEmpty)
        off.send("leave")
        _ = await off.exitCode(within: 15)

        let stopped = try await Netlab.run(["upnp", "stop"])
        try #require(stopped.status == 0, "\(stopped.output)")
        let eve = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--name", "eve"])
        defer { eve.stop() }
        // Without --json the header says it in words, with what to do.
        let said = try await Netlab.waitUntil(within: 20) {
            await Task.yield()
            return eve.stdout.contains("not reachable from outside: no router answered UPnP or NAT-PMP")
        }
        #expect(said, "\(eve.stdout)\n\(eve.stderr)")
        #expect(eve.stdout.contains("friends on your network can join at 192.168.1.20:7420")
                && eve.stdout.contains("--server tandem://"))
        let invited = eve.stdout.split(separator: "\n").contains { $0.contains("tandem://192.168.1.20:7420/") }
        #expect(invited, "\(eve.stdout)")
    }

    @Test("a default relay in config.toml: a host its router maps keeps its own server; one nobody outside reaches hosts on the relay instead, says why, and a joiner in the other home joins there")
    func defaultRelay() async throws {
        guard Netlab.available else { print("netlab: needs root and miniupnpd (make deps); skipped"); return }
        let up = try await Netlab.run(["up"])
        defer { Netlab.down() }
        try #require(up.status == 0, "\(up.output)")
        let relay = try Netlab.tandem(in: "internet", ["serve"])
        defer { relay.stop() }
        let listening = try await Netlab.waitUntil(within: 20) {
            await Task.yield()
            return relay.stdout.contains("tandem serve: listening on")
        }
        try #require(listening, "\(relay.stderr)")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("netlab-config-\(getpid())")
        try FileManager.default.createDirectory(at: home.appendingPathComponent("tandem"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        try "# the relay we share\nrelay = \"tandem://11.0.113.1:7420\"  # on the internet\n"
            .write(to: home.appendingPathComponent("tandem/config.toml"), atomically: true, encoding: .utf8)
        let configured = ["XDG_CONFIG_HOME": home.path]

        // Mapped on the router: the relay is not needed.
        let ann = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "ann"], environment: configured)
        defer { ann.stop() }
        #expect(await ann.event("reachability", within: 20)?["via"]?.string == "upnp-igd", "\(ann.stdout)\n\(ann.stderr)")
        ann.send("leave")
        #expect(await ann.exitCode(within: 15) == 0)

        // No router answers: the session goes to the relay.
        try #require(await Netlab.run(["upnp", "stop"]).status == 0)
        let bea = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "bea"], environment: configured)
        defer { bea.stop() }
        let reach = await bea.event("reachability", within: 30)
        #expect(reach?["via"]?.string == "relay" && reach?["reachable"] == .bool(true), "\(bea.stdout)\n\(bea.stderr)")
        #expect(reach?["text"]?.string == "hosted on your relay 11.0.113.1:7420 (from your configuration): this machine is "
                + "not reachable from outside (no router answered UPnP or NAT-PMP)")
        let invite = try #require(bea.events("invite").first?["invite"]?.string)
        #expect(invite.hasPrefix("tandem://11.0.113.1:7420/"), "\(invite)")
        let bob = try Netlab.tandem(in: "home-b", ["join", Self.sample, "--headless", "--json", "--name", "bob"],
                                    environment: ["TANDEM_INVITE": invite])
        defer { bob.stop() }
        #expect(await bob.event("joined", within: 20) != nil, "\(bob.stderr)")
        bob.send("leave")
        bea.send("leave")
        #expect(await bea.exitCode(within: 15) == 0, "\(bea.stderr)")
    }

    @Test("IPv6: a host with --bind :: and a global address names it in the invite without any port mapping, and a joiner in the other home joins over IPv6")
    func globalIPv6() async throws {
        guard Netlab.available else { print("netlab: needs root and miniupnpd (make deps); skipped"); return }
        let up = try await Netlab.run(["up"])
        defer { Netlab.down() }
        try #require(up.status == 0, "\(up.output)")
        try #require(await Netlab.run(["upnp", "stop"]).status == 0)
        let ann = try Netlab.tandem(in: "home-a", ["host", Self.sample, "--headless", "--json", "--name", "ann", "--bind", "::"])
        defer { ann.stop() }
        let reach = await ann.event("reachability", within: 20)
        #expect(reach?["via"]?.string == "ipv6" && reach?["reachable"] == .bool(true), "\(ann.stdout)\n\(ann.stderr)")
        #expect(reach?["text"]?.string?.hasPrefix("reachable from the internet at [2001:db8:a::20]:7420 (your global IPv6 address") == true)
        let invite = try #require(ann.events("invite").first?["invite"]?.string)
        #expect(invite.hasPrefix("tandem://[2001:db8:a::20]:7420/"), "\(invite)")
        #expect(try await Netlab.forwards().isEmpty)
        let bob = try Netlab.tandem(in: "home-b", ["join", Self.sample, "--headless", "--json", "--name", "bob"],
                                    environment: ["TANDEM_INVITE": invite])
        defer { bob.stop() }
        #expect(await bob.event("joined", within: 20) != nil, "\(bob.stderr)")
        ann.send("play")
        #expect(await bob.event("position", within: 15) { $0["state"]?.string == "playing" } != nil)
        bob.send("leave")
        ann.send("leave")
        #expect(await ann.exitCode(within: 15) == 0, "\(ann.stderr)")
    }

    @Test("bench sync --netlab: three tandem processes with shifted clocks, on loopback and then through three homes' NATs, judged from their render logs")
    func benchAcrossTheLab() async throws {
        guard Netlab.available else { print("netlab: needs root and miniupnpd (make deps); skipped"); return }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("netlab-bench-\(getpid()).json")
        defer { try? FileManager.default.removeItem(at: output) }
        let bench = try TandemProcess(["bench", "sync", "--netlab", "--duration", "10", "--link", "lan", "--json", output.path])
        defer { bench.stop() }
        let code = await bench.exitCode(within: 150)
        try #require(code == 0, "\(bench.stdout.suffix(1500))\n\(bench.stderr.suffix(1500))")
        let results = try JSONDecoder().decode([ProcessSyncBench.Result].self, from: Data(contentsOf: output))
        #expect(results.map(\.network) == [.loopback, .netlab])
        #expect(results.last?.peers.map(\.where_) == ["home-a", "home-b", "home-c"])
        // Bob behind router-b's NAT and cat behind router-c's reach each other without the server, both ways: each
        // router lets in only what answers its own home's datagrams, so each side's pings open its own router.
        let lab = results.last?.peers ?? []
        #expect(lab.first { $0.name == "bob" }?.directPaths?.hasPrefix("cat ") == true, "\(lab.map(\.directPaths))")
        #expect(lab.first { $0.name == "cat" }?.directPaths?.hasPrefix("bob ") == true, "\(lab.map(\.directPaths))")
        #expect(lab.first?.directPaths == nil, "the host is beside its server")
        for result in results {
            // Each process rendered most of its ~10 s at 30 frames a second, in a time namespace of its own.
            #expect(result.peers.allSatisfy { $0.frames > 150 && $0.clockShiftSeconds > 0 }, "\(result.peers)")
            #expect(Set(result.peers.map(\.clockShiftSeconds)).count > 1, "\(result.peers)")
            // Clocks seconds apart, yet the same frames within milliseconds once each log's shift is taken out:
            // the shift is really applied (by the kernel) and really undone (from what the kernel reports).
            #expect(result.skew.count > 100, "\(bench.stdout.suffix(1500))")
            #expect((result.skew.p50 ?? .infinity) < 10, "\(bench.stdout.suffix(1500))")
            #expect(result.commands.first { $0.command == "play" }?.missed == 0, "\(bench.stdout.suffix(1500))")
        }
        #expect(bench.stdout.contains("lab against loopback, skew p99:"))
        let namespaces = try TandemProcess(["netns", "list"], executable: "/usr/sbin/ip")
        _ = await namespaces.exitCode(within: 10)
        #expect(!namespaces.stdout.contains(BenchNetlab.prefix), "the benchmark's lab outlived it: \(namespaces.stdout)")
    }
}
