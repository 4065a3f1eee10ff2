import TandemCore

extension GStreamerPlayer {
    /// Where a stream is rendered.
    public enum Sink: Sendable, Hashable {
        /// Real output when a display / sound server exists, otherwise `headless`.
        case automatic
        /// `fakesink sync=true`: renders on time into nothing (tests, benchmarks, servers).
        case headless
        /// Any gst-launch style bin description, e.g. `"pulsesink device=alsa_output.usb-…"`.
        case description(String)
    }

    /// How a player is built.
    public struct Configuration: Sendable {
        public var videoSink: Sink
        public var audioSink: Sink
        /// Audio sinks resynchronise when they drift further than this from the clock (ns). GStreamer's default
        /// is 40 ms, far too loose for watching together.
        public var audioDriftTolerance: Int64
        /// Audio sinks realign timestamps that jump by more than this (ns); GStreamer's default is 40 ms.
        public var audioAlignmentThreshold: Int64
        /// Calibration errors up to this size are slewed while playing; larger ones step (ns).
        public var stepThreshold: Int64
        /// How long a slew takes to absorb an error (ns).
        public var slewDuration: Int64
        /// Render records kept between drains.
        public var renderProbeCapacity: Int
        /// How long loading or preparing may take before it fails (ns).
        public var prerollTimeout: Int64
        /// Sinks sleep until this long before each buffer's release time and spin the rest (ns), because timer
        /// wake-ups can be 0.1–1 ms late (virtual machines especially). Costs about this much CPU per buffer;
        /// 0 leaves waiting to GStreamer alone.
        public var preciseWait: Int64
        /// An on-screen display drawn on the video (`setOverlayText`) and key presses from the video window
        /// (`windowKeys`): a `textoverlay` as playbin's video filter. Off by default (benchmarks, servers).
        public var overlay = false
        /// A subtitle file (SRT, WebVTT, SubViewer, SSA/ASS as text, …) shown over the video in sync, from the
        /// next load on.
        public var subtitleFile: String?
        /// The font subtitles are drawn in (a Pango font description).
        public var subtitleFont = "Sans 24"
        /// The audio track to play after each load (0-based), when the item has it.
        public var preferredAudioTrack: Int?
        /// The subtitle track to show after each load (0-based, as `subtitleTrackCount` counts), when it exists.
        public var preferredSubtitleTrack: Int?

        public init(videoSink: Sink = .automatic, audioSink: Sink = .automatic,
                    audioDriftTolerance: Int64 = Nanos.milliseconds(5),
                    audioAlignmentThreshold: Int64 = Nanos.milliseconds(10),
                    stepThreshold: Int64 = Nanos.milliseconds(20), slewDuration: Int64 = Nanos.seconds(1),
                    renderProbeCapacity: Int = 8192, prerollTimeout: Int64 = Nanos.seconds(20),
                    preciseWait: Int64 = 0) {
            self.videoSink = videoSink
            self.audioSink = audioSink
            self.audioDriftTolerance = audioDriftTolerance
            self.audioAlignmentThreshold = audioAlignmentThreshold
            self.stepThreshold = stepThreshold
            self.slewDuration = slewDuration
            self.renderProbeCapacity = renderProbeCapacity
            self.prerollTimeout = prerollTimeout
            self.preciseWait = preciseWait
        }

        /// Both streams rendered by `fakesink sync=true`.
        public static var headless: Configuration { Configuration(videoSink: .headless, audioSink: .headless) }
    }
}
