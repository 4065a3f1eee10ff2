import TandemCore

extension TandemClientConnection {
    // MARK: Direct paths (SessionLink)

    /// The peers whose direct datagrams answer now, with half the median of the latest round trips to each
    /// (`TandemClient.Options.directPaths`); empty without a UDP side or without the secret.
    public func directPaths() -> [DirectPath] {
        shared.datagramLink?.direct?.paths() ?? []
    }

    /// Sends `proposal` as one datagram to each of `participants` with a direct path up; unreliable, no retry.
    public func sendDirect(_ proposal: DirectProposal, to participants: [ParticipantID]) {
        guard !participants.isEmpty else { return }
        shared.datagramLink?.direct?.send(proposal, to: participants)
    }

    /// The proposals direct peers send, each checked to come from the participant it names.
    public func directProposals() -> AsyncStream<DirectProposal> {
        shared.directProposals.subscribe()
    }
}
