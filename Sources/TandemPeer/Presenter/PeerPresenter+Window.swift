import Foundation
import Tandem

// The video window's side of the presenter: keys pressed in it, and the on-screen display drawn over the picture.
extension PeerPresenter {
    /// Seconds on this process's monotonic clock, for the display's timing.
    var displayNow: Double { Double(SystemMonotonicClock().now.nanoseconds) / 1e9 }

    /// Puts `text` on the video for a few seconds (when the player draws an overlay).
    package func display(_ text: String) {
        guard peer.player.hasOverlay else { return }
        let now = displayNow
        osd.withLock { $0.post(text, now: now) }
    }

    /// A setting changed here (volume, tracks, offset): said in the terminal and on the video.
    package func said(_ text: String) {
        say(text)
        display(text)
    }

    /// The position and state line on the video for a few seconds (`o`, `status`).
    package func showStatusOnVideo() {
        guard peer.player.hasOverlay else {
            warn("there is no on-screen display here (audio only, or --no-osd)")
            return
        }
        let now = displayNow
        osd.withLock { $0.showStatus(now: now) }
    }

    /// Keys pressed in the video window, carried out like the terminal's.
    func readWindowKeys() async {
        for await key in peer.player.windowKeys {
            guard let command = UserCommand.windowKey(key) else { continue }
            if await handle(command) { return }
        }
    }

    /// Redraws the overlay whenever what it should show changes.
    func drawOverlay() async {
        guard peer.player.hasOverlay else { return }
        var shown: String?
        while !Task.isCancelled {
            let now = displayNow
            // The status line is worked out only while it is shown.
            let status = osd.withLock { $0.showsStatus(now: now) } ? await peer.status().line(names: [:]) : ""
            let text = osd.withLock { $0.text(now: now, status: { status }) }
            if text != shown {
                peer.player.setOverlayText(text)
                shown = text
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}

extension PeerPresenter {
    /// A chat line (ours or someone else's): above the status line, on the video, and as a `chat` event.
    package func showChat(_ text: String, from participant: ParticipantID) {
        let name = participant == peer.id ? peer.name : (nameOf(participant) ?? participant.rawValue)
        say("\(name): \(text)")
        display("\(name): \(text)")
        emit(ChatEvent(participant: participant.rawValue, name: name, text: text))
    }
}
