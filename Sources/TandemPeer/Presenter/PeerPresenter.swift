import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Tandem

/// What a participant's person sees and does, whatever shows it: the session's events narrated (lines, JSON
/// events, the video's overlay), commands carried out, the preview image saved. The command line puts a terminal
/// or a script around it (`PeerOutput`); an app could put a window.
package final class PeerPresenter: Sendable {
    package let peer: LocalPeer
    package let output: any PeerOutput
    /// Where a joiner saves the host's preview image (nil: not wanted).
    package let previewDirectory: URL?
    private let ending = Mutex<PeerEnding?>(nil)
    private let names = Mutex<[ParticipantID: String]>([:])
    /// The queue entry that played when the queue last changed, known once a queue has arrived (in the welcome,
    /// or on taking part): only moves after that are `item` events.
    private let currentEntry = Mutex<(known: Bool, id: String?)>((false, nil))
    /// What the video shows over the picture (see `PeerPresenter+Window`).
    let osd = Mutex(OnScreenDisplay())
    /// Track choices between participants (see `PeerPresenter+Tracks`).
    let trackSharing: TrackSharing
    let trackState = Mutex(TrackSharingState())
    /// Proposals the sharing host is to send: which kinds, to whom.
    let trackRequests: AsyncStream<(Set<TrackProposal.Kind>, Recipients)>.Continuation
    private let trackRequestStream: AsyncStream<(Set<TrackProposal.Kind>, Recipients)>
    /// A joiner's track proposals from the others (`LocalPeer.trackProposals()`, subscribed before it joined).
    private let proposals: AsyncStream<(TrackProposal, ParticipantID)>?

    package init(peer: LocalPeer, output: any PeerOutput, previewDirectory: URL? = nil,
                 tracks: TrackSharing = TrackSharing(), proposals: AsyncStream<(TrackProposal, ParticipantID)>? = nil) {
        self.peer = peer
        self.output = output
        self.previewDirectory = previewDirectory
        trackSharing = tracks
        (trackRequestStream, trackRequests) = AsyncStream.makeStream(of: (Set<TrackProposal.Kind>, Recipients).self,
                                                                     bufferingPolicy: .bufferingNewest(16))
        self.proposals = tracks.share ? nil : proposals
        if tracks.share { trackState.withLock { $0.shared = tracks.chosen } }
        names.withLock { $0[peer.id] = peer.name }
        if let queue = peer.connection.welcome.queue { currentEntry.withLock { $0 = (true, queue.current?.id) } }
        peer.media.onWarning { [weak self] text in self?.warn(text) }
        // What the player changed in the sinks it was given (a sink made to wait on the clock), said once.
        for notice in peer.player.sinkNotices { warn(notice) }
    }

    /// The names of everyone, as the participant list last said.
    package var knownNames: [ParticipantID: String] { names.withLock { $0 } }

    /// The name `participant` goes by, as the participant list last said.
    package func nameOf(_ participant: ParticipantID) -> String? { names.withLock { $0[participant] } }

    package func say(_ text: String) { output.say(text) }
    package func emit(_ event: some PeerEvent) { output.emit(event) }

    /// A warning, on the video too.
    package func warn(_ text: String) {
        display("⚠ \(text)")
        output.warn(text)
    }

    // MARK: Running

    /// Runs until the session ends for this participant, with `server` (an embedded one, ended with "the host left"
    /// when the peer stops) in the same `ServiceGroup`, which turns SIGINT and SIGTERM into leaving the session. The
    /// group traps them before anything is said (`invite`, then `header`): a person (or a script) may press Ctrl-C
    /// as soon as they see the invite (and, with `syncplay`, how Syncplay users join). `start` runs after the header (a
    /// terminal enters raw mode there); `beside` run until the peer stops (input, the status line). Returns why the run
    /// ended.
    package func run(header: [String], invite: Invite? = nil, web: Bool = false, syncplay: SyncplayJoinEvent? = nil,
                     reachability: Reachability? = nil, server: SessionServer? = nil,
                     start: @escaping @Sendable () -> Void = {},
                     beside: [@Sendable () async -> Void] = []) async -> PeerEnding {
        // Subscribed before the peer runs, so that its first events are seen.
        let events = peer.coordinator.events
        let connectionEvents = peer.connection.connectionEvents()
        let serverMessages = peer.connection.serverMessages()
        let peerService = PeerService(peer: peer, alongside: {
            if let invite {
                self.emit(InviteEvent(invite: invite.description))
                if web { self.emit(BrowserEvent(invite: invite)) }
            }
            if let reachability { self.emit(ReachabilityEvent(reachability)) }
            if let syncplay { self.emit(syncplay) }
            await self.interact(header: header, events: events, connectionEvents: connectionEvents,
                                serverMessages: serverMessages, start: start, beside: beside)
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
        let ending = ending.withLock { $0 } ?? .lost
        switch ending {
        case .left: emit(LeftEvent(reason: "you left the session"))
        case .endedHere: emit(LeftEvent(reason: "you ended the session for everyone"))
        case .invalidated(let reason): emit(EndedEvent(code: reason.code.rawValue, reason: reason.message))
        case .lost: emit(EndedEvent(code: "connectionLost", reason: "the connection to the session was lost"))
        }
        return ending
    }

    /// Carries out one command; true when the participant is done (left or ended the session).
    package func handle(_ command: UserCommand) async -> Bool {
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
            // Keys on a terminal (and in the video window); the line commands when reading standard input.
            say(output.takesKeys ? UserCommand.keyHelp : UserCommand.lineHelp)
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
            // The terminal collects the line; from the video window (or a script), say where to type.
            if !output.isTypingChat {
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

    /// Says the header, then shows events and runs `beside` until cancelled.
    private func interact(header: [String], events: AsyncStream<CoordinatorEvent>,
                          connectionEvents: AsyncStream<ConnectionEvent>, serverMessages: AsyncStream<ServerMessage>,
                          start: @escaping @Sendable () -> Void, beside: [@Sendable () async -> Void]) async {
        for line in header { say(line) }
        let welcome = peer.connection.welcome
        emit(JoinedEvent(session: welcome.sessionID, participant: .init(id: peer.id.rawValue, name: peer.name),
                         activity: peer.session.activity.map(JoinedEvent.ActivityInfo.init)))
        start()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await event in events { await self.show(event) } }
            // People read the link's notices (`reconnecting…`, `reconnected after 10.2 s`) with the others.
            group.addTask { for await event in connectionEvents { self.show(event) } }
            // What the authority refused (the last item of the queue, a queue change that is the host's).
            group.addTask {
                for await message in serverMessages {
                    if case .refused(let reason, _, _) = message { self.warn(reason) }
                }
            }
            for task in beside { group.addTask { await task() } }
            if let directory = self.previewDirectory {
                group.addTask { await self.receivePreview(into: directory) }
            }
            // The video window: its keys act like the terminal's, and the overlay shows what is said.
            group.addTask { await self.readWindowKeys() }
            group.addTask { for await (text, from) in self.peer.chatLines { self.showChat(text, from: from) } }
            group.addTask { await self.drawOverlay() }
            if self.trackSharing.share {
                group.addTask { await self.sendTrackProposals(self.trackRequestStream) }
                group.addTask { await self.answerTrackRequests() }
            }
            if let proposals = self.proposals {
                let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                group.addTask { await self.receiveTrackProposals(proposals, wake: wake) }
                group.addTask { await self.applyTrackProposals(wakes) }
                group.addTask { await self.requestTrackProposals() }
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
            let warning = notice.kind == .differentMedia || notice.kind == .appDataAltered
            let text = warning ? "⚠ \(notice.text)" : notice.text
            say(text)
            display(text)
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
