import Foundation
import Tandem

/// What a person asks for, from a key press (the terminal or the video window) or a line on stdin (scripted).
package enum UserCommand: Equatable, Sendable {
    case togglePlayPause
    case play
    case pause
    case seek(to: Double)
    /// One seek step (the arrow keys); how far is the session's (`PlaybackLimits`).
    case seekStep(PlaybackLimits.SeekStep)
    case rate(Double)
    case rateStep(up: Bool)
    case restart
    /// The queue's next / previous item.
    case next
    case previous
    /// Appends a local file to the session's queue.
    case queueAdd(String)
    /// Shows the queue.
    case queueList
    /// Moves the group to item K of the queue (from 1, as the status line's "item k of n" counts), playing.
    case jump(Int)
    /// Removes item K (from 1) from the queue.
    case queueRemove(Int)
    /// Moves item K (from 1) to position `to` (from 1).
    case queueMove(Int, to: Int)
    case leave
    case end
    case help
    /// Shows a line in everyone's notices (`notice TEXT` on stdin).
    case notice(String)
    /// Volume in percent (0–150).
    case volume(Double)
    case volumeStep(up: Bool)
    case toggleMute
    /// A subtitle track from 1, or off (nil).
    case subtitles(Int?)
    case cycleSubtitles
    /// An audio track from 1.
    case audio(Int)
    case cycleAudio
    /// This participant's output offset in milliseconds (positive: later).
    case offset(Double)
    case offsetStep(milliseconds: Double)
    /// Shows the position and state on the video for a few seconds.
    case showStatus
    case toggleFullscreen
    /// Sends a chat line to everyone.
    case chat(String)
    /// Opens the one-line chat prompt in the terminal (the key decoder collects the line).
    case openChatPrompt

    /// What `9` and `0` change the volume by (percent).
    package static let volumeStepPercent = 10.0
    /// What `-` and `+` change the offset by (ms).
    package static let offsetStepMilliseconds = 10.0

    /// One command on standard input: how it is written and what it does. `help` on standard input, the man page,
    /// the unknown-command warning and the README's command table come from `lineCommands`.
    package struct LineCommand: Sendable {
        package var syntax: String
        package var what: String
    }

    /// Every command standard input takes, in the order help lists them.
    package static let lineCommands: [LineCommand] = [
        LineCommand(syntax: "play", what: "start (the group waits for everyone's load)"),
        LineCommand(syntax: "pause", what: "pause everyone where this player is"),
        LineCommand(syntax: "seek SECONDS", what: "go to a time of the item"),
        LineCommand(syntax: "rate R", what: "playback rate, \(rateRange)"),
        LineCommand(syntax: "toggle", what: "play or pause"),
        LineCommand(syntax: "restart", what: "go to the start of the item"),
        LineCommand(syntax: "next", what: "the queue's next item"),
        LineCommand(syntax: "prev", what: "the queue's previous item"),
        LineCommand(syntax: "jump K", what: "go to item K of the queue (from 1) and play it"),
        LineCommand(syntax: "queue", what: "list the queue"),
        LineCommand(syntax: "queue add PATH", what: "append a file to the queue (the host's)"),
        LineCommand(syntax: "queue remove K", what: "remove item K, not the one playing (the host's)"),
        LineCommand(syntax: "queue move K TO", what: "move item K to position TO (the host's)"),
        LineCommand(syntax: "volume PERCENT", what: "this player's volume, 0 to 150"),
        LineCommand(syntax: "mute", what: "mute or unmute this player"),
        LineCommand(syntax: "sub N|off", what: "subtitle track N, or none"),
        LineCommand(syntax: "audio N", what: "audio track N"),
        LineCommand(syntax: "offset MS", what: "shift this player's output later (+) or earlier (−)"),
        LineCommand(syntax: "status", what: "show the position and state on the video"),
        LineCommand(syntax: "fullscreen", what: "full screen on or off (the video window)"),
        LineCommand(syntax: "chat TEXT", what: "a chat line to everyone"),
        LineCommand(syntax: "notice TEXT", what: "show TEXT in everyone's notices"),
        LineCommand(syntax: "help", what: "this list"),
        LineCommand(syntax: "leave", what: "leave (the others go on)"),
        LineCommand(syntax: "end", what: "end the session for everyone (the host's)"),
    ]

    /// The commands standard input takes, for `help` and the man page.
    package static let lineHelp: String = {
        let width = lineCommands.map(\.syntax.count).max() ?? 0
        let lines = lineCommands.map { "  " + $0.syntax.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.what }
        return (["commands on standard input (one a line, when it is not a terminal):"] + lines).joined(separator: "\n")
    }()

    /// Parses one scripted line (`lineCommands` lists them). Throws a message that says what is accepted.
    package static func parse(line: String) throws(UserCommandError) -> UserCommand? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let verb = words.first?.lowercased() else { return nil }
        func number(_ what: String, example: String) throws(UserCommandError) -> Double {
            guard words.count == 2, let value = Double(words[1]), value.isFinite else {
                throw UserCommandError("'\(verb)' needs one number (\(what)), e.g. '\(verb) \(example)'")
            }
            return value
        }
        func track(_ what: String) throws(UserCommandError) -> Int {
            guard words.count == 2, let value = Int(words[1]), value >= 1 else {
                throw UserCommandError("'\(verb)' needs \(what == "audio" ? "an" : "a") \(what) track number from 1, e.g. '\(verb) 2'"
                                       + (verb == "sub" ? " (or 'sub off')" : ""))
            }
            return value
        }
        switch verb {
        case "play": return .play
        case "pause": return .pause
        case "toggle": return .togglePlayPause
        case "seek": return .seek(to: try number("seconds", example: "90"))
        case "rate": return .rate(try number("playback rate", example: "1.5"))
        case "restart": return .restart
        case "next": return .next
        case "prev", "previous": return .previous
        case "jump":
            guard words.count == 2, let item = Int(words[1]), item >= 1 else {
                throw UserCommandError("'jump' needs an item number from 1 (as 'queue' lists them), e.g. 'jump 2'")
            }
            return .jump(item)
        case "queue":
            return try parseQueue(line: line, words: words)
        case "volume": return .volume(try number("percent", example: "80"))
        case "mute": return .toggleMute
        case "sub", "subs", "subtitles":
            if words.count == 2, words[1].lowercased() == "off" { return .subtitles(nil) }
            return .subtitles(try track("subtitle"))
        case "audio": return .audio(try track("audio"))
        case "offset": return .offset(try number("milliseconds, positive is later", example: "-120"))
        case "status": return .showStatus
        case "fullscreen", "fs": return .toggleFullscreen
        case "chat", "say":
            let text = line.drop { $0 == " " || $0 == "\t" }.dropFirst(verb.count)
            guard let clean = Chat.clean(String(text)) else {
                throw UserCommandError("'chat' needs some text, e.g. 'chat back in five minutes'")
            }
            return .chat(clean)
        case "leave", "quit", "exit": return .leave
        case "end": return .end
        case "help", "?": return .help
        case "notice":
            let text = line.drop(while: { $0 == " " || $0 == "\t" }).dropFirst(verb.count)
                .trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { throw UserCommandError("'notice' needs text, e.g. 'notice back in 5 minutes'") }
            return .notice(text)
        default:
            throw UserCommandError("unknown command '\(verb)': use "
                                   + lineCommands.map(\.syntax).joined(separator: ", "))
        }
    }

    /// `queue`, `queue add PATH`, `queue remove K`, `queue move K TO`.
    private static func parseQueue(line: String, words: [String]) throws(UserCommandError) -> UserCommand {
        guard words.count > 1 else { return .queueList }
        func item(_ word: String, _ what: String) throws(UserCommandError) -> Int {
            guard let value = Int(word), value >= 1 else {
                throw UserCommandError("'\(word)' is not \(what): use a number from 1, as 'queue' lists the items")
            }
            return value
        }
        switch words[1].lowercased() {
        case "add":
            let rest = line.drop { $0 == " " || $0 == "\t" }.dropFirst("queue".count).drop { $0 == " " || $0 == "\t" }
            let path = rest.dropFirst(3).trimmingCharacters(in: .whitespaces)
            guard !path.isEmpty else { throw UserCommandError("'queue add' needs a file, e.g. 'queue add movie.webm'") }
            return .queueAdd(path)
        case "remove", "rm":
            guard words.count == 3 else { throw UserCommandError("'queue remove' needs an item number, e.g. 'queue remove 3'") }
            return .queueRemove(try item(words[2], "an item number"))
        case "move", "mv":
            guard words.count == 4 else {
                throw UserCommandError("'queue move' needs an item number and where to put it, e.g. 'queue move 3 1'")
            }
            return .queueMove(try item(words[2], "an item number"), to: try item(words[3], "a position"))
        default:
            throw UserCommandError("'queue' alone lists the queue; also 'queue add PATH', 'queue remove K', 'queue move K TO'")
        }
    }

    /// One key, the same in the terminal and in the video window.
    package struct KeyBinding: Sendable {
        /// What the terminal sends for it (one byte), nil for keys only a control sequence gives (arrows).
        package var terminal: [UInt8]
        /// GstNavigation's names for it in the video window.
        package var window: [String]
        package var command: UserCommand
    }

    /// Every key: the terminal, the video window, `?` help, the README's key table and the man page all come from here.
    package static let keyBindings: [KeyBinding] = [
        KeyBinding(terminal: [0x20], window: ["space"], command: .togglePlayPause),
        KeyBinding(terminal: [], window: ["Left"], command: .seekStep(.back)),
        KeyBinding(terminal: [], window: ["Right"], command: .seekStep(.forward)),
        KeyBinding(terminal: [], window: ["Up"], command: .seekStep(.farForward)),
        KeyBinding(terminal: [], window: ["Down"], command: .seekStep(.farBack)),
        KeyBinding(terminal: Array("[".utf8), window: ["bracketleft", "["], command: .rateStep(up: false)),
        KeyBinding(terminal: Array("]".utf8), window: ["bracketright", "]"], command: .rateStep(up: true)),
        KeyBinding(terminal: Array("r".utf8), window: ["r"], command: .restart),
        KeyBinding(terminal: Array("n".utf8), window: ["n"], command: .next),
        KeyBinding(terminal: Array("p".utf8), window: ["p"], command: .previous),
        KeyBinding(terminal: Array("9".utf8), window: ["9", "KP_9"], command: .volumeStep(up: false)),
        KeyBinding(terminal: Array("0".utf8), window: ["0", "KP_0"], command: .volumeStep(up: true)),
        KeyBinding(terminal: Array("m".utf8), window: ["m"], command: .toggleMute),
        KeyBinding(terminal: Array("s".utf8), window: ["s"], command: .cycleSubtitles),
        KeyBinding(terminal: Array("a".utf8), window: ["a"], command: .cycleAudio),
        KeyBinding(terminal: Array("-".utf8), window: ["minus", "KP_Subtract", "-"],
                   command: .offsetStep(milliseconds: -offsetStepMilliseconds)),
        KeyBinding(terminal: Array("+".utf8) + Array("=".utf8), window: ["plus", "equal", "KP_Add", "+", "="],
                   command: .offsetStep(milliseconds: offsetStepMilliseconds)),
        KeyBinding(terminal: Array("o".utf8), window: ["o"], command: .showStatus),
        KeyBinding(terminal: Array("f".utf8), window: ["f"], command: .toggleFullscreen),
        KeyBinding(terminal: Array("c".utf8), window: ["c"], command: .openChatPrompt),
        KeyBinding(terminal: Array("q".utf8) + [0x03, 0x04], window: ["q"], command: .leave),
        KeyBinding(terminal: Array("E".utf8), window: ["E"], command: .end),
        KeyBinding(terminal: Array("?".utf8) + Array("h".utf8), window: ["question", "?", "h"], command: .help),
    ]

    /// The command a key pressed in the video window stands for (GstNavigation's key name).
    package static func windowKey(_ name: String) -> UserCommand? {
        keyBindings.first { $0.window.contains(name) }?.command
    }

    /// The arrow keys as the terminal sends them (Esc [ A…D), by the name the video window gives them.
    static let arrowKeys: [UInt8: String] = [UInt8(ascii: "A"): "Up", UInt8(ascii: "B"): "Down",
                                             UInt8(ascii: "C"): "Right", UInt8(ascii: "D"): "Left"]

    /// The default limits' rate range, "0.25 to 4" (a session's authority may announce others).
    static var rateRange: String {
        let limits = PlaybackLimits()
        return String(format: "%g to %g", limits.minimumRate, limits.maximumRate)
    }

    /// The default limits' seek steps, for the key help (a session's authority may announce others).
    static let seekStepsText: String = {
        let limits = PlaybackLimits()
        return String(format: "←/→ seek −/+%g s · ↑/↓ seek +/−%g s", limits.smallSeekStep.seconds, limits.largeSeekStep.seconds)
    }()

    package static let keyHelp = """
        keys (terminal and video window):
          space play/pause · \(seekStepsText) · [ ] rate −/+
          r restart · n/p next/previous item · 9/0 volume −/+ · m mute · s subtitles
          a audio track · −/+ offset −/+10 ms · o position on the video · f full screen
          c chat · q leave · E end for everyone · ? help
        """
}

package struct UserCommandError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Decodes key presses from a raw terminal byte stream into commands.
package struct KeyDecoder {
    private var pending: [UInt8] = []
    /// The chat line being typed after `c`, nil when not typing one.
    package private(set) var chatLine: String?
    private var chatBytes: [UInt8] = []
    /// Bytes after which an unfinished control sequence is given up on (real keys send at most about eight).
    static let longestSequence = 16

    package init() {}

    /// Feeds bytes; returns the commands completed by them.
    package mutating func feed(_ bytes: [UInt8]) -> [UserCommand] {
        pending += bytes
        var commands: [UserCommand] = []
        while let first = pending.first {
            if chatLine != nil {
                // Typing a chat line: Enter sends it, Esc or Ctrl-C cancels, Backspace deletes a character.
                pending.removeFirst()
                switch first {
                case 0x0D, 0x0A:
                    if let text = Chat.clean(chatLine ?? "") { commands.append(.chat(text)) }
                    endChatLine()
                case 0x1B, 0x03:
                    endChatLine()
                    if first == 0x1B, pending.first == UInt8(ascii: "[") {
                        // An arrow or other key's sequence: skip the rest of it.
                        if let end = pending.dropFirst().firstIndex(where: { (0x40...0x7E).contains($0) }) {
                            pending.removeFirst(end + 1)
                        }
                    }
                case 0x7F, 0x08:
                    if !chatBytes.isEmpty {
                        // Remove one whole character (its UTF-8 continuation bytes first).
                        while let last = chatBytes.popLast(), last & 0xC0 == 0x80 {}
                    }
                    chatLine = String(decoding: chatBytes, as: UTF8.self)
                default:
                    if first >= 0x20, chatBytes.count < Chat.maximumLength * 4 { chatBytes.append(first) }
                    chatLine = String(decoding: chatBytes, as: UTF8.self)
                }
                continue
            }
            if first == 0x1B {
                // A lone Esc, or a control sequence: Esc [ parameters final (arrows are Esc [ A…D).
                guard pending.count >= 2 else { break }
                guard pending[1] == UInt8(ascii: "[") else { pending.removeFirst(); continue }
                let window = pending.indices.dropFirst(2).prefix(Self.longestSequence)
                guard let end = window.first(where: { (0x40...0x7E).contains(pending[$0]) }) else {
                    // Incomplete: wait for the rest, unless it is longer than any key's sequence.
                    if pending.count > Self.longestSequence { pending.removeFirst() } else { break }
                    continue
                }
                // An arrow means what the same key in the video window means; another key (F-keys, Home, modified
                // arrows) is ignored whole.
                if end == 2, let name = UserCommand.arrowKeys[pending[end]], let command = UserCommand.windowKey(name) {
                    commands.append(command)
                }
                pending.removeFirst(end + 1)
                continue
            }
            pending.removeFirst()
            if let binding = UserCommand.keyBindings.first(where: { $0.terminal.contains(first) }) {
                commands.append(binding.command)
                if binding.command == .openChatPrompt { chatLine = "" }
            }
        }
        return commands
    }

    private mutating func endChatLine() {
        chatLine = nil
        chatBytes = []
    }
}
