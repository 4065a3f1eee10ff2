import Foundation
import Synchronization
import Tandem
import TandemPeer
import Logging
import ServiceLifecycle

/// How a CLI participant talks to its person or script.
///
/// Interactive (stdin is a terminal): keys act at once, one status line redraws in place, notices appear above it.
/// Scripted (stdin is not a terminal): one command per line on stdin; notices as plain lines, or with `--json` one
/// JSON object per event on stdout (schema in the README).
final class PeerConsole: Sendable {
    enum Mode: Sendable, Equatable {
        case interactive
        case scripted(json: Bool)
    }

    /// Why the run ended.
    private enum Ending: Sendable {
        case left
        case endedHere
        case invalidated(InvalidationReason)
    }

    let peer: LocalPeer
    let mode: Mode
    /// Where a joiner saves the host's preview image (nil: not wanted).
    let previewDirectory: URL?
    private let ending = Mutex<Ending?>(nil)
    private let names = Mutex<[ParticipantID: String]>([:])
    /// The queue entry that played when the queue last changed, known once a queue has arrived (in the welcome,
    /// or on taking part): only moves after that are `item` events.
    private let currentEntry = Mutex<(known: Bool, id: String?)>((false, nil))
    /// What the video shows over the picture (see `PeerConsole+Window`).
    let osd = Mutex(OnScreenDisplay())
    /// The chat line being typed in the terminal (after `c`), shown in place of the status line.
    let chatPrompt = Mutex<String?>(nil)
    /// Track choices between participants (see `PeerConsole+Tracks`).
    let trackSharing: TrackSharing
    let trackState = Mutex(TrackSharingState())
    /// Proposals the sharing host is to send: which kinds, to whom.
    let trackRequests: AsyncStream<(Set<TrackProposal.Kind>, Recipients)>.Continuation
    private let trackRequestStream: AsyncStream<(Set<TrackProposal.Kind>, Recipients)>
    /// A joiner's proposals from the others, subscribed before it joins.
    private let proposals: AsyncStream<(TrackProposal, ParticipantID)>?

    /// Make it before the peer joins: a joiner listens for track proposals from then on.
    init(peer: LocalPeer, mode: Mode, previewDirectory: URL? = nil, tracks: TrackSharing = TrackSharing()) {
        self.peer = peer
        self.mode = mode
        self.previewDirectory = previewDirectory
        trackSharing = tracks
        (trackRequestStream, trackRequests) = AsyncStream.makeStream(of: (Set<TrackProposal.Kind>, Recipients).self,
                                                                     bufferingPolicy: .bufferingNewest(16))
        proposals = tracks.share ? nil : peer.trackProposals()
        if tracks.share { trackState.withLock { $0.shared = tracks.chosen } }
        names.withLock { $0[peer.id] = peer.name }
        if let queue = peer.connection.welcome.queue { currentEntry.withLock { $0 = (true, queue.current?.id) } }
        peer.media.onWarning { [weak self] text in self?.warn(text) }
    }

    /// The mode for these options: interactive only on a terminal and without `--json`.
    /// The name `participant` goes by, as the participant list last said.
    func nameOf(_ participant: ParticipantID) -> String? { names.withLock { $0[participant] } }

    static func mode(json: Bool) -> Mode {
        !json && Terminal.stdinIsTerminal ? .interactive : .scripted(json: json)
    }

    // MARK: Output

    /// Writes a human line (not in JSON mode).
    func say(_ text: String) {
        switch mode {
        case .interactive: Terminal.shared.notice(text)
        case .scripted(json: false): printLine(text)
        case .scripted(json: true): break
        }
    }

    /// Writes a JSON event (JSON mode only).
    func emit(_ event: some PeerEvent) {
        guard mode == .scripted(json: true) else { return }
        printLine(event.line())
    }

    /// A warning: a line on stderr for people, a `warning` event in JSON mode.
    func warn(_ text: String) {
        display("⚠ \(text)")
        switch mode {
        case .interactive: Terminal.shared.notice("⚠ \(text)")
        case .scripted(json: false): printError("tandem: warning: \(text)")
        case .scripted(json: true): emit(WarningEvent(text: text))
        }
    }

    // MARK: Running

    /// Runs until the session ends for this participant, with `server` (an embedded one, ended with "the host left"
    /// when the peer stops) in the same `ServiceGroup`, which turns SIGINT and SIGTERM into leaving the session. The
    /// group traps them before the console writes anything (`invite`, then `header`): a person (or a script) may
    /// press Ctrl-C as soon as they see the invite. Returns normally when the person left or ended the session;
    /// throws when the session ended for another reason.
    func run(header: [String], invite: Invite? = nil, server: SessionServer? = nil) async throws(CLIError) {
        // Subscribed before the peer runs, so that its first events are seen.
        let events = peer.coordinator.events
        let connectionEvents = peer.connection.connectionEvents()
        let serverMessages = peer.connection.serverMessages()
        let peerService = PeerService(peer: peer, alongside: {
            if let invite { self.emit(InviteEvent(invite: invite.description)) }
            await self.interact(header: header, events: events, connectionEvents: connectionEvents,
                                serverMessages: serverMessages)
        }, willLeave: { self.ending.withLock { $0 = $0 ?? .left } })
        var services = [ServiceGroupConfiguration.ServiceConfiguration(
            service: peerService, successTerminationBehavior: .gracefullyShutdownGroup)]
        if let server {
            let hostLeft = InvalidationReason(code: .hostLeft, message: "the host left")
            services.insert(.init(service: SessionServerService(server: server, reason: hostLeft)), at: 0)
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                      logger: Logger(label: "tandem.peer")))
        do { try await group.run() } catch { warn("\(error)") }
        if mode == .interactive { Terminal.shared.restore() }
        switch ending.withLock({ $0 }) {
        case .left:
            emit(LeftEvent(reason: "you left the session"))
            return
        case .endedHere:
            emit(LeftEvent(reason: "you ended the session for everyone"))
            return
        case .invalidated(let reason):
            emit(EndedEvent(code: reason.code.rawValue, reason: reason.message))
            if reason.code == .connectionLost {
                throw CLIError(.unreachable, "lost the connection to the session: \(reason.message) — join again with the same invite")
            }
            throw CLIError(ended: reason)
        case nil:
            emit(EndedEvent(code: "connectionLost", reason: "the connection to the session was lost"))
            throw CLIError(.unreachable, "lost the connection to the session — join again with the same invite")
        }
    }

    private func readInput() async {
        switch mode {
        case .interactive:
            var decoder = KeyDecoder()
            for await bytes in Terminal.keyBytes() {
                let commands = decoder.feed(bytes)
                let typing = decoder.chatLine
                chatPrompt.withLock { $0 = typing }
                if let typing { Terminal.shared.status("chat> \(typing)▏  (Enter sends, Esc cancels)") }
                for command in commands {
                    if await handle(command) { return }
                }
            }
        case .scripted:
            for await line in Terminal.lines() {
                do {
                    guard let command = try UserCommand.parse(line: line) else { continue }
                    if await handle(command) { return }
                } catch {
                    warn(error.description)
                }
            }
            // End of input: keep watching until the session ends or a signal arrives.
        }
    }

    /// Carries out one command; true when the participant is done (left or ended the session).
    func handle(_ command: UserCommand) async -> Bool {
        switch command {
        case .leave:
            ending.withLock { $0 = $0 ?? .left }
            await peer.leave()
            return true
        case .end:
            // Only the host may end the session for everyone (the server refuses anyone else).
            guard peer.isHost else {
                warn("only the host can end the session for everyone; leave with q instead")
                return false
            }
            ending.withLock { $0 = $0 ?? .endedHere }
            do {
                try await peer.end()
            } catch {
                warn("could not end the session: \(error)")
                await peer.leave()
            }
            return true
        case .help:
            say(UserCommand.keyHelp)
            return false
        case .queueList:
            let queue = await peer.coordinator.queue
            for line in LocalPeer.queueLines(queue) { say(line) }
            emit(QueueEvent(queue ?? SessionQueue()))
            return false
        case .showStatus:
            showStatusOnVideo()
            return false
        case .openChatPrompt:
            // The terminal's decoder collects the line; from the video window, say where to type.
            if mode != .interactive || chatPrompt.withLock({ $0 }) == nil {
                say("chat: press c in the terminal and type a line, or write 'chat TEXT' on standard input")
            }
            return false
        case .chat(let text):
            if let problem = await peer.sendChat(text) {
                warn(problem)
            } else {
                showChat(text, from: peer.id)
            }
            return false
        default:
            if let problem = await peer.perform(command, feedback: { self.said($0) }) {
                warn(problem)
            } else {
                proposeAfter(command)
            }
            return false
        }
    }

    private func tick() async {
        switch mode {
        case .interactive:
            while !Task.isCancelled {
                if let typing = chatPrompt.withLock({ $0 }) {
                    Terminal.shared.status("chat> \(typing)▏  (Enter sends, Esc cancels)")
                } else {
                    Terminal.shared.status(await peer.status().line(names: names.withLock { $0 }))
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        case .scripted(json: true):
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { return }
                emit(PositionEvent(await peer.status()))
            }
        case .scripted(json: false):
            return
        }
    }

    /// Says the header, then shows events, reads commands and redraws the status until cancelled.
    private func interact(header: [String], events: AsyncStream<CoordinatorEvent>,
                          connectionEvents: AsyncStream<ConnectionEvent>, serverMessages: AsyncStream<ServerMessage>) async {
        for line in header { say(line) }
        let welcome = peer.connection.welcome
        emit(JoinedEvent(session: welcome.sessionID, participant: .init(id: peer.id.rawValue, name: peer.name),
                         activity: peer.session.activity.map(JoinedEvent.ActivityInfo.init)))
        if mode == .interactive {
            Terminal.shared.enterRawMode()
            say(UserCommand.keyHelp)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await event in events { await self.show(event) } }
            // People read the link's notices (`reconnecting…`, `reconnected after 10.2 s`) with the others.
            group.addTask { for await event in connectionEvents { self.show(event) } }
            // What the authority refused (the last item of the queue, a queue change that is the host's).
            group.addTask {
                for await message in serverMessages {
                    if case .refused(let reason) = message { self.warn(reason) }
                }
            }
            group.addTask { await self.readInput() }
            group.addTask { await self.tick() }
            if let directory = self.previewDirectory {
                group.addTask { await self.receivePreview(into: directory) }
            }
            // The video window: its keys act like the terminal's, and the overlay shows what is said.
            group.addTask { await self.readWindowKeys() }
            group.addTask { for await (text, from) in self.peer.chatLines { self.showChat(text, from: from) } }
            group.addTask { await self.drawOverlay() }
            if self.trackSharing.share {
                group.addTask { await self.sendTrackProposals(self.trackRequestStream) }
            }
            if let proposals = self.proposals {
                let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                group.addTask { await self.receiveTrackProposals(proposals, wake: wake) }
                group.addTask { await self.applyTrackProposals(wakes) }
            }
        }
    }

    /// Saves the host's preview image when it arrives, and says where.
    private func receivePreview(into directory: URL) async {
        let received = await PreviewImage.receive(from: peer.journal, me: peer.id, directory: directory,
                                                  session: peer.connection.welcome.sessionID) { self.warn($0) }
        guard let received else { return }
        let (path, image) = (received.path, received.image)
        say("Preview image: \(path)")
        emit(PreviewEvent(path: path, format: image.format, bytes: image.bytes.count))
    }

    // MARK: Events

    private func show(_ event: ConnectionEvent) {
        switch event {
        case .reconnecting(let reason):
            emit(ReconnectingEvent(reason: reason))
        case .reconnected(let after):
            emit(ReconnectedEvent(afterMs: EventUnits.milliseconds(after.nanoseconds), participant: peer.id.rawValue))
        }
    }

    private func show(_ event: CoordinatorEvent) async {
        switch event {
        case .timelineChanged(let timeline):
            emit(TimelineEvent(timeline))
        case .notice(let notice):
            say(notice.kind == .differentMedia ? "⚠ \(notice.text)" : notice.text)
            display(notice.kind == .differentMedia ? "⚠ \(notice.text)" : notice.text)
            emit(NoticeEvent(notice))
        case .otherParticipantsChanged(let others):
            names.withLock { names in for state in others { names[state.participant.id] = state.participant.name } }
            emit(ParticipantsEvent(others))
            proposeToNewcomers(others)
        case .waiting:
            break  // the timeline event and the authority's notice say it
        case .activityChanged(let envelope):
            emit(ActivityEvent(envelope))
            if let title = envelope.metadata.title { peer.player.setWindowTitle(title) }
        case .queueChanged(let queue):
            emit(QueueEvent(queue))
            let current = queue.current?.id
            let moved = currentEntry.withLock { last in
                defer { last = (true, current) }
                return last.known && last.id != current
            }
            if moved, let item = ItemEvent(queue) {
                emit(item)
            }
        case .engineFailed(let error):
            warn("playback: \(error.description)")
        case .requestRejected(_, let reason):
            warn(reason)
        case .localSuspensionsChanged(let reasons):
            emit(SuspensionEvent(reasons: reasons.map(\.rawValue)))
        case .resynchronising(let drift):
            say(String(format: "resynchronising: this player was %.1f ms off the group", drift.milliseconds))
            emit(ResyncEvent(driftMs: EventUnits.milliseconds(drift.nanoseconds)))
        case .invalidated(let reason):
            ending.withLock { ending in
                if ending == nil { ending = .invalidated(reason) }
            }
            if reason.code != .left { say("session over: \(reason.message)") }
        }
    }
}
