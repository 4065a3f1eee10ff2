import Foundation
import Synchronization
import Tandem
import TandemSyncplay

/// One Syncplay client as a participant of the session, under its Syncplay name.
///
/// Client → session: its pause, play and seek (Syncplay's state changes) become timeline requests; the file it
/// announces makes it ready (with that file's duration); its Syncplay readiness is a suspension "not ready in
/// Syncplay" that others see and that does not hold the group; its chat lines are the session's chat. Session →
/// client: every settled timeline change is a forced Syncplay state (position, paused, `doSeek` for a jump, set by
/// whoever asked), and the heartbeat carries where the session's timeline is now; Syncplay's client compensates for
/// latency and corrects drift by its own thresholds. It acks every waiting timeline at once (it has no preroll of
/// its own to wait for), so the group never waits on it.
///
/// Without chat (`carriesChat` false: a relay's connection, made with the handshake key, has no app-data key) it has
/// no messenger at all: the Syncplay client's hello said so, and the session's sealed lines are not read.
final class SyncplayGuestLink: Sendable {
    static let notReady = SuspensionReason.custom("not ready in Syncplay")

    private let guest: SyncplayGuest
    private let link: TandemClientConnection
    private let session: GroupSession<MediaActivity>
    private let chat: GroupSessionMessenger?
    private let messages: AsyncStream<ServerMessage>
    private let clock = SystemMonotonicClock()
    /// The latest timeline that was playing or paused (not waiting): what the client follows.
    private let settled: SettledTimeline
    private let names: Locked<[ParticipantID: String]>
    private let readiness = Mutex<[ParticipantID: Bool]>([:])
    private let nextRequest = Mutex<UInt64>(1)
    private let notReadySince = Mutex<Bool>(false)

    /// Joins `guest` to the session through the connection `connect` makes with the options given, and follows
    /// both until one ends.
    static func run(_ guest: SyncplayGuest, carriesChat: Bool, connect: SyncplayGuests.Connect) async {
        var options = TandemClient.Options()
        options.prerollEstimate = .zero
        options.datagrams = false
        options.via = "syncplay"
        let link: TandemClientConnection
        do { link = try await connect(guest, options) } catch {
            guest.close("cannot join the Tandem session: \(error)")
            return
        }
        await SyncplayGuestLink(guest: guest, link: link, carriesChat: carriesChat).run()
    }

    private init(guest: SyncplayGuest, link: TandemClientConnection, carriesChat: Bool) {
        self.guest = guest
        self.link = link
        self.messages = link.serverMessages()
        let settled = SettledTimeline(link.welcome.timeline)
        self.settled = settled
        self.names = Locked([:])
        self.session = GroupSession(link: link)
        self.chat = carriesChat ? GroupSessionMessenger(session: session) : nil
        let clock = clock
        guest.followRoom { [names] in
            let timeline = settled.current.value
            let now = SyncplayBridge.playstate(timeline, mapping: link.clockMapping(), now: clock.now)
            let setBy = timeline?.originator.flatMap { $0 == link.localParticipantID ? guest.username : names.value[$0] }
            return SyncplayRoomPlaystate(position: now.position, paused: now.paused, setBy: setBy)
        }
        session.join()
    }

    private func run() async {
        var parts: [@Sendable () async -> Void] = [{ await self.followSession() }, { await self.followGuest() }]
        if let chat {
            parts.append {
                for await (line, context) in chat.messages(of: ChatLine.self) where context.source != self.link.localParticipantID {
                    guard let text = Chat.clean(line.text) else { continue }
                    self.guest.chat(from: self.names.value[context.source] ?? "?", text)
                }
            }
        }
        await SyncplayBridge.untilOneEnds(session: session, parts)
        guest.close(guest.endReason ?? "the Tandem session ended")
        await link.close()
    }

    // MARK: Session → Syncplay client

    private func followSession() async {
        for await message in messages {
            switch message {
            case .timeline(let new):
                guard let change = await settled.take(new, link: link), change.isNews else { continue }
                var now = SyncplayBridge.playstate(new, mapping: link.clockMapping(), now: clock.now)
                if !change.seeks, !new.isPlaying { now.position = new.anchorItemTime.seconds }
                guest.roomChanged(SyncplayRoomPlaystate(position: now.position, paused: now.paused,
                                                        setBy: change.origin.flatMap(name(of:))), doSeek: change.seeks)
            case .participants(let states):
                participants(states)
            case .invalidated:
                return
            default:
                continue
            }
        }
    }

    /// Who a participant is, by name (this client's own participant by its Syncplay name).
    private func name(of id: ParticipantID) -> String? {
        id == link.localParticipantID ? guest.username : names.value[id]
    }

    private func participants(_ states: [ParticipantState]) {
        let others = states.filter { $0.participant.id != link.localParticipantID && $0.hasJoined }
        let before = names.withLock { names in
            defer { names = Dictionary(others.map { ($0.participant.id, $0.participant.name) }) { a, _ in a } }
            return names
        }
        for (id, name) in before where !others.contains(where: { $0.participant.id == id }) {
            guest.userLeft(name)
            _ = readiness.withLock { $0.removeValue(forKey: id) }
        }
        for state in others {
            if before[state.participant.id] == nil { guest.userJoined(state.participant.name) }
            let ready: Bool
            if case .ready = state.readiness { ready = !state.suspensions.contains(Self.notReady) } else { ready = false }
            let changed = readiness.withLock { known in defer { known[state.participant.id] = ready }; return known[state.participant.id] != ready }
            if changed { guest.userReady(state.participant.name, isReady: ready) }
        }
    }

    // MARK: Syncplay client → session

    private func followGuest() async {
        for await event in guest.events {
            switch event {
            case .changed(let paused, let position, let seek):
                await request(paused: paused, position: position, seek: seek)
            case .file(let file):
                let info = MediaInfo(duration: file.duration > 0 ? .seconds(min(file.duration, SyncplayServerState.maxPosition)) : nil, isSeekable: true,
                                     hasVideo: true, hasAudio: true, contentID: nil, title: file.name)
                try? await link.send(.readiness(.ready(info)))
            case .ready(let isReady):
                let was = notReadySince.withLock { n in defer { n = !isReady }; return n }
                if !isReady, !was {
                    try? await link.send(.suspension(.begin(id: 1, reason: Self.notReady)))
                } else if isReady, was {
                    try? await link.send(.suspension(.end(id: 1, proposedItemTime: nil)))
                }
            case .chat(let text):
                guard let chat, let text = Chat.clean(text) else { continue }
                try? await chat.send(ChatLine(text: text))
            case .hello:
                continue
            }
        }
    }

    private func request(paused: Bool, position: Double, seek: Bool) async {
        guard let current = settled.current.value, let mapping = link.clockMapping() else { return }
        let now = mapping.sessionTime(atLocal: clock.now)
        let here = current.expectedItemTime(atSessionTime: now).seconds
        let at = ItemTime.seconds(max(0, position))
        let command: TimelineRequest.Command
        if seek {
            command = .seek(itemTime: at, play: !paused)
        } else if paused {
            command = .pause(itemTime: at)
        } else {
            command = abs(here - position) < 1 ? .play : .seek(itemTime: at, play: true)
        }
        let id = nextRequest.withLock { n in defer { n += 1 }; return n }
        try? await link.send(.timelineRequest(TimelineRequest(requestID: id, command: command,
                                                              basedOnGeneration: current.generation,
                                                              requestedAtSessionTime: now)))
    }
}
