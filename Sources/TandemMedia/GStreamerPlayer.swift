import CTandemGStreamerShim
import TandemCore

/// Initialises GStreamer for this process.
public enum GStreamer {
    public static func initialize() -> Bool { tdm_gst_init() != 0 }
}
