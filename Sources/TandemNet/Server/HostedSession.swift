import TandemCrypto
import Foundation
import Logging
import NIOCore
import Synchronization
import TandemCore

/// A session hosted by a `SessionServer`: its authority, the connections of its participants, its journal.
///
/// Everything mutable is touched only on `loop`, so the authority sees one input at a time in order.
final class HostedSession: @unchecked Sendable {
    // @unchecked Sendable: all mutable state below is confined to `loop` (every entry point hops there and
    // asserts it); only the immutable `id`, `key` and `loop` are read from other threads.
    /// Allocates the frames this session encodes once for several recipients.
    private static let allocator = ByteBufferAllocator()
    let id: String
    let key: SymmetricKey
    let loop: any EventLoop
    private let configuration: ServerConfiguration
    private let clock: any MonotonicClock
    let logger: Logger
    private let onEnded: @Sendable (String) -> Void
    /// Where unreliable app messages go as datagrams to members whose UDP endpoint works.
    private let datagrams: DatagramRelay?

    var authority: SessionAuthority
    var connections: [ParticipantID: ServerConnection] = [:] {
        didSet {
            broadcastTargets.removeAll(keepingCapacity: true)
            counters.participantsChanged(by: connections.count - countedParticipants)
            countedParticipants = connections.count
        }
    }
    /// The server's counts: participants joined (`connections`, as last counted) and messages delivered.
    private let counters: ServerCounters
    private var countedParticipants = 0
    /// Per sender of broadcasts: its connection, and the recipients and connections of its last broadcast, as
    /// long as no connection of the session changes — so that a broadcast looks up one participant, not each
    /// recipient. At most one entry per participant.
    private var broadcastTargets: [ParticipantID: BroadcastTargets] = [:]
    private struct BroadcastTargets {
        let sender: ServerConnection
        let recipients: [ParticipantID]
        let connections: [ServerConnection]
    }
    /// Resend requests waiting for their senders, and those open (`HostedSession+Resend`).
    var resendHolds = ResendHolds()
    var resendTimer: Scheduled<Void>?
    /// What the relay read from each sender's earlier links (`ResendHolds.senderReturned`).
    var relayedMarks: [ParticipantID: AppMessageMark] = [:]
    /// Running SHA-256 of each attachment being uploaded, checked at its commit.
    var uploads: [String: Upload] = [:]
    private var timer: Scheduled<Void>?
    private var timerDeadline = SessionInstant(nanoseconds: .max)
    private(set) var ended = false
    lazy var media = MediaRelay(configuration: configuration.relayMedia, loop: loop, clock: clock, tap: configuration.mediaTap)
    /// Messages dropped because their recipient could not keep up (unreliable only).
    private(set) var droppedUnreliable = 0
    /// Whether anyone has joined (a remotely created session nobody joins expires).
    var hasBeenJoined = false
    /// Connections authenticated and not joined yet, and whether the session has ended — together, so that none is
    /// admitted after the end and left open. Touched from every loop.
    private let waitingToJoin = Mutex<(ended: Bool, connections: [ObjectIdentifier: ServerConnection])>((false, [:]))

    /// The address of the client that created this session remotely (nil: created in-process).
    let creator: String?
    /// Where the journal's bytes are accounted (across the server) and kept (the spool, when not in memory).
    let journal: JournalStorage
    /// Attachments the ledger holds bytes for: the address their upload came from and their announced size.
    var accounted: [String: (address: String, size: Int64)] = [:]
    /// Where this session is kept across a restart (nil: it lives as long as the process).
    let keeping: StateKeeping?

    struct JournalStorage {
        let ledger: JournalLedger
        let spool: SessionSpool?
    }

    init(id: String, key: SymmetricKey, loop: any EventLoop, configuration: ServerConfiguration,
         clock: any MonotonicClock, activity: ActivityEnvelope? = nil, datagrams: DatagramRelay? = nil,
         creator: String? = nil, journal: JournalStorage = .init(ledger: JournalLedger(perAddress: .max, total: .max), spool: nil),
         counters: ServerCounters, logger: Logger, keeping: StateKeeping? = nil, restoring: AuthoritySnapshot? = nil,
         onEnded: @escaping @Sendable (String) -> Void) {
        self.keeping = keeping
        self.creator = creator
        self.counters = counters
        self.journal = journal
        self.datagrams = datagrams
        self.id = id
        self.key = key
        self.loop = loop
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.onEnded = onEnded
        var rules = configuration.authority
        rules.keepsAttachmentBytes = journal.spool == nil
        self.authority = restoring.map { SessionAuthority(restoring: $0, configuration: rules) }
            ?? SessionAuthority(sessionID: id, activity: activity, configuration: rules,
                                now: SessionInstant(nanoseconds: clock.now.nanoseconds))
    }

    /// Joins `connection` as a participant. Calls back on the connection's loop with the id, or closes it.
    ///
    /// The authority decides the identity and the role: `reconnectAs` counts only with that participant's
    /// `reconnectToken`, and `wantsHost` only for the first participant to ask in the session's life. A
    /// reconnect that takes over a still-open connection closes the old one.
    func join(_ connection: ServerConnection, name: String, reconnectAs: ParticipantID?, reconnectToken: String?,
              prerollEstimate: TimeSpan, wantsHost: Bool, waiting: Bool = false, lazyJournal: Bool = false,
              via: String? = nil, resends: Bool = false, received: [AppMessageMark] = []) {
        loop.preconditionInEventLoop()
        guard !ended else {
            connection.close(.sessionEnded, "the session has ended")
            return
        }
        switch authority.join(name: name, reconnectAs: reconnectAs, reconnectToken: reconnectToken,
                              prerollEstimate: prerollEstimate, wantsHost: wantsHost,
                              newReconnectToken: Self.newReconnectToken(), waiting: waiting, lazyJournal: lazyJournal,
                              via: via, now: sessionNow) {
        case .refused(let reason):
            connection.close(WireErrorCode(reason.code), reason.message)
        case .joined(let participant, let actions):
            let isHost = authority.participants.first { $0.participant.id == participant }?.isHost ?? false
            // The authority has cleaned the name (no control characters, bounded), so it is safe in a log line.
            logger.info("joined", metadata: ["session": "\(id)", "participant": "\(participant)",
                                             "name": "\(authority.participantName(participant) ?? "")",
                                             "host": "\(isHost)", "reconnect": "\(reconnectAs == participant)"])
            let previous = connections[participant].flatMap { $0 !== connection ? $0 : nil }
            if let previous {
                uploads = uploads.filter { $0.value.owner != participant }
                previous.close(.removed, "replaced by a newer connection of the same participant")
            }
            connections[participant] = connection
            connection.joined(as: participant, session: self)
            perform(actions)
            resendJoined(participant, resends: resends, received: received, replacing: previous,
                         fresh: reconnectAs != participant)
        }
    }

    /// A session message from a joined participant.
    func receive(_ message: ClientMessage, from participant: ParticipantID, via connection: ServerConnection) {
        loop.preconditionInEventLoop()
        guard !ended, connections[participant] === connection else { return }
        if case .appMessage(let outgoing) = message {
            if !resendHolds.isIdle, relayWhileResending(outgoing, from: participant) { return }
            if outgoing.delivery == .reliable {
                connection.noteRelayed(outgoing.sequence, everyone: outgoing.recipients == .all)
            }
            return relay(outgoing, from: participant)
        }
        if case .resent(let receiver) = message { return resendDone(from: participant, to: receiver) }
        if case .timelineRequest(let request) = message, let copy = request.copy {
            // Sent twice, over TCP and as a datagram: acted on once, whichever comes first.
            guard connection.requestCopies.withLock({ $0.accept(copy) }) else { return }
        }
        var message = message
        if case .leave = message {
            logger.info("left", metadata: ["session": "\(id)", "participant": "\(participant)"])
        }
        guard case .journal(let journalMessage) = message else {
            // A link report (each second per peer) is a measurement the next link renews: not kept.
            perform(authority.receive(message, from: participant, now: sessionNow), keeping: !message.isLinkReport)
            return
        }
        receiveJournal(checkChecksum(journalMessage, from: participant), from: participant, via: connection)
    }

    /// Journal traffic: the server-wide bounds (per address, in all) first, then the authority's quotas; accepted
    /// chunks go to the spool when there is one.
    private func receiveJournal(_ message: JournalMessage, from participant: ParticipantID, via connection: ServerConnection) {
        if case .begin(let info) = message, authority.receivedBytes(ofAttachment: info.id) == nil {
            let address = connection.address
            if let problem = journal.ledger.reserve(max(0, info.size), for: address) {
                uploads[info.id] = nil
                perform([.send(.journal(.failed(id: SessionAuthority.quoted(info.id), reason: problem)), to: participant)])
                return
            }
            accounted[info.id] = (address, max(0, info.size))
        }
        var before: Int64?
        if case .chunk(let attachment, _, _) = message { before = authority.receivedBytes(ofAttachment: attachment) }
        perform(authority.receive(.journal(message), from: participant, now: sessionNow), keeping: !message.isChunk)
        if case .begin(let info) = message, uploads[info.id]?.owner == participant,
           !authority.isReceivingAttachment(info.id, from: participant) {
            uploads[info.id] = nil  // Refused (size, quota, id): nothing will be hashed.
        }
        if case .chunk(let attachment, let offset, let bytes) = message, let spool = journal.spool, let before,
           authority.receivedBytes(ofAttachment: attachment) == before + Int64(bytes.count) {
            do {
                try spool.write(bytes, attachment: attachment, offset: offset)
            } catch {
                logger.error("cannot spool an attachment", metadata: ["session": "\(id)", "error": "\(error)"])
                perform(authority.receive(.journal(.failed(id: attachment, reason: "the server could not store it")),
                                          from: participant, now: sessionNow))
            }
        }
    }

    /// Gives back what attachments the journal no longer holds took: their bytes in the ledger and their files.
    private func settleJournal() {
        guard !accounted.isEmpty else { return }
        for (attachment, entry) in accounted where ended || authority.receivedBytes(ofAttachment: attachment) == nil {
            accounted[attachment] = nil
            journal.ledger.release(entry.size, for: entry.address)
            journal.spool?.remove(attachment: attachment)
        }
    }

    /// The most frequent message: one answer from the authority for all its recipients, encoded once for them all.
    private func relay(_ outgoing: OutgoingAppMessage, from participant: ParticipantID) {
        switch authority.relayAppMessage(outgoing, from: participant, now: sessionNow) {
        case .deliver(let incoming, let recipients):
            let message = ServerMessage.appMessage(incoming)
            guard incoming.delivery != .unreliable else {
                var encoded: (ServerMessage, Frame)?
                for target in recipients { send(message, to: target, encoded: &encoded) }
                return
            }
            fanOut(to: recipients.compactMap { connections[$0] }) {
                try SessionCodec.encode(message, allocator: Self.allocator)
            }
        case .refuse(let refusal): perform([.send(.refused(refusal), to: participant)], keeping: false)
        case .ignore: break
        }
    }

    /// A reliable app message for everyone else, forwarded as its bytes came (`SessionCodec.broadcastAppMessage`):
    /// the authority admits it from its size alone, and the payload is copied once, into the frame every
    /// recipient shares — never decoded.
    func relayBroadcast(sequence: UInt64, payload: ByteBuffer, from participant: ParticipantID,
                        via connection: ServerConnection) {
        loop.preconditionInEventLoop()
        guard !ended else { return }
        let cached = broadcastTargets[participant]
        guard (cached?.sender ?? connections[participant]) === connection else { return }
        connection.noteRelayed(sequence, everyone: true)
        if !resendHolds.isIdle, resendHolds.isHolding(from: participant) {
            return relayBroadcastHolding(sequence: sequence, payload: payload, from: participant)
        }
        switch authority.admitAppMessage(payloadSize: payload.readableBytes, delivery: .reliable, recipients: .all,
                                         from: participant, now: sessionNow) {
        case .deliver(let recipients):
            let targets: [ServerConnection]
            if let cached, cached.recipients == recipients {
                targets = cached.connections
            } else {
                targets = recipients.compactMap { connections[$0] }
                broadcastTargets[participant] = BroadcastTargets(sender: connection, recipients: recipients,
                                                                 connections: targets)
            }
            fanOut(to: targets) {
                try SessionCodec.forwardedAppMessage(source: participant, sequence: sequence, payload: payload,
                                                     allocator: Self.allocator)
            }
        case .refuse(let refusal): perform([.send(.refused(refusal), to: participant)], keeping: false)
        case .ignore: break
        }
    }

    /// One frame, shared by every recipient's queue (no copy of the message per recipient).
    @inline(__always)  // the closure inlined: 8,139 instructions a delivery against 8,450 called
    private func fanOut(to targets: [ServerConnection], _ encode: () throws -> Frame) {
        guard !targets.isEmpty else { return }
        guard let frame = try? encode() else {
            logger.error("cannot encode a server message", metadata: ["session": "\(id)"])
            return
        }
        for target in targets { target.send(frame) }
        counters.delivered(targets.count)
    }

    /// The connection of `participant` went away.
    /// `what` says what happened, for the others' notice (nil: "lost connection").
    func connectionLost(_ participant: ParticipantID, via connection: ServerConnection, what: String? = nil) {
        loop.preconditionInEventLoop()
        guard !ended, connections[participant] === connection else { return }
        connections[participant] = nil
        resendLost(participant, via: connection)
        logger.info("connection lost", metadata: ["session": "\(id)", "participant": "\(participant)"])
        uploads = uploads.filter { $0.value.owner != participant }
        media.forget(participant)
        perform(authority.connectionLost(participant, now: sessionNow, what: what))
    }

    /// A connection closed while its join was being processed.
    func connectionLostDuringJoin(_ connection: ServerConnection, what: String? = nil) {
        loop.preconditionInEventLoop()
        guard let participant = connections.first(where: { $0.value === connection })?.key else { return }
        connectionLost(participant, via: connection, what: what)
    }

    /// Ends the session for everyone with `reason`.
    func shutdown(reason: InvalidationReason) {
        loop.preconditionInEventLoop()
        guard !ended else { return }
        perform(authority.shutdown(reason: reason, now: sessionNow))
        if !ended { finish(reason) }
    }

    var participantCount: Int { connections.count }

    /// Takes `connection`, just authenticated, among those waiting to send their `join`; or says why not (the
    /// session has ended, or already has `maxWaitingToJoinPerSession` of them). Any loop.
    func admitWaitingToJoin(_ connection: ServerConnection) -> (code: WireErrorCode, why: String, counted: ServerRefusal)? {
        waitingToJoin.withLock { waiting in
            if waiting.ended { return (.sessionEnded, "the session has ended", .sessionEnded) }
            guard waiting.connections.count < configuration.maxWaitingToJoinPerSession else {
                return (.sessionFull, "too many connections to this session have not joined yet; try again in a moment",
                        .waitingToJoinFull)
            }
            waiting.connections[ObjectIdentifier(connection)] = connection
            return nil
        }
    }

    /// `connection` sent its `join`, or closed. Any loop.
    func stopWaitingToJoin(_ connection: ServerConnection) {
        _ = waitingToJoin.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    // MARK: - Actions

    func perform(_ actions: [SessionAuthority.Action], keeping keep: Bool = true) {
        // What the actions tell peers is kept first (`SessionStateStore`).
        if keep { persist() }
        var encoded: (ServerMessage, Frame)?
        for action in actions {
            switch action {
            case .send(let message, let target):
                send(message, to: target, encoded: &encoded)
            case .close(let target, let reason):
                if let connection = connections.removeValue(forKey: target) {
                    connection.invalidate(reason)
                }
            case .wakeUp(let at):
                schedule(at: at)
            case .sessionEnded(let reason):
                finish(reason)
            case .sendStoredChunk(let attachment, let offset, let length, let target):
                guard let spool = journal.spool, let connection = connections[target] else { continue }
                connection.sendStoredChunk(.init(spool: spool, attachment: attachment, offset: offset, length: length))
                counters.delivered(1)
            }
        }
        // Whatever the authority dropped (removed, failed, its sender gone) gives its bytes back.
        settleJournal()
    }

    /// Sends `message` to `target`'s connection. `encoded` keeps the last frame encoded, so a message that goes
    /// to several recipients in a row is encoded once.
    private func send(_ message: ServerMessage, to target: ParticipantID, encoded: inout (ServerMessage, Frame)?) {
        guard let connection = connections[target] else { return }
        if case .appMessage(let app) = message, app.delivery == .unreliable {
            // Over UDP when the member's endpoint works; over TCP otherwise, dropped when it is backed up.
            if datagrams?.sendUnreliable(message, over: connection) == true { return counters.delivered(1) }
            if !connection.channel.isWritable {
                droppedUnreliable += 1
                return
            }
        }
        if case .journal = message {
            // Journal traffic (up to 100 MB for a late joiner) is encoded lazily and paced by the socket.
            connection.send(message)
            counters.delivered(1)
            return
        }
        let frame: Frame
        if let (last, lastFrame) = encoded, last == message {
            frame = lastFrame
        } else if let fresh = try? SessionCodec.encode(message, allocator: connection.channel.allocator) {
            frame = fresh
            encoded = (message, fresh)
        } else {
            logger.error("cannot encode a server message", metadata: ["session": "\(id)"])
            return
        }
        if case .timeline = message {
            // A copy as a datagram first (to a member that asked for one): a start, pause, seek or rate change then
            // does not wait for a TCP retransmission or a busy stream. The member acts on whichever comes first.
            datagrams?.sendTimelineCopy(frame, over: connection)
        }
        connection.send(frame)
        counters.delivered(1)
    }

    func schedule(at deadline: SessionInstant) {
        guard deadline < timerDeadline || timer == nil else { return }
        timer?.cancel()
        timerDeadline = deadline
        let delay = max(.zero, deadline - sessionNow)
        timer = loop.scheduleTask(in: TimeAmount(delay)) { [weak self] in
            guard let self, !self.ended else { return }
            self.timer = nil
            self.timerDeadline = SessionInstant(nanoseconds: .max)
            self.perform(self.authority.timerFired(now: self.sessionNow))
        }
    }

    /// The session clock: this server's monotonic clock, read as session time.
    var sessionNow: SessionInstant { SessionInstant(nanoseconds: clock.now.nanoseconds) }

    private func finish(_ reason: InvalidationReason) {
        guard !ended else { return }
        ended = true
        timer?.cancel()
        timer = nil
        for (_, connection) in connections {
            connection.invalidate(reason)
        }
        connections.removeAll()
        settleJournal()
        journal.spool?.removeAll()
        forgetState()
        // Connections that authenticated but never joined go too: nothing is left to join.
        let waiting = waitingToJoin.withLock { waiting in
            waiting.ended = true
            defer { waiting.connections.removeAll() }
            return Array(waiting.connections.values)
        }
        for connection in waiting { connection.close(.sessionEnded, reason.message) }
        logger.info("session ended", metadata: ["session": "\(id)", "reason": "\(reason.message)"])
        onEnded(id)
    }
}
