import Testing
import TandemPeer

/// What a joiner makes of the host's track proposals (`--share-tracks`), from its own file's tracks.
@Suite("Track proposals")
struct TrackProposalTests {
    @Test("by number when the languages agree or are unknown; by language when the joiner numbers tracks otherwise")
    func matching() {
        let french2 = TrackProposal(kind: .audio, track: 2, language: "fra")
        #expect(TrackMatch.match(french2, languages: ["eng", "fra"]) == .track(index: 1, byLanguage: false))
        #expect(TrackMatch.match(french2, languages: ["fra", "eng"]) == .track(index: 0, byLanguage: true))
        #expect(TrackMatch.match(french2, languages: [nil, nil]) == .track(index: 1, byLanguage: false))
        #expect(TrackMatch.match(TrackProposal(kind: .audio, track: 2, language: nil), languages: ["eng", "fra"])
                == .track(index: 1, byLanguage: false))
        #expect(TrackMatch.match(TrackProposal(kind: .subtitle, track: nil, language: nil), languages: ["deu"]) == .off)
    }

    @Test("a track the joiner's file lacks is said, with what it has")
    func missing() {
        let spanish = TrackProposal(kind: .audio, track: 3, language: "spa")
        #expect(TrackMatch.match(spanish, languages: ["eng", "fra"])
                == .missing("your file has no spa audio track (it has 1 eng, 2 fra)"))
        #expect(TrackMatch.match(TrackProposal(kind: .audio, track: 3, language: nil), languages: ["eng", "fra"])
                == .missing("your file has 2 audio tracks, not 3"))
        #expect(TrackMatch.match(TrackProposal(kind: .subtitle, track: 1, language: "deu"), languages: [])
                == .missing("your file has no subtitle tracks"))
    }

    @Test("proposals from the network are bounded: track numbers 1 to 64, audio never off, languages short codes")
    func validation() {
        #expect(TrackProposal(kind: .audio, track: 0, language: nil).validated == nil)
        #expect(TrackProposal(kind: .audio, track: 65, language: nil).validated == nil)
        #expect(TrackProposal(kind: .audio, track: nil, language: nil).validated == nil)
        #expect(TrackProposal(kind: .subtitle, track: nil, language: nil).validated != nil)
        #expect(TrackProposal(kind: .audio, track: 2, language: "FRA").validated?.language == "fra")
        #expect(TrackProposal(kind: .audio, track: 2, language: "fra\u{202E}x").validated?.language == nil)
        #expect(TrackProposal(kind: .audio, track: 2, language: String(repeating: "a", count: 200)).validated?.language == nil)
        #expect(TrackProposal(kind: .audio, track: 2, language: "fra").summary == "audio track 2 (fra)")
        #expect(TrackProposal(kind: .subtitle, track: nil, language: nil).summary == "subtitles off")
    }
}
