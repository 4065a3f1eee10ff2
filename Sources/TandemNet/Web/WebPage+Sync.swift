extension WebPage {
    /// Following the group's timeline: scheduled starts at the group's session time, small errors corrected
    /// with playbackRate nudges, large ones with a seek; the error measured per presented frame with
    /// requestVideoFrameCallback (every 100 ms from currentTime for audio). Video frames are kept on the display
    /// refresh nearest the group's line (GridFollower, grid.js).
    static let syncScript = #"""
    "use strict";
    // Nudges take the rate at most 25 % off and aim to close the error within half a second.
    const SEEK_THRESHOLD = 250e6, DEADBAND = 4e6, MAX_NUDGE = 0.25, NUDGE_SECONDS = 0.5;

    class Follower {
      constructor(video, wire, events) {
        this.video = video; this.wire = wire; this.events = events;
        this.timeline = null; this.loaded = false; this.errors = []; this.recent = []; this.trace = [];
        this.timer = null; this.token = 0; this.frames = 0; this.corrections = { nudges: 0, seeks: 0 };
        this.startLatency = 60e6; this.measuringStart = false;
        // The display's refresh (60 Hz until measured) and the refresh grid follower for video frames.
        this.grid = new GridFollower(1e9 / 60);
        measureRefresh((refresh) => { this.grid.refresh = refresh; });
        this.video.addEventListener("ended", () => {
          const t = this.timeline;
          if (this.loaded && t && statusOf(t) === "playing") this.wire.sendMessage({ reachedEnd: { generation: t.generation } });
        });
        this.watchFrames();
      }

      /** The item time (ns) the group renders at session time `session` (ns). */
      expected(session) { const t = this.timeline; return t.anchorItemTime + (session - t.anchorSessionTime) * t.rate; }
      position() { return Math.round(this.video.currentTime * 1e9); }

      setLoaded(loaded) { this.loaded = loaded; if (loaded) this.apply(this.timeline); }
      /** Stops following at once (the media cannot play): nothing scheduled, nothing reported, the video paused. */
      halt() { this.loaded = false; this.applied = false; this.token += 1; clearTimeout(this.timer); this.video.pause(); }
      clockReady() { if (this.loaded && !this.applied) this.apply(this.timeline); }

      apply(timeline) {
        if (!timeline) return;
        if (this.timeline && timeline.generation < this.timeline.generation) return;
        // The same generation again (a welcome after a reconnect): already followed, nothing to redo.
        if (this.applied && this.timeline && timeline.generation === this.timeline.generation) return;
        const stopping = this.timeline && statusOf(this.timeline) === "playing" && !this.video.paused;
        this.timeline = timeline;
        if (!this.loaded || !this.wire.synchronised) { this.applied = false; return; }
        this.applied = true;
        this.token += 1; clearTimeout(this.timer); this.errors = [];
        const kind = statusOf(timeline);
        if (kind === "playing") return this.schedule(timeline);
        // Paused or waiting: stop, say how far we got past a waiting stop, preroll at the anchor, say so.
        if (kind === "waiting" && stopping && this.position() > timeline.anchorItemTime + 1e6) {
          this.wire.sendMessage({ renderedPast: { generation: timeline.generation, itemTime: this.position() } });
        }
        this.video.pause();
        this.video.playbackRate = timeline.rate;
        const token = this.token;
        this.seek(timeline.anchorItemTime, () => {
          if (token === this.token) this.wire.sendMessage({ prepared: { generation: timeline.generation } });
        });
      }

      /** Plays the line from where it will be a little ahead, starting at that session time exactly. */
      schedule(timeline) {
        const now = this.wire.sessionTime();
        // Prerolled at the anchor (the usual start): only play() itself takes time. Elsewhere a seek comes first,
        // so the page joins the line a little further on.
        const atAnchor = Math.abs(this.position() - timeline.anchorItemTime) < 2e6 && this.video.readyState >= 2;
        const startAt = Math.max(timeline.anchorSessionTime, now + (atAnchor ? this.startLatency + 10e6 : 350e6));
        const itemTime = this.expected(startAt);
        const token = this.token;
        this.video.pause();
        this.video.playbackRate = timeline.rate;
        this.grid.reset();
        this.seek(itemTime, () => {
          if (token !== this.token) return;
          // play() takes a moment to present its first frame: start that much early (learned from past starts).
          const wait = (this.wire.localTime(startAt) - localNanos() - this.startLatency) / 1e6;
          this.measuringStart = true;
          const go = () => {
            if (token !== this.token) return;
            this.errors = [];
            this.video.play().catch((e) => this.events.problem("the browser would not play: " + e.message
              + " (press Play once to allow it)"));
          };
          if (wait <= 0) go(); else this.timer = setTimeout(go, wait);
        });
      }

      seek(itemTime, then) {
        const target = Math.max(0, itemTime) / 1e9;
        if (Math.abs(this.video.currentTime - target) < 0.001 && this.video.readyState >= 2) { then(); return; }
        const done = () => { this.video.removeEventListener("seeked", done); then(); };
        this.video.addEventListener("seeked", done);
        this.video.currentTime = target;
      }

      /** Measures every presented frame against the line and corrects: nudge the rate, or seek when far off. */
      watchFrames() {
        // A shown frame's error comes in steps of a display refresh: the browser shows each video frame on a
        // refresh, and keeps a cadence of refreshes per frame once it has one. The grid follower moves the frames
        // to the refresh nearest the line; audio, which has no frames, is nudged with a dead band.
        const durations = [];
        let last = null;
        const frameDuration = (meta) => {
          if (last && meta.presentedFrames === last.presentedFrames + 1 && meta.mediaTime > last.mediaTime) {
            durations.push((meta.mediaTime - last.mediaTime) * 1e9); if (durations.length > 30) durations.shift();
          }
          last = meta;
          return durations.length ? Math.min(...durations) : 0;
        };
        const measure = (displayedAtLocal, mediaTime, frame = null) => {
          // Every frame goes to the grid follower; the median of six decides the start latency and seeks.
          const t = this.timeline;
          if (!t || statusOf(t) !== "playing" || this.video.paused || !this.wire.synchronised) return;
          const session = this.wire.sessionTime(displayedAtLocal);
          if (session < t.anchorSessionTime) return;
          const error = mediaTime * 1e9 - this.expected(session);
          this.frames += 1;
          this.recent.push(Math.abs(error)); if (this.recent.length > 2000) this.recent.shift();
          // Also the frame's media time: a benchmark maps the display time to the system clock itself.
          this.trace.push([displayedAtLocal, error, mediaTime]); if (this.trace.length > 20000) this.trace.shift();
          this.errors.push(error); if (this.errors.length > 6) this.errors.shift();
          const nudged = frame === null ? null : this.grid.frame(error, displayedAtLocal, t.rate, frame / t.rate);
          if (this.errors.length < 6) { if (nudged !== null) this.setNudge(t, nudged); return; }
          const median = this.errors.slice().sort((a, b) => a - b)[3];
          this.lastError = median; this.lastErrorAt = localNanos();
          if (this.measuringStart) {
            // The first frames after a start: behind by e means play() needed e longer than assumed.
            this.measuringStart = false;
            if (Math.abs(median) < SEEK_THRESHOLD) {
              this.startLatency = Math.max(0, Math.min(150e6, this.startLatency - median * 0.7));
            }
          }
          if (Math.abs(median) > SEEK_THRESHOLD) {
            this.corrections.seeks += 1; this.token += 1; clearTimeout(this.timer); this.errors = [];
            return this.schedule(t);
          }
          if (nudged !== null) { this.setNudge(t, nudged); return; }
          const nudge = Math.abs(median) < DEADBAND ? 0
            : Math.max(-MAX_NUDGE, Math.min(MAX_NUDGE, -median / (NUDGE_SECONDS * 1e9)));
          if (this.setNudge(t, nudge)) this.errors = [];
        };
        if ("requestVideoFrameCallback" in HTMLVideoElement.prototype) {
          const onFrame = (now, meta) => {
            measure(Math.round(meta.expectedDisplayTime * 1e6), meta.mediaTime, frameDuration(meta));
            this.video.requestVideoFrameCallback(onFrame);
          };
          this.video.requestVideoFrameCallback(onFrame);
        }
        // Audio has no frames to watch: its position is read ten times a second instead.
        setInterval(() => { if (!this.video.videoWidth) measure(localNanos(), this.video.currentTime); }, 100);
      }

      /** Plays at the group's rate nudged by `nudge` (a fraction); true when that changed the rate. */
      setNudge(timeline, nudge) {
        const rate = timeline.rate * (1 + nudge);
        if (Math.abs(this.video.playbackRate - rate) <= 1e-4) return false;
        if (nudge !== 0) this.corrections.nudges += 1;
        this.video.playbackRate = rate;
        return true;
      }

      /** The latest measured offset from the line (ns, positive: ahead) while playing and measuring, else null:
       *  what the page reports to the group in its link reports. */
      currentOffset() {
        const t = this.timeline;
        if (!t || statusOf(t) !== "playing" || this.video.paused || this.lastErrorAt === undefined
            || localNanos() - this.lastErrorAt > 1.5e9) return null;
        return this.lastError;
      }

      /** After a reconnect the server has forgotten `prepared`: say it again when stopped at the anchor. */
      reportPreparedAgain() {
        const t = this.timeline;
        if (!this.applied || !t || statusOf(t) === "playing" || this.video.seeking) return;
        if (Math.abs(this.position() - t.anchorItemTime) < 2e6) this.wire.sendMessage({ prepared: { generation: t.generation } });
      }

      /** Render offsets so far (ns): p50, p99, max of |error|, and the frames measured. */
      stats() {
        const sorted = this.recent.slice().sort((a, b) => a - b);
        const at = (q) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
        return { frames: this.frames, p50: at(0.5), p99: at(0.99), max: sorted.length ? sorted[sorted.length - 1] : null,
                 last: this.lastError ?? null, nudges: this.corrections.nudges, seeks: this.corrections.seeks };
      }
    }

    /** "playing", "paused" or "waiting". */
    function statusOf(timeline) { return Object.keys(timeline.status)[0]; }
    """#
}
