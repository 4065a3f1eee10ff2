import Synchronization

/// Who may hold a connection to the server, and which connection gives way when a bound is reached.
///
/// - Every connection, authenticated or not, counts against its source address's bound
///   (`ServerConfiguration.maxConnectionsPerAddress`): one more is closed at once.
/// - A connection that has not authenticated also takes one of the server's unauthenticated places, in all and per
///   address. When they are full a newcomer is not refused: a waiting connection gives way to it, so that strangers
///   holding idle connections cannot keep a real joiner (or a participant reconnecting with its token) out.
///   The one that gives way comes from the newcomer's own address when that address is at its bound (a shared NAT:
///   its idle connections go before its fresh one), otherwise from the address holding the most places, and only
///   when that address holds more than the newcomer's does — so no address can push the others out, and
///   a flood of reconnects from evicted addresses settles at a fair share instead of churning. Among those, a
///   connection that has not even sent its hello goes first, then the oldest.
final class ConnectionAdmission: Sendable {
    struct Limits: Sendable, Hashable {
        var unauthenticated: Int
        var unauthenticatedPerAddress: Int
        var connectionsPerAddress: Int
    }

    /// Why a connection was not admitted.
    enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The address already holds `connectionsPerAddress` connections.
        case tooManyConnectionsFromAddress(Int)
        /// The unauthenticated places are full and no other connection may give way to this one.
        case unauthenticatedFull

        var description: String {
            switch self {
            case .tooManyConnectionsFromAddress(let limit): return "more than \(limit) connections from this address"
            case .unauthenticatedFull: return "too many unauthenticated connections"
            }
        }

        /// The reason the server's statistics count it under.
        var counted: ServerRefusal {
            switch self {
            case .tooManyConnectionsFromAddress: return .connectionsPerAddress
            case .unauthenticatedFull: return .unauthenticatedFull
            }
        }
    }

    /// What happened to admissions, for tests and logs.
    struct Counters: Sendable, Hashable {
        var refused = 0
        var evicted = 0
    }

    private struct Waiting {
        let address: String
        /// Whether the connection has sent anything of the protocol (its hello): such a connection goes after one
        /// that has shown nothing.
        var progressed = false
        let evict: @Sendable () -> Void
    }

    private struct State {
        var nextTicket: UInt64 = 0
        /// Connections that have not authenticated, by ticket (tickets grow with age).
        var waiting: [UInt64: Waiting] = [:]
        var waitingPerAddress: [String: Int] = [:]
        var openPerAddress: [String: Int] = [:]
        var counters = Counters()
    }

    let limits: Limits
    private let state = Mutex(State())

    init(limits: Limits) {
        self.limits = limits
    }

    /// Connections that have not authenticated, in all.
    var unauthenticatedCount: Int { state.withLock { $0.waiting.count } }

    /// Open connections (authenticated or not) from `address`.
    func openConnections(from address: String) -> Int { state.withLock { $0.openPerAddress[address] ?? 0 } }

    var counters: Counters { state.withLock { $0.counters } }

    /// Takes a place for a new connection from `address`. `evict` closes that connection should it have to give way
    /// to a later one while it is still unauthenticated; it is called outside the lock.
    func admit(from address: String, evict: @escaping @Sendable () -> Void) -> Result<Ticket, Refusal> {
        var victim: (@Sendable () -> Void)?
        let result: Result<UInt64, Refusal> = state.withLock { state in
            let open = state.openPerAddress[address] ?? 0
            guard open < limits.connectionsPerAddress else {
                state.counters.refused += 1
                return .failure(.tooManyConnectionsFromAddress(limits.connectionsPerAddress))
            }
            let own = state.waitingPerAddress[address] ?? 0
            if own >= limits.unauthenticatedPerAddress {
                victim = Self.evict(from: address, in: &state)
            } else if state.waiting.count >= limits.unauthenticated {
                // The address holding the most places gives way, if it holds more than the newcomer's would.
                if let (richest, held) = state.waitingPerAddress.max(by: { $0.value < $1.value }), held > own + 1 {
                    victim = Self.evict(from: richest, in: &state)
                }
            }
            guard own < limits.unauthenticatedPerAddress || victim != nil,
                  state.waiting.count < limits.unauthenticated else {
                state.counters.refused += 1
                return .failure(.unauthenticatedFull)
            }
            let ticket = state.nextTicket
            state.nextTicket += 1
            state.waiting[ticket] = Waiting(address: address, evict: evict)
            state.waitingPerAddress[address, default: 0] += 1
            state.openPerAddress[address] = open + 1
            return .success(ticket)
        }
        victim?()
        return result.map { Ticket(admission: self, number: $0, address: address) }
    }

    /// Removes the waiting connection of `address` that has shown least, oldest first, and returns its closer.
    private static func evict(from address: String, in state: inout State) -> (@Sendable () -> Void)? {
        let candidates = state.waiting.filter { $0.value.address == address }
        guard let (ticket, chosen) = candidates.min(by: { a, b in
            a.value.progressed != b.value.progressed ? !a.value.progressed : a.key < b.key
        }) else { return nil }
        state.waiting[ticket] = nil
        Self.decrement(&state.waitingPerAddress, address)
        state.counters.evicted += 1
        return chosen.evict
    }

    private static func decrement(_ counts: inout [String: Int], _ address: String) {
        let left = (counts[address] ?? 1) - 1
        counts[address] = left > 0 ? left : nil
    }

    fileprivate func progressed(_ ticket: UInt64) {
        state.withLock { $0.waiting[ticket]?.progressed = true }
    }

    /// The connection authenticated (or proved a media token): it leaves the unauthenticated places.
    fileprivate func authenticated(_ ticket: UInt64) {
        state.withLock { state in
            guard let waiting = state.waiting.removeValue(forKey: ticket) else { return }
            Self.decrement(&state.waitingPerAddress, waiting.address)
        }
    }

    fileprivate func closed(_ ticket: UInt64, address: String) {
        state.withLock { state in
            if let waiting = state.waiting.removeValue(forKey: ticket) {
                Self.decrement(&state.waitingPerAddress, waiting.address)
            }
            Self.decrement(&state.openPerAddress, address)
        }
    }

    /// One connection's places: given back in two steps (authentication, close), each at most once.
    final class Ticket: Sendable {
        private let admission: ConnectionAdmission
        private let number: UInt64
        private let address: String
        private let stage = Atomic<UInt8>(0)  // 0 waiting, 1 authenticated, 2 closed

        fileprivate init(admission: ConnectionAdmission, number: UInt64, address: String) {
            self.admission = admission
            self.number = number
            self.address = address
        }

        /// The connection sent its first protocol message: it no longer goes first when one must give way.
        func progressed() {
            if stage.load(ordering: .relaxed) == 0 { admission.progressed(number) }
        }

        /// The connection authenticated: its unauthenticated place is free; it still counts for its address.
        func authenticated() {
            if stage.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged {
                admission.authenticated(number)
            }
        }

        /// The connection closed: every place it held is free.
        func release() {
            if stage.exchange(2, ordering: .acquiringAndReleasing) != 2 { admission.closed(number, address: address) }
        }
    }
}
