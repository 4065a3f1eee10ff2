import Foundation
import Tandem

/// Where a joiner's invite comes from: the command line (visible to every user of the machine in /proc), a file,
/// standard input or the environment.
package enum InviteSource: Equatable, Sendable {
    case argument(String)
    case file(String)
    case standardInput
    case environment(String)

    /// Whether a positional argument is meant as the invite rather than the media file.
    package static func looksLikeInvite(_ text: String) -> Bool {
        let lower = text.lowercased()
        return text == "-" || lower.hasPrefix("tandem://") || lower.hasPrefix("tandems://")
            || SyncplayAddress.looksLikeSyncplay(text)
    }

    /// Sorts the positional arguments into the invite's source and the media file: a lone positional argument that
    /// does not look like an invite (tandem://, tandems:// or -) is the file.
    package static func sort(argument: String?, file: String?, inviteFile: String?,
                             environment: String?) throws(PeerFailure) -> (source: InviteSource, file: String?) {
        let environment = environment.flatMap { $0.isEmpty ? nil : $0 }
        var argument = argument
        var file = file
        if let lone = argument, file == nil, !looksLikeInvite(lone) {
            file = lone
            argument = nil
        }
        if let inviteFile {
            guard argument == nil else {
                throw PeerFailure(.usage, "give the invite one way: with --invite-file or as an argument, not both")
            }
            return (.file(inviteFile), file)
        }
        if let argument { return (argument == "-" ? .standardInput : .argument(argument), file) }
        if let environment { return (.environment(environment), file) }
        throw PeerFailure(.usage, "no invite given — use --invite-file FILE, - to read it from standard "
            + "input, or the TANDEM_INVITE environment variable")
    }

    /// The invite's text (a file's or standard input's first line); `what` names it in errors (the same sources carry
    /// other secrets: `host`'s server, a Syncplay room's password).
    package func read(_ what: String = "invite") throws(PeerFailure) -> String {
        switch self {
        case .argument(let text), .environment(let text):
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw PeerFailure(.badInvite, "cannot read the \(what) file \(path) — check the path and its permissions")
            }
            let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { throw PeerFailure(.badInvite, "the \(what) file \(path) is empty") }
            return text
        case .standardInput:
            // Read through the same buffered stdin as the scripted commands that follow it.
            guard let line = readLine(strippingNewline: true), !line.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw PeerFailure(.badInvite, "no \(what) on the first line of standard input")
            }
            return line.trimmingCharacters(in: .whitespaces)
        }
    }
}

extension MediaActivity {
    /// What a joiner is told before the file is checked: what is shared, by whom, its metadata and who is there.
    package static func joinHeader(welcome: SessionSnapshot, me: ParticipantID) -> [String] {
        let activity = welcome.activity.flatMap { try? JSONDecoder().decode(MediaActivity.self, from: $0.payload) }
        let host = welcome.participants.first(where: \.isHost)?.participant.name
        var header: [String] = []
        if let activity {
            header.append("Joining \(activity.summary)" + (host.map { " hosted by \($0)" } ?? ""))
        } else if let envelope = welcome.activity {
            header.append("Joining \"\(envelope.metadata.title ?? envelope.itemID)\"" + (host.map { " hosted by \($0)" } ?? ""))
        }
        if let metadata = welcome.activity?.metadata { header += metadataLines(metadata) }
        let others = welcome.participants.filter { $0.participant.id != me }
        header.append("With: " + (others.isEmpty ? "nobody yet" : others.map(\.participant.name).joined(separator: ", ")))
        return header
    }
}
