import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import TandemCore

// The sinks: built from a `Sink` choice, and watched by the render probe (at once, or when they appear late).
extension GStreamerPlayer {
    static func makeSink(_ sink: Sink, kind: RenderRecord.StreamKind) throws(PlaybackError) -> UnsafeMutablePointer<GstElement> {
        let description: String
        switch sink {
        case .headless:
            description = "fakesink sync=true"
        case .description(let text):
            description = text
        case .automatic:
            let environment = ProcessInfo.processInfo.environment
            switch kind {
            case .video:
                let display = environment["DISPLAY"].map { !$0.isEmpty } ?? false
                    || environment["WAYLAND_DISPLAY"].map { !$0.isEmpty } ?? false
                description = display ? "autovideosink" : "fakesink sync=true"
            case .audio:
                var sound = environment["PULSE_SERVER"].map { !$0.isEmpty } ?? false
                if !sound, let runtime = environment["XDG_RUNTIME_DIR"] {
                    sound = FileManager.default.fileExists(atPath: runtime + "/pulse/native")
                }
                description = sound ? "autoaudiosink" : "fakesink sync=true"
            }
        }
        var message: UnsafeMutablePointer<CChar>?
        var missing: Int32 = 0
        guard let element = tdm_gst_bin_from_description(description, &message, &missing) else {
            let text = GStreamer.take(message) ?? "cannot build '\(description)'"
            if missing != 0 {
                throw .missingPlugin(detail: "no GStreamer element '\(text)' (\(kind) sink '\(description)')",
                                     debianPackage: GStreamer.debianPackage(providing: text))
            }
            throw .engineFailure("invalid \(kind) sink '\(description)': \(text)")
        }
        return element
    }

    /// Attaches the render probe to the base sinks inside `sink`; true when it found any.
    static func attachProbe(_ probe: RenderProbe, to sink: UnsafeMutablePointer<GstElement>,
                            kind: RenderRecord.StreamKind) -> Bool {
        let cKind = kind == .audio ? Int32(TDM_GST_KIND_AUDIO) : Int32(TDM_GST_KIND_VIDEO)
        return tdm_gst_render_probe_attach(probe.pointer, sink, cKind) > 0
    }

    /// Sinks such as autovideosink create their real sink only when they start; attach the probe then.
    func attachLateSinks() {
        let attached = state.withLock { $0.probeAttached }
        var added = attached
        if !attached.contains(.video), Self.attachProbe(renderProbe, to: handles.videoSink, kind: .video) {
            added.insert(.video)
        }
        if !attached.contains(.audio), Self.attachProbe(renderProbe, to: handles.audioSink, kind: .audio) {
            added.insert(.audio)
        }
        state.withLock { $0.probeAttached = added }
    }
}
