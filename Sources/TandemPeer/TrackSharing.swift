import Foundation
import Tandem

/// A track choice the host proposes to everyone (`host --share-tracks`), carried by the messenger (sealed end to
/// end like any app message). Joiners apply it unless they chose that kind of track on their command line.
package struct TrackProposal: Codable, Sendable, Hashable {
    package enum Kind: String, Codable, Sendable, CaseIterable {
        case audio, subtitle
    }

    package var kind: Kind
    /// The item's own track, from 1 (`tandem probe` numbers them so); nil: subtitles off.
    package var track: Int?
    /// The track's language (ISO 639-2/T, "fra") when the host's file names one.
    package var language: String?

    /// The highest track number a proposal may carry.
    package static let maximumTrack = 64

    package init(kind: Kind, track: Int?, language: String?) {
        self.kind = kind
        self.track = track
        self.language = language
    }

    /// The proposal as it may be acted on, or nil: a track number within 1...`maximumTrack` (or none, for
    /// subtitles only); a language that is not a short code of letters is dropped.
    package var validated: TrackProposal? {
        if let track {
            guard (1...Self.maximumTrack).contains(track) else { return nil }
        } else if kind == .audio {
            return nil
        }
        var copy = self
        copy.language = language.flatMap { code in
            (2...8).contains(code.count) && code.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "-") }
                ? code.lowercased() : nil
        }
        return copy
    }

    /// "audio track 2 (fra)", "subtitle track 1", "subtitles off".
    package var summary: String {
        guard let track else { return "subtitles off" }
        return "\(kind.rawValue) track \(track)" + (language.map { " (\($0))" } ?? "")
    }
}

/// A joiner's request for the host's current proposals, sent once its item has loaded when none came: a safety
/// net under the host's proposal to each newcomer. The host answers each participant once.
package struct TrackProposalRequest: Codable, Sendable, Hashable {
    package init() {}
}

/// Which of its own tracks a joiner plays for a proposal.
package enum TrackMatch: Equatable, Sendable {
    /// Track `index` (0-based among the item's own); `byLanguage` when its number differs from the proposal's.
    case track(index: Int, byLanguage: Bool)
    /// Subtitles off.
    case off
    /// The joiner's file lacks the track: why, in words.
    case missing(String)

    /// Matches by language when both files name languages (the proposed number first, when it has that language,
    /// else the first track that does), else by number.
    package static func match(_ proposal: TrackProposal, languages: [String?]) -> TrackMatch {
        guard let number = proposal.track else { return .off }
        let kind = proposal.kind.rawValue
        if let language = proposal.language, languages.contains(where: { $0 != nil }) {
            if number <= languages.count, languages[number - 1] == language {
                return .track(index: number - 1, byLanguage: false)
            }
            if let index = languages.firstIndex(of: language) { return .track(index: index, byLanguage: true) }
            let have = languages.enumerated().map { "\($0.offset + 1) \($0.element ?? "?")" }.joined(separator: ", ")
            return .missing("your file has no \(language) \(kind) track (it has \(have))")
        }
        guard number <= languages.count else {
            return .missing(languages.isEmpty ? "your file has no \(kind) tracks"
                            : "your file has \(languages.count) \(kind) track\(languages.count == 1 ? "" : "s"), not \(number)")
        }
        return .track(index: number - 1, byLanguage: false)
    }
}

extension LocalPeer {
    /// Track proposals from the others, with who sent them, from the moment this is called (call it before
    /// joining, so that a proposal sent to a newcomer is not missed).
    package func trackProposals() -> AsyncStream<(TrackProposal, ParticipantID)> {
        AsyncStream.pulling(chat.messages(of: TrackProposal.self)) { proposal, context in (proposal, context.source) }
    }

    /// This player's current choice of `kind` as a proposal; nil when nothing is loaded, or when the subtitles
    /// shown are this participant's own file (the others do not have it).
    package func currentTrackProposal(_ kind: TrackProposal.Kind) -> TrackProposal? {
        guard player.mediaInfo != nil else { return nil }
        switch kind {
        case .audio:
            let index = player.audioTrack
            guard index >= 0 else { return nil }
            let languages = player.audioTrackLanguages
            return TrackProposal(kind: .audio, track: index + 1, language: index < languages.count ? languages[index] : nil)
        case .subtitle:
            guard let shown = player.subtitleTrack else { return TrackProposal(kind: .subtitle, track: nil, language: nil) }
            let embedded = player.hasSubtitleFile ? shown - 1 : shown
            guard embedded >= 0 else { return nil }
            let languages = player.embeddedSubtitleLanguages
            return TrackProposal(kind: .subtitle, track: embedded + 1,
                                 language: embedded < languages.count ? languages[embedded] : nil)
        }
    }

    /// Sends this player's current choices of `kinds` to `recipients`; returns a problem to tell the user.
    package func proposeTracks(_ kinds: [TrackProposal.Kind], to recipients: Recipients = .all) async -> String? {
        for kind in kinds {
            guard let proposal = currentTrackProposal(kind) else {
                if kind == .subtitle, player.hasSubtitleFile, player.subtitleTrack == 0 {
                    return "your subtitle file is not proposed to the others: they do not have it"
                }
                continue
            }
            do { try await chat.send(proposal, to: recipients) } catch {
                return "the \(kind.rawValue) track was not proposed: \(error)"
            }
        }
        return nil
    }

    /// The track of `kind` this player plays now, from 1 (subtitles: among the item's own; nil when off or none).
    package func playingTrack(_ kind: TrackProposal.Kind) -> Int? {
        switch kind {
        case .audio:
            return player.audioTrack >= 0 ? player.audioTrack + 1 : nil
        case .subtitle:
            guard let shown = player.subtitleTrack else { return nil }
            let embedded = player.hasSubtitleFile ? shown - 1 : shown
            return embedded >= 0 ? embedded + 1 : nil
        }
    }

    /// Applies a proposal to the loaded item: whether it changed anything here, and what happened in words.
    package func apply(_ proposal: TrackProposal) -> (applied: Bool, outcome: String) {
        let languages = proposal.kind == .audio ? player.audioTrackLanguages : player.embeddedSubtitleLanguages
        let offset = proposal.kind == .subtitle && player.hasSubtitleFile ? 1 : 0
        switch TrackMatch.match(proposal, languages: languages) {
        case .off:
            try? player.selectSubtitleTrack(nil)
            return (true, "subtitles off")
        case .track(let index, let byLanguage):
            do {
                if proposal.kind == .audio {
                    try player.selectAudioTrack(index)
                } else {
                    try player.selectSubtitleTrack(index + offset)
                }
            } catch {
                return (false, error.description)
            }
            let language = index < languages.count ? languages[index].map { " (\($0))" } ?? "" : ""
            return (true, byLanguage ? "your file has it as track \(index + 1)\(language): playing that"
                                     : "playing your track \(index + 1)\(language)")
        case .missing(let why):
            let keeping = playingTrack(proposal.kind).map { "keeping your track \($0)" }
                ?? (proposal.kind == .audio ? "keeping your audio" : "keeping subtitles off")
            return (false, "\(why): \(keeping)")
        }
    }
}
