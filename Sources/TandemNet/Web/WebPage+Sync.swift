extension WebPage {
    /// Following the group's timeline: scheduled starts at the group's session time, small errors corrected
    /// with playbackRate nudges, large ones with a seek; the error measured per presented frame with
    /// requestVideoFrameCallback (every 100 ms from currentTime for audio). Video frames are kept on the display
    /// refresh nearest the group's line (GridFollower, grid.js); a video's start is steered onto it (steer.js).
    static let syncScript = #"""
    "use strict";
    // Nudges take the rate at most 25 % off and aim to close the error within half a second.
    const SEEK_THRESHOLD = 250e6, DEADBAND = 4e6, MAX_NUDGE = 0.25, NUDGE_SECONDS = 0.5;
    // A video's start is steered onto the line (`steer`): 4 % off the group's rate, from a start aimed 8 ms late (a
    // slow steer ending early by how far the media clock runs on after a change, 100 ms at that rate); a start more
    // than 45 ms off is left to the nudges and seeks, and a steer ends 1.5 s after its first frame whatever it reached.
    const STEER = 0.04, STEER_AIM = 8e6, STEER_RUNON = 100e6, STEER_MAX = 45e6, STEER_LONGEST = 1.5e9;
    // How much longer play() is taken to need just after a short seek ahead, until such a start was measured.
    const HOP_PLAY = 15e6;
    // Common frame rates, to which a measured frame length is taken.
    const FRAME_RATES = [24000 / 1001, 24, 25, 30000 / 1001, 30, 48, 50, 60000 / 1001, 60, 100, 120];

    class Follower {
      constructor(video, wire, events) {
        this.video = video; this.wire = wire; this.events = events;
        this.timeline = null; this.loaded = false; this.errors = []; this.recent = []; this.trace = [];
        this.timer = null; this.token = 0; this.frames = 0; this.corrections = { nudges: 0, seeks: 0, rephases: 0 };
        this.startLatency = 60e6; this.startLate = 0; this.measuringStart = false; this.clockOffsets = []; this.rephasing = null; this.steering = null; this.starts = 0;
        // play()'s latency just after a short seek ahead (`latencyOf`), and whether the last start came so.
        this.hopLatency = null; this.startAfterHop = false;
        // How long the last seeks took (ns), for the preroll the page needs (`prerollEstimate`); and the last short
        // seeks ahead from a prerolled anchor (`hopEstimate`).
        this.seekTimes = []; this.hopTimes = [];
        // How early a swing's last part ends (ns of media clock): learned from where the clock came to rest.
        this.rephaseLead = GridFollower.REPHASE_SWING * GridFollower.REPHASE_LATENCY; this.rephaseCheck = null;
        // The display's refresh (60 Hz until measured) and the refresh grid follower for video frames.
        this.grid = new GridFollower(1e9 / 60);
        this.refreshMeasured = false; this.lastRefresh = null; this.frameGrid = null; this.fineRefresh = null;
        // Over 20 animation frames (a third of a second at 60 Hz), so that a page that loads at once has reported
        // its display before the group's first start; the report refines it over longer spans.
        measureRefresh((refresh) => { this.grid.refresh = refresh; this.refreshMeasured = true; this.wire.reportLink(); }, 20);
        // The latest refresh (animation frames come at the display's refreshes, where video frames are shown): what
        // the page tells the authority, so that new lines put their frames on these refreshes. The first is kept
        // too: over many refreshes their interval is known finer than the first measure's.
        this.firstRefresh = null;
        const refreshed = (now) => {
          this.lastRefresh = Math.round(now * 1e6);
          if (this.firstRefresh === null) this.firstRefresh = this.lastRefresh;
          requestAnimationFrame(refreshed);
        };
        requestAnimationFrame(refreshed);
        this.video.addEventListener("ended", () => {
          const t = this.timeline;
          if (this.loaded && t && statusOf(t) === "playing") this.wire.sendMessage({ reachedEnd: { generation: t.generation } });
        });
        this.watchFrames();
      }

      /** The item time (ns) the group renders at session time `session` (ns). */
      expected(session) { const t = this.timeline; return t.anchorItemTime + (session - t.anchorSessionTime) * t.rate; }
      position() { return Math.round(this.video.currentTime * 1e9); }

      setLoaded(loaded) { this.loaded = loaded; this.frameGrid = null; this.starts = 0; if (loaded) this.apply(this.timeline); }
      /** Stops following at once (the media cannot play): nothing scheduled, nothing reported, the video paused. */
      halt() { this.loaded = false; this.applied = false; this.token += 1; clearTimeout(this.timer); this.video.pause(); }
      clockReady() { if (this.loaded && !this.applied) this.apply(this.timeline); }

      apply(timeline) {
        if (!timeline) return;
        if (this.timeline && timeline.generation < this.timeline.generation) return;
        // The same generation again (a welcome after a reconnect): already followed, nothing to redo.
        if (this.applied && this.timeline && timeline.generation === this.timeline.generation) return;
        const stopping = this.timeline && statusOf(this.timeline) === "playing" && !this.video.paused;
        // A stop on the line the page was playing (a stall, a rate change), not a seek, which names an item time
        // of its own: only such a stop can have been played past.
        const onLine = stopping && Math.abs(this.expected(timeline.anchorSessionTime) - timeline.anchorItemTime) <= 1e6;
        this.timeline = timeline;
        if (!this.loaded || !this.wire.synchronised) { this.applied = false; return; }
        this.applied = true;
        this.token += 1; clearTimeout(this.timer); this.errors = [];
        const kind = statusOf(timeline);
        if (kind === "playing") return this.schedule(timeline);
        // Paused or waiting: stop, say how far we got past a waiting stop, preroll at the anchor, say so.
        if (kind === "waiting" && onLine && this.position() > timeline.anchorItemTime + 1e6) {
          this.wire.sendMessage({ renderedPast: { generation: timeline.generation, itemTime: this.position() } });
        }
        this.video.pause();
        this.video.playbackRate = timeline.rate;
        const token = this.token;
        // Stopped from playing, it seeks even where it already stands: the play() that follows then takes the
        // latency the page learned, which is play()'s after a seek (without one it came 100-126 ms sooner).
        this.seek(timeline.anchorItemTime, false, () => {
          if (token === this.token) this.wire.sendMessage({ prepared: { generation: timeline.generation } });
        }, stopping);
      }

      /** Plays the line from where it will be a little ahead, starting at that session time exactly. */
      schedule(timeline) {
        const now = this.wire.sessionTime();
        // Prerolled at the anchor (the usual start): only play() itself takes time. Elsewhere a seek comes first,
        // so the page joins the line a little further on.
        const atAnchor = Math.abs(this.position() - timeline.anchorItemTime) < 2e6 && this.video.readyState >= 2;
        let startAt = Math.max(timeline.anchorSessionTime, now + (atAnchor ? this.startLatency + 10e6
          : (this.prerollEstimate() ?? 350e6)));
        // Prerolled at the anchor, but the group starts too soon for play() to make it (a seek while playing restarts
        // the group as soon as everyone has prerolled): a short seek ahead comes first, and it takes time too;
        // without that time the start would come as much late.
        const hop = atAnchor && startAt > timeline.anchorSessionTime;
        const latency = this.latencyOf(hop);
        if (hop) startAt += this.hopEstimate() + latency - this.startLatency;
        const itemTime = this.expected(startAt);
        const token = this.token;
        this.video.pause();
        this.video.playbackRate = timeline.rate;
        this.grid.reset(); this.clockOffsets = []; this.rephasing = null; this.rephaseCheck = null; this.steering = null;
        this.steeredStart = false; this.steeredAgain = false;
        this.seek(itemTime, hop, () => {
          if (token !== this.token) return;
          // play() takes a moment to present its first frame: start that much early (learned from past starts);
          // a video a little late, to be steered onto the line.
          const steered = this.video.videoWidth > 0 && this.starts > 0;
          const aim = steered ? STEER_AIM : 0;
          const wait = (this.wire.localTime(startAt) - localNanos() - latency + aim) / 1e6;
          // A seek that took longer than planned makes the start late by as much: not play()'s latency.
          this.startLate = Math.max(0, -wait * 1e6);
          this.measuringStart = true; this.startAfterHop = hop;
          const go = () => {
            if (token !== this.token) return;
            this.errors = [];
            // A video starts off the group's rate, so that Chromium takes up no cadence yet (see `steer`); not the
            // first start of a file, whose latency is not known yet (a join is in sync sooner at the group's rate).
            this.starts += 1;
            if (steered) {
              this.steering = this.newSteer(token, null);
              this.video.playbackRate = timeline.rate * (1 + STEER);
            }
            this.video.play().catch((e) => this.events.problem("the browser would not play: " + e.message
              + " (press Play once to allow it)"));
          };
          if (wait <= 0) go(); else this.timer = setTimeout(go, wait);
        });
      }

      /** play()'s latency (ns): from a prerolled anchor, or just after a short seek ahead (`hop`), where it took
       *  12–20 ms longer in traced runs (80–85 ms against 92–100 ms): the first such start, planned with the
       *  other, came 35 ms behind in 6 runs of 23. Learned apart, HOP_PLAY more than the other until measured. */
      latencyOf(hop) {
        return hop ? this.hopLatency ?? this.startLatency + HOP_PLAY : this.startLatency;
      }

      /** Seeks to `itemTime` (ns), then calls `then`; the time it took is kept (a short seek ahead from a prerolled
       *  anchor, `hop`, apart as well). Where the video already stands only when `always`. */
      seek(itemTime, hop, then, always = false) {
        const target = Math.max(0, itemTime) / 1e9;
        if (!always && Math.abs(this.video.currentTime - target) < 0.001 && this.video.readyState >= 2) {
          then(); return;
        }
        const began = localNanos();
        const done = () => {
          this.video.removeEventListener("seeked", done);
          const took = localNanos() - began;
          this.seekTimes.push(took); if (this.seekTimes.length > 6) this.seekTimes.shift();
          if (hop) { this.hopTimes.push(took); if (this.hopTimes.length > 4) this.hopTimes.shift(); }
          then();
        };
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
            // Where the media's frames fall, for the authority: their length (the mean of frames one after the
            // other, whose timestamps may be rounded to the millisecond, taken to a common frame rate within
            // 0.5 %) and the media time of this one.
            // Frames skipped or a seek give the odd longer step: only steps within a quarter of the median count.
            // A length that is not a common rate's is not sent.
            const typical = median(durations);
            const steps = durations.filter((d) => Math.abs(d - typical) <= typical / 4);
            if (steps.length >= 10) {
              const mean = steps.reduce((a, b) => a + b, 0) / steps.length;
              const common = FRAME_RATES.map((fps) => 1e9 / fps).find((d) => Math.abs(d - mean) <= mean * 0.005);
              const known = this.frameGrid !== null;
              this.frameGrid = common === undefined ? null
                : { frame: Math.round(common), frameAt: Math.round(meta.mediaTime * 1e9) };
              if (!known && this.frameGrid !== null) this.wire.reportLink();
            }
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
          // Also the frame's media time (a benchmark maps the display time to the system clock itself), the media
          // clock's latest offset and the rate.
          this.trace.push([displayedAtLocal, error, mediaTime, this.clockOffsets[this.clockOffsets.length - 1] ?? null,
                           this.video.playbackRate]);
          if (this.trace.length > 20000) this.trace.shift();
          this.errors.push(error); if (this.errors.length > 6) this.errors.shift();
          // Changing the phase of the refreshes: the rate is the swing's until it is done.
          if (this.rephasing) { this.rephaseStep(t, displayedAtLocal); return; }
          // Steering a start onto the line: the rate is the steer's until it is done.
          if (this.steering && this.steer(t)) return;
          if (this.measuringStart && this.errors.length >= 6) this.learnStartLatency();
          const nudged = frame === null ? null : this.grid.frame(error, displayedAtLocal, t.rate, frame / t.rate);
          const target = frame === null ? null : this.grid.rephaseTarget(displayedAtLocal);
          if (target !== null && this.rephase(t, target)) return;
          if (this.errors.length < 6) { if (nudged !== null) this.setNudge(t, nudged); return; }
          const median = this.errors.slice().sort((a, b) => a - b)[3];
          this.lastError = median; this.lastErrorAt = localNanos();
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
            this.sampleClock();
            measure(Math.round(meta.expectedDisplayTime * 1e6), meta.mediaTime, frameDuration(meta));
            this.video.requestVideoFrameCallback(onFrame);
          };
          this.video.requestVideoFrameCallback(onFrame);
        }
        // Audio has no frames to watch: its position is read ten times a second instead.
        setInterval(() => { if (!this.video.videoWidth) measure(localNanos(), this.video.currentTime); }, 100);
      }

      /** The first frames after a start: behind by e means play() needed e longer than assumed. Where the frames
       *  come with media clock readings, those say it: the frames' own errors also carry where the browser's
       *  phase of the refreshes put them, up to half a frame either way. Less what a seek that took longer than
       *  planned made it late (`startLate`). */
      learnStartLatency(given = null) {
        this.measuringStart = false;
        const offsets = this.clockOffsets.slice(-4);
        // `given`: how late the media clock started against where the start was aimed (a steered start's).
        const late = (given !== null ? given
          : offsets.length >= 3 ? median(offsets) : this.errors.slice().sort((a, b) => a - b)[3]) + this.startLate;
        // 70 % of it; all of it from the first start after a short seek ahead, where play() takes longer (its own
        // figure, `latencyOf`).
        if (Math.abs(late) < SEEK_THRESHOLD) {
          const learned = (was, first) => Math.max(0, Math.min(150e6, was - late * (first ? 1 : 0.7)));
          if (this.startAfterHop) this.hopLatency = learned(this.latencyOf(true), this.hopLatency === null);
          else this.startLatency = learned(this.startLatency, false);
        }
      }

      /** Reads where the media clock is against the line (ns, positive: ahead), keeping the last few readings
       *  (one per frame). Where the browser keeps no cadence a frame shows on the refresh nearest the time this
       *  clock reaches it, so this is where a new phase puts the frames. */
      sampleClock() {
        const t = this.timeline;
        if (!t || statusOf(t) !== "playing" || this.video.paused || !this.wire.synchronised) return;
        const position = this.video.currentTime * 1e9, at = localNanos();
        this.clockOffsets.push(position - this.expected(this.wire.sessionTime(at)));
        if (this.clockOffsets.length > 5) this.clockOffsets.shift();
        // After a swing, where the media clock came to rest against where it was to: the next swing ends half
        // that much earlier (past it) or later (short of it); Chromium's clock follows a new rate 50–100 ms late,
        // not the same each time.
        const check = this.rephaseCheck;
        if (check && check.token === this.token && this.clockOffsets.length === 5) {
          const short = median(this.clockOffsets) - check.target;
          this.rephaseLead = Math.max(0, Math.min(40e6, this.rephaseLead - short / 2));
          this.rephaseCheck = null;
        } else if (check && check.token !== this.token) this.rephaseCheck = null;
        if (this.rephasing) this.rephasing.readings.push([at, this.clockOffsets[this.clockOffsets.length - 1]]);
      }

      /** Moves the frames to the other phase of the refreshes (GridFollower.rephaseTarget): 25 % fast for a third
       *  of a second and until the media clock is past `target` (ns from the line) by as much as that, then 25 %
       *  slow until the clock is there; then the group's rate, where Chromium takes up its cadence again on the
       *  refreshes the frames then fall on. Fast first, whichever way the target is: Chromium gives up its cadence
       *  for a video played faster than its refreshes can show at that cadence, and kept it through 330 ms at 75 %.
       *  Steered by the media clock's readings, frame by frame (it follows a new rate late and unevenly). Cut short
       *  once Chromium gives up its cadence (`rephaseBroken`). True when under way. */
      rephase(timeline, target) {
        // Without enough readings of the media clock, or too far to swing to yet (a start whose latency was
        // misjudged): asked again on the next frame, as the nudges bring the clock nearer; the try is not used up.
        if (this.clockOffsets.length < 3 || Math.abs(target - median(this.clockOffsets)) > 2 * this.grid.step) {
          this.grid.rephases -= 1;
          return false;
        }
        // Just after a steered start, the frames a refresh ahead (the clock ran on past where the steer ended):
        // steered again, once, instead of the swing, which takes them 65–90 ms off the line. Leaving the group's rate
        // throws the clock back about a refresh, and the steer brings it on to where it aims.
        const clock = median(this.clockOffsets.slice(-3));
        if (this.steeredStart && !this.steeredAgain && target < clock) {
          this.steeredAgain = true; this.corrections.rephases += 1;
          this.steering = this.newSteer(this.token, clock);
          this.video.playbackRate = timeline.rate * (1 + STEER);
          return true;
        }
        const at = localNanos();
        this.rephasing = { target, stage: 1, since: at, began: at, readings: [], ending: false };
        this.corrections.rephases += 1;
        this.video.playbackRate = timeline.rate * (1 + GridFollower.REPHASE_SWING);
        return true;
      }

      /** A frame during a change of phase: the next part of the swing, or its end, timed between frames from the
       *  media clock's readings of this part, each carried to now at the swing's rate, taking their median (single
       *  readings jump by up to 20 ms). */
      rephaseStep(timeline, at) {
        const r = this.rephasing, swing = GridFollower.REPHASE_SWING * timeline.rate, leg = GridFollower.REPHASE_LEG;
        // The media clock goes on at the old rate for a while after a change (about 60 ms in Chromium): end a
        // part that much early (the way back by what earlier swings showed).
        const lead = r.stage === 1 ? swing * GridFollower.REPHASE_LATENCY : this.rephaseLead;
        const readings = r.readings.filter(([t]) => t >= r.since + GridFollower.REPHASE_LATENCY);
        if (r.ending || at - r.began > 3 * leg + 1e9) { if (!r.ending) this.rephaseDone(timeline); return; }
        if (r.stage === 1 && this.rephaseBroken(timeline, r)) return;
        if (at - r.since < (r.stage === 1 ? leg : leg / 2) || readings.length < 4) return;
        const now = localNanos(), slope = (r.stage === 1 ? 1 : -1) * swing;
        const where = median(readings.slice(-5).map(([t, y]) => y + slope * (now - t)));
        const past = where - r.target;
        // Where each part ends: the way back's length past the target (already there where the target was behind
        // the clock), then the target itself.
        const wait = r.stage === 1 ? (swing * leg - lead - past) / swing : (past - lead) / swing;
        if (wait > 40e6) return;
        const token = this.token, stage = r.stage;
        const next = () => {
          if (token !== this.token || this.rephasing !== r || r.stage !== stage) return;
          if (stage === 1) {
            r.stage = 2; r.since = localNanos();
            this.video.playbackRate = timeline.rate * (1 - GridFollower.REPHASE_SWING);
          } else {
            this.rephaseDone(timeline);
          }
        };
        if (wait <= 0) next(); else { if (stage === 2) r.ending = true; setTimeout(next, wait / 1e6); }
      }

      /** In the fast part of a swing, a frame on the target's phase (`GridFollower.swingBroken`): Chromium gave up
       *  its cadence, seen 0.12–0.22 s into it in most swings. So the swing need not go on to the end of its leg,
       *  which takes the frames 65–90 ms off the line: the page steers from here as after a start (`steer`), a few
       *  per cent off the group's rate, where Chromium takes up no cadence and the frames follow the media clock a
       *  refresh at a time. (Turning the swing back at once, 25 % slow, from a frame past the target took the
       *  clock 35 ms under it in a trace: the way back is timed for the whole leg.) True once handed over. */
      rephaseBroken(timeline, r) {
        if (!this.errors.length || !this.grid.swingBroken(this.errors[this.errors.length - 1], r.target)) return false;
        // Its readings count from where the clock was thrown back, or from 0.2 s on (as when steered again): just
        // after the swing they lag, and a steer that judged by them ended at once, a refresh ahead (traced).
        const clock = median(this.clockOffsets.slice(-3));
        this.rephasing = null; this.clockOffsets = []; this.errors = [];
        this.steering = this.newSteer(this.token, clock, true);
        // Slow until it decides: the clock runs on at the swing's rate for a while (fast on, the frames went a
        // refresh past the target while the steer waited, in most traced swings).
        this.video.playbackRate = timeline.rate * (1 - STEER);
        return true;
      }

      rephaseDone(timeline) {
        const r = this.rephasing;
        if (r && r.stage === 2) this.rephaseCheck = { target: r.target, token: this.token };
        this.rephasing = null; this.errors = []; this.clockOffsets = [];
        this.grid.rephased();
        this.setNudge(timeline, this.grid.holding());
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

      /** The preroll this page needs (ns): from a timeline to playing at its start, the slowest of its last six
       *  seeks, play()'s own latency (`startLatency`) and 10 ms; null until three seeks were timed (the join's
       *  300 ms stands until then). Sent in link reports (`linkReport.prerollEstimate`), so that the authority
       *  schedules a seek for what this page takes rather than 300 ms (the authority adds its start margin); a start
       *  that finds it slower joins the line that much further on. */
      prerollEstimate() {
        if (this.seekTimes.length < 3) return null;
        const needs = Math.max(...this.seekTimes) + this.startLatency + 10e6;
        return Math.round(Math.min(1e9, Math.max(30e6, needs)));
      }

      /** How long before a start from where it stands prerolled the page needs the timeline
       *  (`linkReport.startLatency`): play()'s latency and the 10 ms `schedule` allows, else it seeks ahead. */
      startLead() { return Math.round(this.startLatency + 10e6); }

      /** Where the display refreshes and the media's frames fall (`linkReport.display`): the refresh interval, the
       *  session time of the latest refresh and, once frames have been shown, their length and the media time of
       *  one. Null until the refresh is measured and the clock synchronised. */
      displayGrid() {
        if (!this.refreshMeasured || this.lastRefresh === null || !this.wire.synchronised) return null;
        // Over many refreshes (more than two seconds of them) the interval is known finer: each report counts the
        // refreshes since the first by the last report's figure, which stays exact as the span grows a second at a
        // time. Unless the display changed since (then the first measure stands until the page is loaded again).
        let refresh = this.grid.refresh;
        const span = this.lastRefresh - this.firstRefresh;
        if (span > 2e9) {
          const finer = span / Math.round(span / (this.fineRefresh ?? refresh));
          if (Math.abs(finer - refresh) <= refresh * 0.005) { refresh = finer; this.fineRefresh = finer; }
        }
        const grid = { refresh: Math.round(refresh), refreshAt: Math.round(this.wire.sessionTime(this.lastRefresh)) };
        if (this.frameGrid) Object.assign(grid, this.frameGrid);
        return grid;
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
                 last: this.lastError ?? null, nudges: this.corrections.nudges, seeks: this.corrections.seeks,
                 rephases: this.corrections.rephases };
      }
    }

    /** "playing", "paused" or "waiting". */
    function statusOf(timeline) { return Object.keys(timeline.status)[0]; }
    """#
}
