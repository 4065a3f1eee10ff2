import Foundation
import Synchronization
import Tandem
import UnixSignals

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
    private let ending = Mutex<Ending?>(nil)
    private let names = Mutex<[ParticipantID: String]>([:])
    private let signals: UnixSignalsSequence

    /// Traps SIGINT and SIGTERM at once, before the console writes anything: a person (or a script) may press
    /// Ctrl-C as soon as they see the invite, and the default action would kill the process without leaving the
    /// session or restoring the terminal.
    init(peer: LocalPeer, mode: Mode) async {
        self.peer = peer
        self.mode = mode
        self.signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        names.withLock { $0[peer.id] = peer.name }
    }

    /// The mode for these options: interactive only on a terminal and without `--json`.
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
    func emit(_ event: String, _ fields: [String: JSONValue]) {
        guard mode == .scripted(json: true) else { return }
        var object = fields
        object["event"] = .string(event)
        object["time"] = .double((Date().timeIntervalSince1970 * 1000).rounded() / 1000)
        printLine(JSONValue.object(object).line)
    }

    /// A warning: a line on stderr for people, a `warning` event in JSON mode.
    func warn(_ text: String) {
        switch mode {
        case .interactive: Terminal.shared.notice("⚠ \(text)")
        case .scripted(json: false): printError("tandem: warning: \(text)")
        case .scripted(json: true): emit("warning", ["text": .string(text)])
        }
    }

    // MARK: Running

    /// Runs until the session ends for this participant. Returns normally when the person left or ended the
    /// session; throws when the session ended for another reason.
    func run(header: [String]) async throws(CLIError) {
        for line in header { say(line) }
        let welcome = peer.connection.welcome
        let activity = peer.session.activity
        emit("joined", [
            "session": .string(welcome.sessionID),
            "participant": ["id": .string(peer.id.rawValue), "name": .string(peer.name)],
            "activity": activityJSON(activity),
        ])
        if mode == .interactive {
            Terminal.shared.enterRawMode()
            say(UserCommand.keyHelp)
        }
        let events = peer.coordinator.events
        let linkEvents = peer.connection.linkEvents()
        let signals = self.signals
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await event in events { await self.show(event) } }
            // People read the link's notices (`reconnecting…`, `reconnected after 10.2 s`) with the others.
            group.addTask { for await event in linkEvents { self.show(event) } }
            group.addTask { await self.readInput() }
            group.addTask { await self.tick() }
            group.addTask {
                for await _ in signals {
                    self.ending.withLock { $0 = $0 ?? .left }
                    await self.peer.leave()
                    return
                }
            }
            await peer.run()
            group.cancelAll()
        }
        if mode == .interactive { Terminal.shared.restore() }
        switch ending.withLock({ $0 }) {
        case .left:
            emit("left", ["reason": "you left the session"])
            return
        case .endedHere:
            emit("left", ["reason": "you ended the session for everyone"])
            return
        case .invalidated(let reason):
            emit("ended", ["code": .string(reason.code.rawValue), "reason": .string(reason.message)])
            if reason.code == .connectionLost {
                throw CLIError(.unreachable, "lost the connection to the session: \(reason.message) — join again with the same invite")
            }
            throw CLIError(ended: reason)
        case nil:
            emit("ended", ["code": "connectionLost", "reason": "the connection to the session was lost"])
            throw CLIError(.unreachable, "lost the connection to the session — join again with the same invite")
        }
    }

    private func readInput() async {
        switch mode {
        case .interactive:
            var decoder = KeyDecoder()
            for await bytes in Terminal.keyBytes() {
                for command in decoder.feed(bytes) {
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
    private func handle(_ command: UserCommand) async -> Bool {
        switch command {
        case .leave:
            ending.withLock { $0 = $0 ?? .left }
            await peer.leave()
            return true
        case .end:
            // Only the host may end the session for everyone (the server refuses anyone else).
            let welcome = peer.connection.welcome
            guard welcome.participants.contains(where: { $0.participant.id == peer.id && $0.isHost }) else {
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
        default:
            if let problem = await peer.perform(command) { warn(problem) }
            return false
        }
    }

    private func tick() async {
        switch mode {
        case .interactive:
            while !Task.isCancelled {
                Terminal.shared.status(statusLine(await peer.status()))
                try? await Task.sleep(for: .milliseconds(250))
            }
        case .scripted(json: true):
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { return }
                let status = await peer.status()
                emit("position", [
                    "state": .string(stateName(status.timeline)),
                    "position": .seconds(status.position),
                    "expected": .seconds(status.expected),
                    "positionErrorMs": .milliseconds(status.positionError),
                    "rate": status.timeline.map { .double($0.rate) } ?? .null,
                    "generation": status.timeline.map { .int(Int64($0.generation)) } ?? .null,
                    "clockOffsetMs": .milliseconds(status.clockOffset),
                    "errorBoundMs": .milliseconds(status.errorBound),
                    "roundTripMs": .milliseconds(status.roundTrip),
                ])
            }
        case .scripted(json: false):
            return
        }
    }

    // MARK: Events

    private func show(_ event: LinkEvent) {
        switch event {
        case .reconnecting(let reason):
            emit("reconnecting", ["reason": .string(reason)])
        case .reconnected(let after):
            emit("reconnected", ["afterMs": .milliseconds(after), "participant": .string(peer.id.rawValue)])
        }
    }

    private func show(_ event: CoordinatorEvent) async {
        switch event {
        case .timelineChanged(let timeline):
            emit("timeline", timelineJSON(timeline))
        case .notice(let notice):
            say(notice.kind == .differentMedia ? "⚠ \(notice.text)" : notice.text)
            emit("notice", ["kind": .string(notice.kind.rawValue), "participant": .optional(notice.participant?.rawValue),
                            "text": .string(notice.text)])
        case .otherParticipantsChanged(let others):
            names.withLock { names in for state in others { names[state.participant.id] = state.participant.name } }
            emit("participants", ["participants": .array(others.map(participantJSON))])
        case .waiting:
            break  // the timeline event and the authority's notice say it
        case .activityChanged(let envelope):
            emit("activity", ["title": .optional(envelope.metadata.title), "itemID": .string(envelope.itemID)])
        case .engineFailed(let error):
            warn("playback: \(error.description)")
        case .requestRejected(_, let reason):
            warn(reason)
        case .localSuspensionsChanged(let reasons):
            emit("suspension", ["reasons": .array(reasons.map { .string($0.rawValue) })])
        case .resynchronising(let drift):
            say(String(format: "resynchronising: this player was %.1f ms off the group", Double(drift) / 1e6))
            emit("resync", ["driftMs": .milliseconds(drift)])
        case .invalidated(let reason):
            ending.withLock { ending in
                if ending == nil { ending = .invalidated(reason) }
            }
            if reason.code != .left { say("session over: \(reason.message)") }
        }
    }

    // MARK: Formatting

    private func stateName(_ timeline: Timeline?) -> String {
        switch timeline?.status {
        case .playing: return "playing"
        case .paused: return "paused"
        case .waiting: return "waiting"
        case nil: return "connecting"
        }
    }

    private func timelineJSON(_ timeline: Timeline) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "generation": .int(Int64(timeline.generation)),
            "state": .string(stateName(timeline)),
            "rate": .double(timeline.rate),
            "anchorItemTime": .seconds(timeline.anchorItemTime),
            "anchorSessionTime": .int(timeline.anchorSessionTime),
            "originator": .optional(timeline.originator?.rawValue),
        ]
        if case .waiting(let who) = timeline.status {
            fields["waitingFor"] = .object(Dictionary(uniqueKeysWithValues: who.map { id, reasons in
                (id.rawValue, JSONValue.array(reasons.map { .string($0.rawValue) }))
            }))
        }
        return fields
    }

    private func participantJSON(_ state: ParticipantState) -> JSONValue {
        let readiness: JSONValue
        switch state.readiness {
        case .loading(let progress): readiness = ["state": "loading", "progress": progress.map { .double($0) } ?? .null]
        case .ready(let info): readiness = ["state": "ready", "duration": .seconds(info.duration)]
        case .failed(let why): readiness = ["state": "failed", "reason": .string(why)]
        case .unknown: readiness = ["state": "unknown"]
        }
        return [
            "id": .string(state.participant.id.rawValue), "name": .string(state.participant.name),
            "host": .bool(state.isHost), "readiness": readiness,
            "suspensions": .array(state.suspensions.map { .string($0.rawValue) }),
            "oneWayDelayMs": .milliseconds(state.oneWayDelay),
        ]
    }

    private func activityJSON(_ activity: MediaActivity?) -> JSONValue {
        guard let activity else { return .null }
        return [
            "title": .optional(activity.metadata.title), "subtitle": .optional(activity.metadata.subtitle),
            "type": .string(activity.metadata.type.rawValue),
            "fallbackURL": .optional(activity.metadata.fallbackURL?.absoluteString),
            "fileName": .string(activity.fileName), "duration": .seconds(activity.duration),
        ]
    }

    /// The interactive status line.
    func statusLine(_ status: PeerStatus) -> String {
        var parts: [String] = []
        let symbol: String
        switch status.timeline?.status {
        case .playing: symbol = "▶"
        case .paused: symbol = "⏸"
        case .waiting: symbol = "⏳"
        case nil: symbol = "…"
        }
        let position = status.position ?? status.expected ?? 0
        let duration = status.duration.map(formatClock) ?? "?"
        parts.append("\(symbol) \(formatClock(position))/\(duration) \(String(format: "%g", status.timeline?.rate ?? 1))×")
        let everyone = status.others.map { state -> String in
            let name = state.participant.name
            if !state.suspensions.isEmpty {
                return "\(name) ⏳ \(state.suspensions.map(\.description).joined(separator: ", "))"
            }
            switch state.readiness {
            case .loading(let progress):
                return "\(name) ⏳ loading" + (progress.map { String(format: " %.0f %%", $0 * 100) } ?? "")
            case .ready: return "\(name) ✓"
            case .failed: return "\(name) ✗"
            case .unknown: return "\(name) …"
            }
        }
        if !everyone.isEmpty { parts.append(everyone.joined(separator: " ")) }
        if case .waiting(let who) = status.timeline?.status, !who.isEmpty {
            let table = names.withLock { $0 }
            let list = who.keys.sorted().map { id in
                "\(table[id] ?? id.rawValue) (\(who[id]!.map(\.description).joined(separator: ", ")))"
            }
            parts.append("waiting for " + list.joined(separator: ", "))
        }
        if status.reconnecting {
            parts.append("reconnecting…")
        } else if let bound = status.errorBound, let offset = status.clockOffset {
            var clock = String(format: "clock ±%.2f ms, offset %+.1f ms", Double(bound) / 1e6, Double(offset) / 1e6)
            if let rtt = status.roundTrip { clock += String(format: ", rtt %.1f ms", Double(rtt) / 1e6) }
            parts.append(clock)
        } else {
            parts.append("clock syncing…")
        }
        return parts.joined(separator: " │ ")
    }
}
