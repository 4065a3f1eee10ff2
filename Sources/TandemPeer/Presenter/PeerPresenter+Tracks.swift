import Foundation
import Tandem

/// Track choices between participants (`host --share-tracks`): personal by default; a sharing host proposes its
/// audio and subtitle tracks (its start-up options and later `a`/`s` keys) to everyone, each joiner is told and
/// applies them unless it chose that kind of track on its own command line.
package struct TrackSharing: Sendable {
    /// This participant is a host that proposes its choices.
    package var share: Bool
    /// The kinds chosen on this participant's command line: a host proposes them from the start; a joiner keeps
    /// them rather than apply a proposal.
    package var chosen: Set<TrackProposal.Kind>

    package init(share: Bool = false, chosen: Set<TrackProposal.Kind> = []) {
        self.share = share
        self.chosen = chosen
    }
}

/// The presenter's mutable track-sharing state.
struct TrackSharingState: Sendable {
    /// The kinds the host proposes (it chose them by option or key).
    var shared: Set<TrackProposal.Kind> = []
    /// The participants already sent the current proposals.
    var told: Set<ParticipantID> = []
    /// Proposals received and not yet applied (the latest of each kind).
    var pending: [TrackProposal.Kind: (TrackProposal, ParticipantID)] = [:]
    /// The host: the participants whose request it answered (at most once each; pruned to those present).
    var answered: Set<ParticipantID> = []
    /// A joiner: the latest proposal of each kind it received, and when (a copy soon after is an answer to its
    /// request that crossed the first one, and is not shown again).
    var received: [TrackProposal.Kind: (TrackProposal, ContinuousClock.Instant)] = [:]
}

extension PeerPresenter {
    /// The host: a newcomer gets the current proposals once it has joined; nothing is sent before anything is chosen.
    func proposeToNewcomers(_ others: [ParticipantState]) {
        guard trackSharing.share else { return }
        // Only those who joined: the server passes nothing to someone who entered and has not joined yet.
        let ids = Set(others.filter(\.hasJoined).map(\.participant.id))
        let (newcomers, kinds) = trackState.withLock { state -> (Set<ParticipantID>, Set<TrackProposal.Kind>) in
            let new = ids.subtracting(state.told)
            state.told = ids
            state.answered.formIntersection(ids)
            return (new, state.shared)
        }
        guard !newcomers.isEmpty, !kinds.isEmpty else { return }
        trackRequests.yield((kinds, .only(newcomers)))
    }

    /// The host changed a track with a key or a line: propose it to everyone.
    func proposeAfter(_ command: UserCommand) {
        guard trackSharing.share else { return }
        let kind: TrackProposal.Kind
        switch command {
        case .audio, .cycleAudio: kind = .audio
        case .subtitles, .cycleSubtitles: kind = .subtitle
        default: return
        }
        trackState.withLock { _ = $0.shared.insert(kind) }
        trackRequests.yield(([kind], .all))
    }

    /// Sends what was asked for, once this player has loaded the item (the proposal names its own tracks).
    func sendTrackProposals(_ requests: AsyncStream<(Set<TrackProposal.Kind>, Recipients)>) async {
        for await (kinds, recipients) in requests {
            guard await waitForLoad() else { return }
            let ordered = TrackProposal.Kind.allCases.filter(kinds.contains)
            if let problem = await peer.proposeTracks(ordered, to: recipients) { warn(problem) }
        }
    }

    /// The host: answers a participant's request for the current proposals, once per participant.
    func answerTrackRequests() async {
        for await (_, context) in peer.chat.messages(of: TrackProposalRequest.self) {
            let kinds = trackState.withLock { state -> Set<TrackProposal.Kind> in
                guard state.told.contains(context.source), state.answered.insert(context.source).inserted else {
                    return []
                }
                return state.shared
            }
            if !kinds.isEmpty { trackRequests.yield((kinds, .only([context.source]))) }
        }
    }

    /// A joiner: once its item has loaded, asks the host for its proposals if none came within a second.
    func requestTrackProposals() async {
        guard let host = peer.connection.welcome.participants.first(where: \.isHost)?.participant.id,
              host != peer.id, await waitForLoad() else { return }
        try? await Task.sleep(for: .seconds(1))
        guard !Task.isCancelled, trackState.withLock({ $0.received.isEmpty }) else { return }
        try? await peer.chat.send(TrackProposalRequest(), to: .only([host]))
    }

    /// A joiner: proposals from the host wait (the latest of each kind) until the item is loaded here.
    func receiveTrackProposals(_ proposals: AsyncStream<(TrackProposal, ParticipantID)>,
                               wake: AsyncStream<Void>.Continuation) async {
        let host = peer.connection.welcome.participants.first(where: \.isHost)?.participant.id
        for await (proposal, from) in proposals {
            // Only the host proposes; anything else, or anything out of bounds, is dropped.
            guard from == host, from != peer.id, let proposal = proposal.validated else { continue }
            let fresh = trackState.withLock { state -> Bool in
                let now = ContinuousClock.now
                if let (last, at) = state.received[proposal.kind], last == proposal, now - at < .seconds(5) {
                    return false
                }
                state.received[proposal.kind] = (proposal, now)
                state.pending[proposal.kind] = (proposal, from)
                return true
            }
            if fresh { wake.yield() }
        }
    }

    /// Applies pending proposals as they come, once something is loaded.
    func applyTrackProposals(_ wake: AsyncStream<Void>) async {
        for await _ in wake {
            guard await waitForLoad() else { return }
            for kind in TrackProposal.Kind.allCases {
                guard let entry = trackState.withLock({ $0.pending.removeValue(forKey: kind) }) else { continue }
                showProposal(entry.0, from: entry.1)
            }
        }
    }

    private func showProposal(_ proposal: TrackProposal, from: ParticipantID) {
        let name = nameOf(from) ?? "the host"
        let option = proposal.kind == .audio ? "--audio-track" : "--sub-track/--sub"
        let result: (applied: Bool, outcome: String) = trackSharing.chosen.contains(proposal.kind)
            ? (applied: false, outcome: "you chose yours with \(option): keeping it") : peer.apply(proposal)
        let (applied, outcome) = (result.applied, result.outcome)
        let text = "\(name) proposes \(proposal.summary) — \(outcome)"
        say(text)
        display(text)
        emit(TrackProposalEvent(participant: from.rawValue, name: name, kind: proposal.kind.rawValue,
                                track: proposal.track, language: proposal.language, applied: applied,
                                playing: peer.playingTrack(proposal.kind), text: text))
    }

    /// Waits until this player has an item loaded; false when cancelled first.
    private func waitForLoad() async -> Bool {
        while peer.player.mediaInfo == nil {
            guard !Task.isCancelled else { return false }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return !Task.isCancelled
    }
}
