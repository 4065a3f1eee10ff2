import CTandemGStreamer
import CTandemGStreamerShim
import TandemCore

// The video window the player owns on an X display: its title and full screen. GStreamer's X sinks have no
// full-screen switch of their own, so the player makes the window (when the sink asks for one) and hands it over.
extension GStreamerPlayer {
    /// The title the video window shows (the activity's title, in a session).
    public var windowTitle: String { videoWindow.title.withLock { $0 } }

    /// Titles the video window (WM_NAME and _NET_WM_NAME), now or once it exists.
    public func setWindowTitle(_ title: String) {
        let clean = String(title.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(200))
        let shown = clean.isEmpty ? "Tandem" : clean
        videoWindow.title.withLock { $0 = shown }
        tdm_gst_window_set_title(videoWindow.pointer, shown)
    }

    /// The X window the video is drawn in (its id), nil while there is none: before the first video frame, and
    /// always with a sink that draws into no window (headless) or an output that is not X.
    public var videoWindowID: UInt? {
        let xid = tdm_gst_window_xid(videoWindow.pointer)
        return xid == 0 ? nil : UInt(xid)
    }

    public var isFullScreen: Bool { tdm_gst_window_is_fullscreen(videoWindow.pointer) != 0 }

    /// Switches the video window to full screen or back; returns the new state, nil when there is no window of
    /// the player's to switch (`fullScreenUnavailableReason` says why).
    @discardableResult
    public func setFullScreen(_ on: Bool) -> Bool? {
        let state = tdm_gst_window_set_fullscreen(videoWindow.pointer, on ? 1 : 0)
        return state < 0 ? nil : state == 1
    }

    /// Full screen on when off, off when on; returns the new state (nil: no window).
    @discardableResult
    public func toggleFullScreen() -> Bool? { setFullScreen(!isFullScreen) }

    /// Why there is no window to make full screen.
    public var fullScreenUnavailableReason: String {
        guard let info = mediaInfo else { return "full screen needs the video window, and nothing is playing yet" }
        if !info.hasVideo { return "full screen: this item is audio only, there is no video window" }
        return "full screen needs a video window on an X display, and this video output has none (headless, no "
            + "display, or an output with a window of its own: use its window manager's full-screen key)"
    }
}

/// The player's side of the C shim's video window.
///
/// `@unchecked Sendable`: the shim's window is behind its own mutex; `title` is behind a lock.
final class VideoWindow: @unchecked Sendable {
    let pointer: OpaquePointer
    let title: Locked<String>

    init(pipeline: UnsafeMutablePointer<GstElement>, title: String) {
        pointer = tdm_gst_window_new(pipeline, title)
        self.title = Locked(title)
    }

    /// Only once the pipeline is in the NULL state (no sink holds the window any more).
    func free() { tdm_gst_window_free(pointer) }
}
