import Tandem

/// Where a participant's words go: a terminal with a status line, plain lines on standard output, or JSON events.
/// `PeerPresenter` decides what to say; an output decides how it looks.
package protocol PeerOutput: Sendable {
    /// A line for people (nothing in JSON mode).
    func say(_ text: String)
    /// A JSON event (JSON mode only).
    func emit(_ event: some PeerEvent)
    /// A warning: a line for people, a `warning` event in JSON mode.
    func warn(_ text: String)
    /// Whether a chat line is being typed here right now (the terminal's `c` prompt).
    var isTypingChat: Bool { get }
    /// Whether commands arrive as keys (a terminal) rather than lines (standard input): what `help` lists.
    var takesKeys: Bool { get }
}

extension PeerOutput {
    package var takesKeys: Bool { false }
}

/// Why a participant's run ended.
package enum PeerEnding: Sendable, Equatable {
    /// The person left (a key, a command, SIGINT or SIGTERM).
    case left
    /// The host ended the session for everyone from here.
    case endedHere
    /// The session ended for this participant for another reason.
    case invalidated(InvalidationReason)
    /// The connection went away without saying why.
    case lost
}
