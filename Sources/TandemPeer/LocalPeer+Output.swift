import Foundation
import Tandem

// What each participant sets for themselves: volume, tracks, the output offset, full screen. Nothing here reaches
// the group (a sharing host's track choices are proposed to it separately: `TrackSharing`).
extension LocalPeer {
    /// Applies a personal output command; returns a problem to warn about, or says the new setting through
    /// `feedback`.
    func adjustOutput(_ command: UserCommand, feedback: @Sendable (String) -> Void) -> String? {
        switch command {
        case .volume(let percent):
            guard percent.isFinite, (0...150).contains(percent) else {
                return "volume \(percent) is out of range — use 0 to 150 (percent)"
            }
            player.setVolume(percent / 100)
            feedback(volumeText)
        case .volumeStep(let up):
            let step = UserCommand.volumeStepPercent / 100
            player.setVolume(((player.volume + (up ? step : -step)) * 10).rounded() / 10)
            if player.isMuted { player.setMuted(false) }
            feedback(volumeText)
        case .toggleMute:
            player.setMuted(!player.isMuted)
            feedback(volumeText)
        case .subtitles(let track):
            do {
                try player.selectSubtitleTrack(track.map { $0 - 1 })
            } catch {
                return error.description
            }
            feedback(subtitlesText)
        case .cycleSubtitles:
            let count = player.subtitleTrackCount
            guard count > 0 else { return "no subtitles: this item has none — give a file with --sub FILE" }
            // Off → 1 → 2 → … → off.
            let next = player.subtitleTrack.map { $0 + 1 < count ? $0 + 1 : nil } ?? 0
            try? player.selectSubtitleTrack(next)
            feedback(subtitlesText)
        case .audio(let track):
            do {
                try player.selectAudioTrack(track - 1)
            } catch {
                return error.description
            }
            feedback(audioText)
        case .cycleAudio:
            let count = player.audioTrackCount
            guard count > 1 else { return count == 0 ? "this item has no audio" : "this item has one audio track" }
            try? player.selectAudioTrack((max(0, player.audioTrack) + 1) % count)
            feedback(audioText)
        case .offset(let milliseconds):
            guard milliseconds.isFinite, abs(milliseconds) <= Self.largestOffsetMilliseconds else {
                return "offset \(milliseconds) ms is out of range — use −\(Int(Self.largestOffsetMilliseconds)) to "
                    + "\(Int(Self.largestOffsetMilliseconds)) ms"
            }
            player.setOutputOffset(.milliseconds(milliseconds))
            feedback(offsetText)
        case .offsetStep(let milliseconds):
            let next = player.outputOffset.milliseconds + milliseconds
            guard abs(next) <= Self.largestOffsetMilliseconds else {
                return "the offset is already at its limit (±\(Int(Self.largestOffsetMilliseconds)) ms)"
            }
            player.setOutputOffset(.milliseconds(next))
            feedback(offsetText)
        case .toggleFullscreen:
            guard let on = player.toggleFullScreen() else { return player.fullScreenUnavailableReason }
            feedback(on ? "full screen (f again to leave it)" : "full screen off")
        default:
            break
        }
        return nil
    }

    /// How far the output offset goes either way (ms).
    static var largestOffsetMilliseconds: Double { 2_000 }

    var volumeText: String {
        player.isMuted ? "muted" : String(format: "volume %.0f%%", player.volume * 100)
    }

    var subtitlesText: String {
        guard let track = player.subtitleTrack else { return "subtitles off" }
        return "subtitles: track \(track + 1) of \(player.subtitleTrackCount)"
    }

    var audioText: String { "audio: track \(player.audioTrack + 1) of \(player.audioTrackCount)" }

    var offsetText: String {
        let ms = player.outputOffset.milliseconds
        return ms == 0 ? "offset 0 ms (in step with the group)"
            : String(format: "offset %+.0f ms (%@ than the group)", ms, ms > 0 ? "later" : "earlier")
    }
}
