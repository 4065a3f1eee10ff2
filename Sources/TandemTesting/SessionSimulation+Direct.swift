import TandemCore

/// Direct paths between the simulated peers (`directDelay`): each peer is told it reaches every other that has
/// joined that far away, and a proposal it sends straight arrives after that delay, unless the recipient left.
extension SessionSimulation {
    func directPaths(of p: Int) -> [DirectPath] {
        guard let directDelay else { return [] }
        return peers.filter { $0.index != p && $0.connected }.compactMap { other in
            other.id.map { DirectPath(participant: $0, oneWayDelay: TimeSpan(nanoseconds: directDelay)) }
        }
    }

    func sendDirect(_ proposal: DirectProposal, to ids: [ParticipantID]) {
        guard let directDelay else { return }
        for id in ids {
            guard let q = peers.firstIndex(where: { $0.id == id }) else { continue }
            at(now + directDelay) { sim in
                guard sim.peers[q].connected else { return }
                sim.apply(q) { $0.machine.receiveDirect(proposal, now: $1) }
            }
        }
    }
}
