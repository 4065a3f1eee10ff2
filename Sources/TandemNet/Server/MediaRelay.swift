import Foundation
import NIOCore
import TandemCore

/// What a relay passes of the host's shared media (`serve --relay-media`): nil in `ServerConfiguration` refuses
/// every request with words a joiner shows.
public struct RelayMediaConfiguration: Sendable, Hashable {
    /// The session's bandwidth cap, bytes per second (all members together).
    public var bytesPerSecond: Int

    /// `bytesPerSecond` nil: the default, 2,000,000 (`MediaPassageLimits`).
    public init(bytesPerSecond: Int? = nil) {
        self.bytesPerSecond = bytesPerSecond ?? MediaPassageLimits().bytesPerSecond
    }

    /// The bounds of each session's passage (the others are `MediaPassageLimits`' defaults, in SECURITY.md).
    var limits: MediaPassageLimits {
        var limits = MediaPassageLimits()
        limits.bytesPerSecond = bytesPerSecond
        return limits
    }
}

/// One session's shared media through this relay, on the session's loop: a joiner's `mediaRequest` goes on to the
/// host when `MediaPassage` allows (within the session's cap and the bounds on open requests), the host's
/// `mediaChunk` back to the requester unchanged (sealed: the relay reads its header, never its bytes), and what
/// is refused is answered with a `mediaChunk` saying why.
final class MediaRelay: @unchecked Sendable {
    // @unchecked Sendable: confined to its session's loop, as `HostedSession` is (its timer runs there too).
    private let loop: any EventLoop
    private let clock: any MonotonicClock
    private var passage: MediaPassage?
    /// The requests waiting for the cap, as they will go to the host (their requester named).
    private var held: [MediaPassage.Key: Frame] = [:]
    private var timer: Scheduled<Void>?
    private var timerAt: LocalInstant?
    /// Sees (and may replace) every chunk frame passed on: for tests that play a relay reading or altering bytes.
    private let tap: (@Sendable (Frame) -> Frame)?
    private static let allocator = ByteBufferAllocator()

    static let refusalText = "this relay does not pass the host's copy (its operator would start it with tandem serve "
        + "--relay-media): ask the relay's operator, or join with your own copy: tandem join INVITE FILE"

    init(configuration: RelayMediaConfiguration?, loop: any EventLoop, clock: any MonotonicClock,
         tap: (@Sendable (Frame) -> Frame)? = nil) {
        self.loop = loop
        self.clock = clock
        self.tap = tap
        passage = configuration.map { MediaPassage(limits: $0.limits, now: clock.now) }
    }

    /// A member's request for a range of the host's item.
    func request(_ frame: Frame, from member: ParticipantID, in session: HostedSession) throws {
        var request = try MediaFrames.parseRequest(frame)
        let key = MediaPassage.Key(member: member, id: request.id)
        guard passage != nil else { return refuse(key, .relayRefuses, Self.refusalText, in: session) }
        guard session.hostConnection != nil else {
            return refuse(key, .hostAbsent, "the host is not connected to the session; try again when it is back", in: session)
        }
        request.peer = member.rawValue
        held[key] = try MediaFrames.encode(request, allocator: Self.allocator)
        carryOut(passage!.request(key, length: request.length, now: clock.now), in: session)
    }

    /// The host's answer to a request: passed on to its requester while that request is open, else dropped.
    func chunk(_ frame: Frame, from member: ParticipantID, in session: HostedSession) throws {
        guard passage != nil, session.hostID == member else { return }
        let header = try MediaFrames.chunkHeader(frame)
        let key = MediaPassage.Key(member: ParticipantID(header.peer), id: header.id)
        guard passage!.answered(key), let requester = session.connections[key.member] else { return }
        requester.send(tap?(frame) ?? frame)
    }

    /// A member left: its open requests are forgotten.
    func forget(_ member: ParticipantID) {
        passage?.forget(member)
        held = held.filter { $0.key.member != member }
    }

    private func carryOut(_ actions: [MediaPassage.Action], in session: HostedSession) {
        for action in actions {
            switch action {
            case .forward(let key):
                guard let frame = held.removeValue(forKey: key) else { continue }
                if let host = session.hostConnection {
                    host.send(frame)
                } else {
                    _ = passage?.answered(key)
                    refuse(key, .hostAbsent, "the host is not connected to the session; try again when it is back", in: session)
                }
            case .refuse(let key, let refusal):
                held[key] = nil
                switch refusal {
                case .busy:
                    refuse(key, .busy, "too many requests open for the host's copy; ask again when one is answered", in: session)
                case .badRequest:
                    refuse(key, .badRequest, "a request for 1 to \(passage?.limits.maxRequestBytes ?? 0) bytes, by a number not open", in: session)
                case .timedOut:
                    refuse(key, .timedOut, "the host did not answer in time", in: session)
                }
            case .wakeUp(let at):
                schedule(at: at, in: session)
            }
        }
    }

    private func schedule(at: LocalInstant, in session: HostedSession) {
        if let timerAt, timerAt <= at, timer != nil { return }
        timer?.cancel()
        timerAt = at
        let delay = max(TimeSpan.zero, at - clock.now)
        timer = loop.scheduleTask(in: TimeAmount(delay)) { [weak self, weak session] in
            guard let self, let session else { return }
            self.timer = nil
            self.timerAt = nil
            guard let passage = self.passage else { return }
            var advanced = passage
            let actions = advanced.advance(now: self.clock.now)
            self.passage = advanced
            self.carryOut(actions, in: session)
        }
    }

    private func refuse(_ key: MediaPassage.Key, _ status: MediaFrames.Status, _ reason: String, in session: HostedSession) {
        guard let frame = try? MediaFrames.refusal(id: key.id, status: status, peer: "", reason: reason,
                                                   allocator: Self.allocator) else { return }
        session.connections[key.member]?.send(frame)
    }
}

extension HostedSession {
    /// The session's host, when it has one.
    var hostID: ParticipantID? { authority.participants.first(where: \.isHost)?.participant.id }
    /// The host's connection, while it is connected.
    var hostConnection: ServerConnection? { hostID.flatMap { connections[$0] } }

    /// A media frame of a joined member, on the session's loop.
    func receiveMedia(_ frame: Frame, from member: ParticipantID) {
        loop.preconditionInEventLoop()
        guard !ended else { return }
        do {
            if frame.kind == .mediaRequest {
                try media.request(frame, from: member, in: self)
            } else {
                try media.chunk(frame, from: member, in: self)
            }
        } catch {
            logger.debug("bad media frame", metadata: ["session": "\(id)", "participant": "\(member)", "error": "\(error)"])
        }
    }
}
