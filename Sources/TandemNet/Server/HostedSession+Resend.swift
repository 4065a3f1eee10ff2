import Foundation
import NIOCore
import TandemCore

// Resending reliable app messages across a reconnect or a relay restart (docs/PROTOCOL.md, "Resending"): a
// resuming receiver's marks go to each sender as `resend` requests; while one is open, the sender's new messages
// for that receiver are left to its resend (`ResendHolds`), so the receiver sees every message once and in order.
extension HostedSession {
    /// `participant` has joined (its welcome sent): records whether it resends, and asks the senders it names in
    /// `received` — now, or when they are back — to resend what it lacks. A participant back on a new link (it
    /// `replac`es one, or its earlier link was lost) is asked in turn, for each receiver that stayed, to resend what
    /// came after what the relay read from it: its last messages may have died with its old link. `fresh`: a
    /// newcomer (it has sent nothing yet).
    func resendJoined(_ participant: ParticipantID, resends: Bool, received: [AppMessageMark],
                      replacing previous: ServerConnection?, fresh: Bool) {
        if let previous { foldRelayed(participant, from: previous) }
        if fresh { relayedMarks[participant] = AppMessageMark(participant: participant, everyone: 0, some: 0) }
        guard resends || !received.isEmpty || !resendHolds.pending.isEmpty || !resendHolds.isIdle
              || resendHolds.resenders.contains(participant) else { return }
        var requests = resendHolds.joined(participant, resends: resends, received: received,
                                          members: authority.memberIDs,
                                          limit: authority.configuration.maxParticipants, now: sessionNow)
        if !fresh, let relayed = relayedMarks[participant] {
            requests += resendHolds.senderReturned(participant, relayed: relayed, receivers: Set(connections.keys),
                                                   now: sessionNow)
        }
        for (sender, request) in requests { connections[sender]?.send(.resend(request)) }
        if !requests.isEmpty { scheduleResendExpiry() }
    }

    /// `participant`'s connection is gone.
    func resendLost(_ participant: ParticipantID, via connection: ServerConnection) {
        foldRelayed(participant, from: connection)
        guard !resendHolds.isIdle || resendHolds.resenders.contains(participant) else { return }
        resendHolds.lost(participant)
    }

    /// Adds what the relay read from `participant`'s `connection` (now replaced or gone) to `relayedMarks`; a lane
    /// the relay knows nothing of stays unknown until a message comes in it. Entries of those no longer members go.
    private func foldRelayed(_ participant: ParticipantID, from connection: ServerConnection) {
        var mark = relayedMarks[participant] ?? AppMessageMark(participant: participant)
        let everyone = connection.relayedEveryone.load(ordering: .relaxed)
        let some = connection.relayedSome.load(ordering: .relaxed)
        if everyone > 0 { mark.everyone = max(mark.everyone ?? 0, everyone) }
        if some > 0 { mark.some = max(mark.some ?? 0, some) }
        relayedMarks[participant] = mark
        if relayedMarks.count > 2 * authority.configuration.maxParticipants {
            let members = authority.memberIDs
            relayedMarks = relayedMarks.filter { members.contains($0.key) }
        }
    }

    /// `sender` has resent to `receiver`: its messages go to it again.
    func resendDone(from sender: ParticipantID, to receiver: ParticipantID) {
        resendHolds.resent(from: sender, to: receiver)
    }

    /// An app message from `participant` while some request is open: a resent one goes straight to its receiver
    /// (outside the sender's rate, within the request's allowance, still size-checked); a new one goes to everyone
    /// but the receivers it is resending to (its resend carries it to them). False: not handled here.
    func relayWhileResending(_ outgoing: OutgoingAppMessage, from participant: ParticipantID) -> Bool {
        if outgoing.delivery == .reliable, case .only(let chosen) = outgoing.recipients, chosen.count == 1,
           let receiver = chosen.first, resendHolds.passes(from: participant, to: receiver) {
            guard outgoing.payload.count <= authority.configuration.maxAppMessageSize + PayloadSealing.allowance else {
                connections[participant]?.send(.refused(reason: "a resent message is larger than the limit"))
                return true
            }
            let incoming = IncomingAppMessage(source: participant, delivery: .reliable, sequence: outgoing.sequence,
                                              payload: outgoing.payload)
            connections[receiver]?.send(.appMessage(incoming))
            return true
        }
        guard outgoing.delivery == .reliable, resendHolds.isHolding(from: participant) else { return false }
        connections[participant]?.noteRelayed(outgoing.sequence, everyone: outgoing.recipients == .all)
        switch authority.relayAppMessage(outgoing, from: participant, now: sessionNow) {
        case .deliver(let incoming, let recipients):
            let targets = recipients.filter { resendHolds.forwards(from: participant, to: $0) }.compactMap { connections[$0] }
            guard !targets.isEmpty, let frame = try? SessionCodec.encode(ServerMessage.appMessage(incoming),
                                                                         allocator: ByteBufferAllocator()) else { break }
            for target in targets { target.send(frame) }
        case .refuse(let refusal): connections[participant]?.send(.refused(refusal))
        case .ignore: break
        }
        return true
    }

    /// A broadcast (`relayBroadcast`) from a sender with an open request: as `relayWhileResending`'s new messages.
    func relayBroadcastHolding(sequence: UInt64, payload: ByteBuffer, from participant: ParticipantID) {
        let outgoing = OutgoingAppMessage(recipients: .all, delivery: .reliable, sequence: sequence,
                                          payload: Data(payload.readableBytesView))
        _ = relayWhileResending(outgoing, from: participant)
    }

    /// Closes the requests past their deadline (a sender that never answers) when the first is due.
    private func scheduleResendExpiry() {
        guard resendTimer == nil, let deadline = resendHolds.nextDeadline else { return }
        resendTimer = loop.scheduleTask(in: TimeAmount(max(.zero, deadline - sessionNow))) { [weak self] in
            guard let self, !self.ended else { return }
            self.resendTimer = nil
            self.resendHolds.expire(now: self.sessionNow)
            self.scheduleResendExpiry()
        }
    }
}
