import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import Synchronization
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
        videoWindow.use { tdm_gst_window_set_title($0, shown) }
    }

    /// The X window the video is drawn in (its id), nil while there is none: before the first video frame, and
    /// always with a sink that draws into no window (headless) or an output that is not X.
    public var videoWindowID: UInt? {
        let xid = videoWindow.use { tdm_gst_window_xid($0) } ?? 0
        return xid == 0 ? nil : UInt(xid)
    }

    public var isFullScreen: Bool { (videoWindow.use { tdm_gst_window_is_fullscreen($0) } ?? 0) != 0 }

    /// Switches the video window to full screen or back; returns the new state, nil when there is no window of
    /// the player's to switch (`fullScreenUnavailableReason` says why).
    @discardableResult
    public func setFullScreen(_ on: Bool) -> Bool? {
        let state = videoWindow.use { tdm_gst_window_set_fullscreen($0, on ? 1 : 0) } ?? -1
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

/// The player's side of the C shim's video window, until the player closes.
///
/// `@unchecked Sendable`: the shim's window is only used under `lock`, and freed under it.
final class VideoWindow: @unchecked Sendable {
    /// The shim's window as its address (0 once freed).
    private let address: Mutex<UInt>
    let title: Locked<String>

    /// Watches `pipeline` for a window request from `videoSink`, unless `watching` is false (a headless player:
    /// its bus then carries no window watch at all).
    init(pipeline: UnsafeMutablePointer<GstElement>, videoSink: UnsafeMutablePointer<GstElement>, title: String,
         watching: Bool) {
        address = Mutex(watching ? UInt(bitPattern: tdm_gst_window_new(pipeline, videoSink, title)) : 0)
        self.title = Locked(title)
    }

    /// Whether a sink choice may ask for a window: not `headless`, nor `automatic` without a display.
    static func mayAsk(_ sink: GStreamerPlayer.Sink) -> Bool {
        switch sink {
        case .headless: return false
        case .description: return true
        case .automatic:
            let environment = ProcessInfo.processInfo.environment
            return !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        }
    }

    /// Runs `body` with the shim's window; nil once it is freed.
    func use<T: Sendable>(_ body: (OpaquePointer) -> T) -> T? {
        address.withLock { address in OpaquePointer(bitPattern: address).map(body) }
    }

    /// Destroys the X window and closes its connection; only once the pipeline is in the NULL state (no sink holds
    /// the window any more). Later calls do nothing.
    func free() {
        address.withLock { address in
            if let window = OpaquePointer(bitPattern: address) { tdm_gst_window_free(window) }
            address = 0
        }
    }
}
