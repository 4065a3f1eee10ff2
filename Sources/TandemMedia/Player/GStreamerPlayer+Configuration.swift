import TandemCore

extension GStreamerPlayer {
    /// Where a stream is rendered.
    public enum Sink: Sendable, Hashable {
        /// Real output when a display / sound server exists, otherwise `headless`.
        case automatic
        /// `fakesink sync=true`: renders on time into nothing (tests, benchmarks, servers).
        case headless
        /// Any gst-launch style bin description, e.g. `"pulsesink device=alsa_output.usb-…"`. Sinks in it that
        /// would not wait on the clock (fakesink's default, `sync=false`) are set to `sync=true`, and
        /// `GStreamerPlayer.sinkNotices` says so.
        case description(String)
    }

    /// How a player is built.
    public struct Configuration: Sendable {
        public var videoSink: Sink
        public var audioSink: Sink
        /// Audio sinks resynchronise when they drift further than this from the clock. GStreamer's default
        /// is 40 ms, far too loose for watching together.
        public var audioDriftTolerance: TimeSpan
        /// Audio sinks realign timestamps that jump by more than this; GStreamer's default is 40 ms.
        public var audioAlignmentThreshold: TimeSpan
        /// Calibration errors up to this size are slewed while playing; larger ones step.
        public var stepThreshold: TimeSpan
        /// How long a slew takes to absorb an error.
        public var slewDuration: TimeSpan
        /// Render records kept between drains.
        public var renderProbeCapacity: Int
        /// How long loading or preparing may take before it fails.
        public var prerollTimeout: TimeSpan
        /// Sinks sleep until this long before each buffer's release time and spin the rest, because timer
        /// wake-ups can be 0.1–1 ms late (virtual machines especially). Costs about this much CPU per buffer;
        /// 0 leaves waiting to GStreamer alone.
        public var preciseWait: TimeSpan
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
        /// Whether a rate change while playing is made in place, with GStreamer's instant rate change, where the
        /// item's pipeline supports it (`MediaInfo.changesRateInPlace`); off, every rate change stops, prerolls at
        /// the new rate and starts again. On by default; benchmarks turn it off to compare.
        public var changesRateInPlace = true
        /// The video window's title (`setWindowTitle` changes it), when the player owns the window (an X sink).
        public var windowTitle: String?

        public init(videoSink: Sink = .automatic, audioSink: Sink = .automatic,
                    audioDriftTolerance: TimeSpan = .milliseconds(5),
                    audioAlignmentThreshold: TimeSpan = .milliseconds(10),
                    stepThreshold: TimeSpan = .milliseconds(20), slewDuration: TimeSpan = .seconds(1),
                    renderProbeCapacity: Int = 8192, prerollTimeout: TimeSpan = .seconds(20),
                    preciseWait: TimeSpan = .zero) {
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
