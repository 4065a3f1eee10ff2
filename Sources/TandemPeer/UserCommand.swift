import Foundation

/// What a person asks for, from a key press (interactive) or a line on stdin (scripted).
package enum UserCommand: Equatable {
    case togglePlayPause
    case play
    case pause
    case seek(to: Double)
    case seekBy(Double)
    case rate(Double)
    case rateStep(up: Bool)
    case restart
    case leave
    case end
    case help
    /// Shows a line in everyone's notices (`notice TEXT` on stdin).
    case notice(String)

    /// The rates `[` and `]` step through.
    package static let rateSteps: [Double] = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]

    /// Parses one scripted line: `play`, `pause`, `seek SECONDS`, `rate R`, `leave`, `end`.
    /// Throws a message that says what is accepted.
    package static func parse(line: String) throws(UserCommandError) -> UserCommand? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let verb = words.first?.lowercased() else { return nil }
        func number(_ what: String) throws(UserCommandError) -> Double {
            guard words.count == 2, let value = Double(words[1]), value.isFinite else {
                throw UserCommandError("'\(verb)' needs one number (\(what)), e.g. '\(verb) \(verb == "rate" ? "1.5" : "90")'")
            }
            return value
        }
        switch verb {
        case "play": return .play
        case "pause": return .pause
        case "toggle": return .togglePlayPause
        case "seek": return .seek(to: try number("seconds"))
        case "rate": return .rate(try number("playback rate"))
        case "restart": return .restart
        case "leave", "quit", "exit": return .leave
        case "end": return .end
        case "help", "?": return .help
        case "notice":
            let text = line.drop(while: { $0 == " " || $0 == "\t" }).dropFirst(verb.count)
                .trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { throw UserCommandError("'notice' needs text, e.g. 'notice back in 5 minutes'") }
            return .notice(text)
        default:
            throw UserCommandError("unknown command '\(verb)': use play, pause, seek SECONDS, rate R, leave or end")
        }
    }

    package static let keyHelp = """
        keys: space play/pause · ←/→ seek −/+10 s · ↑/↓ seek +/−60 s · [ ] rate down/up (0.5×–2×)
              0 restart · q leave · E end for everyone · ? help
        """
}

package struct UserCommandError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Decodes key presses from a raw terminal byte stream into commands.
package struct KeyDecoder {
    private var pending: [UInt8] = []
    /// Bytes after which an unfinished control sequence is given up on (real keys send at most about eight).
    static let longestSequence = 16

    package init() {}

    /// Feeds bytes; returns the commands completed by them.
    package mutating func feed(_ bytes: [UInt8]) -> [UserCommand] {
        pending += bytes
        var commands: [UserCommand] = []
        while let first = pending.first {
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
                let isPlain = end == 2
                switch pending[end] {
                case UInt8(ascii: "A") where isPlain: commands.append(.seekBy(60))
                case UInt8(ascii: "B") where isPlain: commands.append(.seekBy(-60))
                case UInt8(ascii: "C") where isPlain: commands.append(.seekBy(10))
                case UInt8(ascii: "D") where isPlain: commands.append(.seekBy(-10))
                default: break   // another key (F-keys, Home, modified arrows): ignored whole
                }
                pending.removeFirst(end + 1)
                continue
            }
            pending.removeFirst()
            switch first {
            case UInt8(ascii: " "): commands.append(.togglePlayPause)
            case UInt8(ascii: "["): commands.append(.rateStep(up: false))
            case UInt8(ascii: "]"): commands.append(.rateStep(up: true))
            case UInt8(ascii: "0"): commands.append(.restart)
            case UInt8(ascii: "q"), 0x03, 0x04: commands.append(.leave)  // q, Ctrl-C, Ctrl-D
            case UInt8(ascii: "E"): commands.append(.end)
            case UInt8(ascii: "?"), UInt8(ascii: "h"): commands.append(.help)
            default: break
            }
        }
        return commands
    }
}
