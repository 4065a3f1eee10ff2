import CTandemPortMapping
import Dispatch
import Synchronization
import TandemCore

/// A port of this machine (TCP and UDP, the same number: a session's listener and its datagrams) mapped on the home
/// router, through UPnP-IGD or NAT-PMP (Debian's libminiupnpc and libnatpmp behind `CTandemPortMapping`).
///
/// Both protocols are asked at once, each for at most the request's timeout; UPnP-IGD's mapping is kept when both
/// answer. The same external port as the internal one is asked for first. What the router grants is renewed by
/// `PortMappingKeeper` and removed by `remove()`; after `kill -9`, the lease runs out on the router.
public final class RouterPortMapping: Sendable {
    public struct Request: Sendable {
        public var internalPort: Int
        /// What the router is asked to keep the mapping for (renewed at half); a short one bounds what a killed host
        /// leaves behind.
        public var lease: Duration
        public var description: String
        /// How long each protocol is given to answer.
        public var timeout: Duration

        public init(internalPort: Int, lease: Duration = .seconds(300), description: String = "Tandem session",
                    timeout: Duration = .seconds(2)) {
            self.internalPort = internalPort
            self.lease = lease
            self.description = description
            self.timeout = timeout
        }
    }

    public let method: PortMappingMethod
    public let externalAddress: String
    public let externalPort: Int
    /// Whether the UDP port was mapped as well (datagrams; without, they go over TCP).
    public let mapsUDP: Bool
    /// What the router granted at the last renewal (`.zero`: permanent).
    public let request: Request
    private let gateway: UPnPGateway?

    private init(method: PortMappingMethod, externalAddress: String, externalPort: Int, mapsUDP: Bool,
                 request: Request, gateway: UPnPGateway?) {
        self.method = method
        self.externalAddress = externalAddress
        self.externalPort = externalPort
        self.mapsUDP = mapsUDP
        self.request = request
        self.gateway = gateway
    }

    /// Maps `request.internalPort`: the mapping and the lease the router granted, or why there is none. Both
    /// protocols look for the router at once; only one of them maps (a router that speaks both keeps one table, and
    /// removing one's mapping would remove the other's).
    public static func open(_ request: Request) async -> Result<(RouterPortMapping, granted: Duration), UnreachableReason> {
        async let upnp = discoverUPnP(request)
        async let natPMP = natPMPExternalAddress(request)
        let (gateway, natPMPAddress) = await (upnp, natPMP)
        var reason = UnreachableReason.noRouterAnswered
        if let gateway {
            switch await openUPnP(gateway, request) {
            case .success(let mapped): return .success(mapped)
            case .failure(let why): reason = why
            }
        }
        if let natPMPAddress {
            switch await openNATPMP(natPMPAddress, request) {
            case .success(let mapped): return .success(mapped)
            case .failure(let why): if reason == .noRouterAnswered { reason = why }
            }
        }
        return .failure(reason)
    }

    /// Asks the router again for the same mapping; what it granted.
    public func renew() async throws(PortMappingError) -> Duration {
        switch method {
        case .upnp:
            guard let gateway else { throw PortMappingError("no gateway") }
            return try await Self.addUPnP(gateway, internalPort: request.internalPort, externalPort: externalPort,
                                          udp: mapsUDP, request: request)
        case .natPMP:
            let tcp = try await Self.mapNATPMP(udp: false, inside: request.internalPort, outside: externalPort,
                                               lifetime: request.lease, timeout: request.timeout)
            if mapsUDP {
                _ = try? await Self.mapNATPMP(udp: true, inside: request.internalPort, outside: externalPort,
                                              lifetime: request.lease, timeout: request.timeout)
            }
            return tcp.lifetime
        }
    }

    /// Removes the mapping from the router (both protocols' ports); errors are ignored: the lease ends it anyway.
    public func remove() async {
        switch method {
        case .upnp:
            guard let gateway else { return }
            await blocking {
                var error = [CChar](repeating: 0, count: 128)
                _ = tdm_upnp_delete(gateway.pointer, 0, UInt16(self.externalPort), &error, error.count)
                if self.mapsUDP { _ = tdm_upnp_delete(gateway.pointer, 1, UInt16(self.externalPort), &error, error.count) }
            }
        case .natPMP:
            _ = try? await Self.mapNATPMP(udp: false, inside: request.internalPort, outside: 0, lifetime: .zero,
                                          timeout: request.timeout)
            if mapsUDP {
                _ = try? await Self.mapNATPMP(udp: true, inside: request.internalPort, outside: 0, lifetime: .zero,
                                              timeout: request.timeout)
            }
        }
    }

    // MARK: UPnP-IGD

    /// The gateway that answered within the request's timeout (the search itself may go on longer in the library:
    /// it is left to finish on its queue, and a late answer is dropped).
    private static func discoverUPnP(_ request: Request) async -> UPnPGateway? {
        await blocking(atMost: request.timeout) {
            var error = [CChar](repeating: 0, count: 128)
            return tdm_upnp_discover(Int32(request.timeout.milliseconds), &error, error.count).map(UPnPGateway.init)
        }
    }

    private static func openUPnP(_ gateway: UPnPGateway, _ request: Request) async -> Result<(RouterPortMapping, granted: Duration), UnreachableReason> {
        let external: String
        do { external = try await gateway.externalAddress() } catch { return .failure(.refused(error.description)) }
        if isNonPublicIPv4(external) { return .failure(.behindAnotherNAT(externalAddress: external)) }
        // The same port outside as inside, else (taken by someone else on the LAN) a few others above it.
        var lastError = PortMappingError("no port")
        for candidate in candidatePorts(request.internalPort) {
            do {
                let granted = try await addUPnP(gateway, internalPort: request.internalPort, externalPort: candidate,
                                                udp: true, request: request)
                let mapping = RouterPortMapping(method: .upnp, externalAddress: external, externalPort: candidate,
                                                mapsUDP: true, request: request, gateway: gateway)
                return .success((mapping, granted))
            } catch {
                lastError = error
                guard error.code == Int32(TDM_UPNP_CONFLICT) else { break }
            }
        }
        return .failure(.refused(lastError.description))
    }

    /// Adds TCP (and UDP) for the lease asked for, or permanently when the router takes only that; what it granted.
    private static func addUPnP(_ gateway: UPnPGateway, internalPort: Int, externalPort: Int, udp: Bool,
                                request: Request) async throws(PortMappingError) -> Duration {
        var lease = request.lease
        do {
            try await gateway.add(udp: false, outside: externalPort, inside: internalPort, lease: lease,
                                  description: request.description)
        } catch where error.code == Int32(TDM_UPNP_ONLY_PERMANENT_LEASES) {
            lease = .zero
            try await gateway.add(udp: false, outside: externalPort, inside: internalPort, lease: lease,
                                  description: request.description)
        }
        if udp {
            try? await gateway.add(udp: true, outside: externalPort, inside: internalPort, lease: lease,
                                   description: request.description)
        }
        return lease
    }

    // MARK: NAT-PMP

    private static func natPMPExternalAddress(_ request: Request) async -> String? {
        try? await blocking { () throws(PortMappingError) -> String in
            var address = [CChar](repeating: 0, count: 64)
            var error = [CChar](repeating: 0, count: 128)
            let result = tdm_natpmp_external_address(Int32(request.timeout.milliseconds), &address, address.count,
                                                      &error, error.count)
            guard result == 0 else { throw PortMappingError(code: result, error) }
            return PortMappingError.text(address)
        }
    }

    private static func openNATPMP(_ external: String, _ request: Request) async -> Result<(RouterPortMapping, granted: Duration), UnreachableReason> {
        if isNonPublicIPv4(external) { return .failure(.behindAnotherNAT(externalAddress: external)) }
        do {
            let tcp = try await mapNATPMP(udp: false, inside: request.internalPort, outside: request.internalPort,
                                          lifetime: request.lease, timeout: request.timeout)
            // UDP on the port TCP got, so that datagrams go where the invite says.
            let udp = try? await mapNATPMP(udp: true, inside: request.internalPort, outside: tcp.port,
                                           lifetime: request.lease, timeout: request.timeout)
            let mapsUDP = udp?.port == tcp.port
            if let udp, !mapsUDP {
                _ = try? await mapNATPMP(udp: true, inside: request.internalPort, outside: udp.port, lifetime: .zero,
                                         timeout: request.timeout)
            }
            let mapping = RouterPortMapping(method: .natPMP, externalAddress: external, externalPort: tcp.port,
                                            mapsUDP: mapsUDP, request: request, gateway: nil)
            return .success((mapping, tcp.lifetime))
        } catch {
            return .failure(.refused(error.description))
        }
    }

    private static func mapNATPMP(udp: Bool, inside: Int, outside: Int, lifetime: Duration,
                                  timeout: Duration) async throws(PortMappingError) -> (port: Int, lifetime: Duration) {
        try await blocking { () throws(PortMappingError) -> (port: Int, lifetime: Duration) in
            var port: UInt16 = 0
            var granted: UInt32 = 0
            var error = [CChar](repeating: 0, count: 128)
            let result = tdm_natpmp_map(udp ? 1 : 0, UInt16(inside), UInt16(outside),
                                        UInt32(lifetime.components.seconds), Int32(timeout.milliseconds),
                                        &port, &granted, &error, error.count)
            guard result == 0 else { throw PortMappingError(code: result, error) }
            return (Int(port), .seconds(Int(granted)))
        }
    }

    /// The internal port, then a few above it (another machine on the LAN may hold the same external port).
    static func candidatePorts(_ port: Int) -> [Int] {
        (0..<4).map { port + $0 * 7 }.filter { (1...65535).contains($0) }
    }
}

/// A router's answer that was not a mapping.
public struct PortMappingError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let description: String

    init(_ description: String) {
        self.code = -1
        self.description = description
    }

    init(code: Int32, _ error: [CChar]) {
        self.code = -code
        let text = Self.text(error)
        self.description = text.isEmpty ? "error \(code)" : text
    }
}

extension PortMappingError {
    /// A C string the libraries wrote into `buffer`.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An Internet Gateway Device found by SSDP, freed with its last reference.
final class UPnPGateway: @unchecked Sendable {
    // Only read after discovery (libminiupnpc keeps URLs and service type in it).
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { tdm_upnp_free(pointer) }

    func externalAddress() async throws(PortMappingError) -> String {
        try await blocking { () throws(PortMappingError) -> String in
            var address = [CChar](repeating: 0, count: 64)
            var error = [CChar](repeating: 0, count: 128)
            let result = tdm_upnp_external_address(self.pointer, &address, address.count, &error, error.count)
            guard result == 0 else { throw PortMappingError(code: result, error) }
            return PortMappingError.text(address)
        }
    }

    func add(udp: Bool, outside: Int, inside: Int, lease: Duration, description: String) async throws(PortMappingError) {
        try await blocking { () throws(PortMappingError) in
            var error = [CChar](repeating: 0, count: 128)
            let result = tdm_upnp_add(self.pointer, udp ? 1 : 0, UInt16(outside), UInt16(inside),
                                      UInt32(lease.components.seconds), description, &error, error.count)
            guard result == 0 else { throw PortMappingError(code: result, error) }
        }
    }
}

extension Duration {
    var milliseconds: Int { Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000) }
}

/// The router libraries block (sockets with timeouts): they run on a queue of their own, never on an event loop
/// or Swift's cooperative threads.
private let routerQueue = DispatchQueue(label: "tandem.port-mapping", attributes: .concurrent)

func blocking<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { continuation in
        routerQueue.async { continuation.resume(returning: work()) }
    }
}

/// A continuation resumed by whichever comes first.
private final class ResumeOnce<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value?, Never>?>

    init(_ continuation: CheckedContinuation<Value?, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ value: Value?) {
        continuation.withLock { held in defer { held = nil }; return held }?.resume(returning: value)
    }
}

/// `work`'s result, or nil when it has not finished within `timeout` (it then runs on, and its result is dropped).
func blocking<Value: Sendable>(atMost timeout: Duration, _ work: @escaping @Sendable () -> Value?) async -> Value? {
    return await withCheckedContinuation { continuation in
        let once = ResumeOnce(continuation)
        routerQueue.async { once.resume(work()) }
        routerQueue.asyncAfter(deadline: .now() + .milliseconds(timeout.milliseconds)) { once.resume(nil) }
    }
}

func blocking<Value: Sendable>(_ work: @escaping @Sendable () throws(PortMappingError) -> Value) async throws(PortMappingError) -> Value {
    let result: Result<Value, PortMappingError> = await blocking { () -> Result<Value, PortMappingError> in
        do throws(PortMappingError) { return .success(try work()) } catch { return .failure(error) }
    }
    return try result.get()
}
