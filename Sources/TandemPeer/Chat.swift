import Foundation
import Tandem

/// One chat line, as the messenger carries it between participants (sealed end to end like any app message).
package struct ChatLine: Codable, Sendable, Hashable {
    package var text: String
    package init(text: String) { self.text = text }
}

package enum Chat {
    /// The longest line sent or shown, in characters.
    package static let maximumLength = 500

    /// `text` as it may be sent or shown: control characters removed (newlines and tabs become spaces), space
    /// trimmed, cut to `maximumLength`; nil when nothing is left. Applied when sending and again on receipt.
    package static func clean(_ text: String) -> String? {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar == "\n" || scalar == "\t" || scalar == "\r" {
                out.unicodeScalars.append(" ")
            } else if !CharacterSet.controlCharacters.contains(scalar)
                        && !(0x202A...0x202E).contains(scalar.value) && !(0x2066...0x2069).contains(scalar.value) {
                // Bidirectional overrides could make a line read as someone else's: dropped with the controls.
                out.unicodeScalars.append(scalar)
            }
        }
        let trimmed = out.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        return String(trimmed.prefix(maximumLength))
    }
}

extension LocalPeer {
    /// Sends a chat line to everyone; returns a problem to tell the user, or nil.
    package func sendChat(_ text: String) async -> String? {
        guard let line = Chat.clean(text) else { return "nothing to send — type some text after 'chat'" }
        do {
            try await chat.send(ChatLine(text: line))
        } catch {
            return "the chat line was not sent: \(error)"
        }
        return nil
    }

    /// Chat lines from the others, cleaned, with who sent them.
    package var chatLines: AsyncStream<(text: String, from: ParticipantID)> {
        // Cleaned as the reader pulls them: no task of its own.
        AsyncStream.pulling(chat.messages(of: ChatLine.self)) { line, context in
            Chat.clean(line.text).map { ($0, context.source) }
        }
    }
}
