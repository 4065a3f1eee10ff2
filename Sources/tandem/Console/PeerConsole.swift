import Foundation
import Synchronization
import Tandem
import TandemPeer

/// How a CLI participant talks to its person or script; what to say comes from `PeerPresenter`.
///
/// Interactive (stdin is a terminal): keys act at once, one status line redraws in place, notices appear above it.
/// Scripted (stdin is not a terminal): one command per line on stdin; notices as plain lines, or with `--json` one
/// JSON object per event on stdout (schema in docs/SCRIPTING.md).
final class PeerConsole: PeerOutput {
    enum Mode: Sendable, Equatable {
        case interactive
        case scripted(json: Bool)
    }

    /// Keys on a terminal; lines otherwise.
    var takesKeys: Bool { mode == .interactive }

    let mode: Mode
    /// The chat line being typed in the terminal (after `c`), shown in place of the status line.
    private let chatPrompt = Mutex<String?>(nil)

    init(mode: Mode) {
        self.mode = mode
    }

    /// The mode for these options: interactive only on a terminal and without `--json`.
    static func mode(json: Bool) -> Mode {
        !json && Terminal.stdinIsTerminal ? .interactive : .scripted(json: json)
    }

    // MARK: Output

    func say(_ text: String) {
        switch mode {
        case .interactive: Terminal.shared.notice(text)
        case .scripted(json: false): printLine(text)
        case .scripted(json: true): break
        }
    }

    func emit(_ event: some PeerEvent) {
        guard mode == .scripted(json: true) else { return }
        printLine(event.line())
    }

    func warn(_ text: String) {
        switch mode {
        case .interactive: Terminal.shared.notice("⚠ \(text)")
        case .scripted(json: false): printError("tandem: warning: \(text)")
        case .scripted(json: true): emit(WarningEvent(text: text))
        }
    }

    var isTypingChat: Bool { mode == .interactive && chatPrompt.withLock({ $0 }) != nil }

    // MARK: Running

    /// Runs `peer` with this console until the session ends for it (see `PeerPresenter.run`); a joiner's
    /// `proposals` (the host's track choices) are subscribed before it joins. Returns normally
    /// when the person left or ended the session; throws when the session ended for another reason.
    func run(_ peer: LocalPeer, previewDirectory: URL? = nil, header: [String], invite: Invite? = nil, web: Bool = false,
             syncplay: SyncplayJoinEvent? = nil, reachability: Reachability? = nil, server: SessionServer? = nil, warnings: [String] = [],
             tracks: TrackSharing = TrackSharing(), proposals: AsyncStream<(TrackProposal, ParticipantID)>? = nil) async throws(PeerFailure) {
        let presenter = PeerPresenter(peer: peer, output: self, previewDirectory: previewDirectory, tracks: tracks,
                                      proposals: proposals)
        for warning in warnings { presenter.warn(warning) }
        let ending = await presenter.run(header: header, invite: invite, web: web, syncplay: syncplay, reachability: reachability, server: server, start: {
            if self.mode == .interactive {
                Terminal.shared.enterRawMode()
                self.say(UserCommand.keyHelp)
            }
        }, beside: [{ await self.readInput(presenter) }, { await self.tick(presenter) }])
        if mode == .interactive { Terminal.shared.restore() }
        switch ending {
        case .left, .endedHere:
            return
        case .invalidated(let reason):
            if reason.code == .connectionLost {
                throw PeerFailure(.unreachable, "lost the connection to the session: \(reason.message) — join again with the same invite")
            }
            throw PeerFailure(ended: reason)
        case .lost:
            throw PeerFailure(.unreachable, "lost the connection to the session — join again with the same invite")
        }
    }

    private func readInput(_ presenter: PeerPresenter) async {
        switch mode {
        case .interactive:
            var decoder = KeyDecoder()
            for await bytes in Terminal.keyBytes() {
                let commands = decoder.feed(bytes)
                let typing = decoder.chatLine
                chatPrompt.withLock { $0 = typing }
                if let typing { Terminal.shared.status("chat> \(typing)▏  (Enter sends, Esc cancels)") }
                for command in commands {
                    if await presenter.handle(command) { return }
                }
            }
        case .scripted:
            for await line in Terminal.lines() {
                do {
                    guard let command = try UserCommand.parse(line: line) else { continue }
                    if await presenter.handle(command) { return }
                } catch {
                    presenter.warn(error.description)
                }
            }
            // End of input: keep watching until the session ends or a signal arrives.
        }
    }

    private func tick(_ presenter: PeerPresenter) async {
        switch mode {
        case .interactive:
            while !Task.isCancelled {
                if let typing = chatPrompt.withLock({ $0 }) {
                    Terminal.shared.status("chat> \(typing)▏  (Enter sends, Esc cancels)")
                } else {
                    Terminal.shared.status(await presenter.peer.status().line(names: presenter.knownNames))
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        case .scripted(json: true):
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { return }
                emit(PositionEvent(await presenter.peer.status()))
            }
        case .scripted(json: false):
            return
        }
    }
}
