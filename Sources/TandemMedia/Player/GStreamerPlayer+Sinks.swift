import CTandemGStreamer
import CTandemGStreamerShim
import Foundation
import TandemCore

// The sinks: built from a `Sink` choice, and watched by the render probe (at once, or when they appear late).
extension GStreamerPlayer {
    /// The gst-launch description a `Sink` choice stands for.
    static func sinkDescription(_ sink: Sink, kind: RenderRecord.StreamKind) -> String {
        switch sink {
        case .headless:
            return "fakesink sync=true"
        case .description(let text):
            return text
        case .automatic:
            let environment = ProcessInfo.processInfo.environment
            switch kind {
            case .video:
                let display = environment["DISPLAY"].map { !$0.isEmpty } ?? false
                    || environment["WAYLAND_DISPLAY"].map { !$0.isEmpty } ?? false
                return display ? "autovideosink" : "fakesink sync=true"
            case .audio:
                var sound = environment["PULSE_SERVER"].map { !$0.isEmpty } ?? false
                if !sound, let runtime = environment["XDG_RUNTIME_DIR"] {
                    sound = FileManager.default.fileExists(atPath: runtime + "/pulse/native")
                }
                return sound ? "autoaudiosink" : "fakesink sync=true"
            }
        }
    }

    /// Builds the sink `description` describes, every sink in it waiting on the clock (see `syncToClock`).
    static func makeSink(_ description: String,
                         kind: RenderRecord.StreamKind) throws(PlaybackError) -> UnsafeMutablePointer<GstElement> {
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

    /// Makes every sink in `sink` wait on the clock, and says so when one did not.
    ///
    /// A sink with sync=false (fakesink's default, or the user's own choice) renders as fast as data arrives: its
    /// branch runs ahead of the clock, and the pipeline's position — what this peer reports to the group and
    /// corrects against — with it, so the peer would resynchronise again and again and a pause would land far
    /// ahead of the picture. Setting sync=true keeps the sink the user chose and puts it on the group's time.
    /// - Returns: the notice for the person (nil when every sink already waited on the clock).
    static func syncToClock(_ sink: UnsafeMutablePointer<GstElement>, kind: RenderRecord.StreamKind,
                            description: String) -> String? {
        var changed: UnsafeMutablePointer<CChar>?
        guard tdm_gst_sinks_force_sync(sink, &changed) > 0, let names = GStreamer.take(changed) else { return nil }
        var seen = Set<Substring>()
        let elements = names.split(separator: "\n").filter { seen.insert($0).inserted }.joined(separator: ", ")
        let told = description.range(of: #"(^|[\s!])sync\s*=\s*(false|no|0)\b"#,
                                     options: [.regularExpression, .caseInsensitive]) != nil
        let what = told ? "was told not to sync to the clock (sync=false)" : "did not sync to the clock"
        return "the \(kind) sink '\(description)' \(what); Tandem set sync=true on \(elements) "
            + "(a sink that runs ahead of the clock puts this player ahead of the group)"
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
