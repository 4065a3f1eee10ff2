extension WebPage {
    /// Which display refresh the page's frames land on. A browser shows each video frame on a refresh of the
    /// display, so a frame's error from the group's line can only be one of a set of values a step apart: a
    /// frame's worth of refreshes (Chromium shows a 30 fps video on every second refresh of a 60 Hz display, on a
    /// phase that it keeps through pauses and nudges of up to 15 %, so its values are 33.3 ms apart; 60 fps media
    /// on the same display can use every refresh, 16.7 ms). The best value is within half a step. The page holds
    /// any error within half a step; past that it nudges the rate (2 % at least) until the frames land within half
    /// a step, goes on for half a refresh more (nudged, the browser shows each frame on the refresh nearest its
    /// media clock), which puts its media clock in the middle of that value's span so that the browser keeps it,
    /// and plays at the group's rate again, trimmed by the drift it has seen of the media clock. Just after a start,
    /// where the frames land on every second refresh and the other phase has a value nearer the line, it asks for
    /// that phase (`rephaseTarget`), and later whenever the frames are found there (at most every 5 s): Chromium gives
    /// up its cadence when the video plays 25 % fast (0.12–0.35 s), and takes it up again on the refreshes nearest
    /// where the media clock then puts the frames. A video's start is steered onto the line first (`steer` in the
    /// sync script), which lands most starts on the right phase, and steered again where it lands a refresh ahead;
    /// this is for the rest. Pure (no clocks, no page): the checks drive it with made-up frames.
    static let gridScript = #"""
    "use strict";

    /** Follows the refresh grid: fed each presented frame's error from the group's line, returns the rate nudge. */
    class GridFollower {
      /** `refresh`: the display's refresh interval (ns). */
      constructor(refresh) {
        this.refresh = refresh; this.step = null; this.trim = 0; this.lastAskAt = null;
        this.reset();
      }

      /** After a start or a seek: measure afresh (what was learned of the browser and the media clock stays). */
      reset() {
        this.mode = "hold"; this.recent = []; this.direction = 0; this.nudge = 0; this.until = 0;
        this.moves = []; this.previous = null; this.heldSince = null; this.held = null;
        this.startedAt = null; this.rephases = 0; this.count = 0; this.settling = 0;
      }

      /** After a change of phase (`rephaseTarget`): measure afresh, as part of the same start, and leave the
       *  frames alone while Chromium takes up its cadence (its first frames can land a refresh either way). */
      rephased() {
        const startedAt = this.startedAt, rephases = this.rephases;
        this.reset(); this.startedAt = startedAt; this.rephases = rephases;
        this.settling = GridFollower.SETTLE_FRAMES;
      }

      /** After a start steered onto the line (the page's `steer`): measure afresh, as after a start, and leave the
       *  frames alone while Chromium takes up its cadence. */
      steered() { this.reset(); this.settling = GridFollower.SETTLE_FRAMES; }

      /** Where the browser shows the frames on every second refresh, once the frames have come for a fifth of a
       *  second (the start itself settles first), the three latest agreeing on their phase, and the value of that
       *  phase nearest the line is more than half a refresh from it: the value of the other phase nearest the line
       *  (ns, within half a refresh), twice at most within 3 s of a start and then at most every 5 s; else null.
       *  The page then makes the browser give up its cadence and take it up again with its media clock that far
       *  from the line. The frames' errors on one phase differ by whole steps, so the phase is known before nudges
       *  have brought them to its nearest value: a page that starts more than half a frame off changes phase at
       *  once, instead of coming to the grid first and leaving it again for the swing. */
      rephaseTarget(at) {
        if (this.step === null || Math.round(this.step / this.refresh) !== 2 || this.startedAt === null) return null;
        // Later (or after those two), whenever the frames are found on the other phase, SLIP_GAP after the last: a
        // slip of Chromium's cadence (a missed refresh makes it show the frames a refresh late and keep them there,
        // the media clock where it was: seen on both pages at once, in steady play and after seeks).
        const early = at - this.startedAt <= GridFollower.REPHASE_WINDOW && this.rephases < GridFollower.MAX_REPHASES;
        if (!early && this.lastAskAt !== null && at - this.lastAskAt < GridFollower.SLIP_GAP) return null;
        if (this.settling > 0 || this.count < GridFollower.REPHASE_FRAMES) return null;
        if (this.recent.length < 3) return null;
        // Each error as the value of its phase nearest the latest one's (a whole number of steps away).
        const step = this.step, wrap = (v) => v - step * Math.round(v / step);
        const reference = wrap(this.recent[this.recent.length - 1]);
        const latest = this.recent.slice(-3).map((v) => reference + wrap(v - reference));
        if (Math.max(...latest) - Math.min(...latest) > 2 * GridFollower.HYSTERESIS) return null;
        const value = wrap(median(latest));
        if (Math.abs(value) <= this.refresh / 2 + GridFollower.HYSTERESIS) return null;
        this.rephases += 1;
        this.lastAskAt = at;
        return value - Math.sign(value) * this.refresh;
      }

      /** During the fast part of a change of phase toward `target` (ns from the line), whether a frame with `error`
       *  shows that Chromium gave up its cadence: it is on the target's phase, on the target (within half a
       *  refresh) or a frame past it (the clock further on, or a page a refresh ahead). Not where it is still on
       *  the old phase, or further on (the swing goes on as it was). */
      swingBroken(error, target) {
        if (this.step === null) return false;
        const off = error - target, near = this.refresh / 2;
        return Math.abs(off) < near || Math.abs(off - this.step) < near;
      }

      /** Whether the change of phase after this start is still to be decided: a cadence of two refreshes, no
       *  change made yet, fewer than REPHASE_FRAMES frames in, within its window. */
      phasePending(at) {
        return this.step !== null && Math.round(this.step / this.refresh) === 2 && this.startedAt !== null
          && this.rephases === 0 && this.count < GridFollower.REPHASE_FRAMES
          && at - this.startedAt <= GridFollower.REPHASE_WINDOW;
      }

      /** What the page plays at while holding: the group's rate, trimmed by what the media clock was seen to drift
       *  (Chromium's runs off the audio output's), at most 0.15 %, under what makes Chromium leave its cadence. */
      holding() { return this.trim; }

      /** The error (ns, positive: ahead of the line) of a frame shown at `at` (ns, any clock that does not jump),
       *  at the group's `rate`, for media whose frames last `frame` ns on the display; returns the nudge (a
       *  fraction of the rate: 0.02 is 2 % faster) to play at from now on. */
      frame(error, at, rate = 1, frame = 0) {
        const previous = this.previous; this.previous = error;
        if (this.startedAt === null) this.startedAt = at;
        this.count += 1;
        // The step: a frame's worth of refreshes. Chromium shows a video on a cadence of refreshes per frame and
        // keeps its phase (a 30 fps video on every second refresh of a 60 Hz display: rate nudges up to 15 % and
        // pauses do not move it, see docs/BENCHMARKS.md), so for video slower than the display the values a page
        // can reach by nudging are a frame apart; the other phase takes a change of phase (rephaseTarget).
        if (this.step === null && frame > 0) this.step = Math.max(1, Math.round(frame / this.refresh)) * this.refresh;
        const step = Math.max(this.refresh, this.step ?? 0), half = step / 2, near = half + GridFollower.HYSTERESIS;
        if (this.mode !== "hold" && previous !== null && Math.sign(previous) !== Math.sign(error)
            && Math.abs(previous) > near && Math.abs(error) > near) {
          // Jumped over the window (a frame dropped or repeated): stop here, holding decides what next.
          this.mode = "hold"; this.recent = []; this.direction = 0; this.nudge = 0;
          return this.trim;
        }
        this.recent.push(error); if (this.recent.length > 5) this.recent.shift();
        if (this.settling > 0) { this.settling -= 1; return this.trim; }
        const m3 = median(this.recent.slice(-3));
        if (this.mode === "hold") {
          if (this.recent.length < 3) return this.trim;
          // Past half a step by a little (media timestamps are rounded to the millisecond): another is better.
          // A page that keeps having to move (a jittery display) settles for half a frame.
          this.moves = this.moves.filter((t) => at - t < GridFollower.CALM_SPAN);
          const calm = this.moves.length >= GridFollower.MOVES_BEFORE_CALM ? Math.max(half, frame / 2) : half;
          if (Math.abs(m3) <= calm + GridFollower.HYSTERESIS) {
            if (this.heldSince === null) { this.heldSince = at; this.held = m3; }
            return this.trim;
          }
          // Slipped by a step from a value held for a while, at the group's rate: the media clock drifts. Trim
          // the rate by the half step it drifted (from the middle of the span, where centering left it).
          if (this.heldSince !== null && this.held !== null && Math.abs(m3 - this.held) > 0.6 * step
              && at - this.heldSince > 2e9) {
            const drift = Math.sign(m3 - this.held) * half / ((at - this.heldSince) * rate);
            this.trim = Math.max(-GridFollower.MAX_TRIM, Math.min(GridFollower.MAX_TRIM, this.trim - drift));
          }
          // Just after a start, on a cadence of two refreshes, a page about a refresh off (within one and a half)
          // may be on the other phase: that is for the change of phase to decide (rephaseTarget, once
          // REPHASE_FRAMES have come), not for a nudge, which Chromium answered in traced seeks by showing the
          // frames a refresh later still (35 ms off). A page a whole frame off is nudged at once.
          if (this.phasePending(at) && Math.abs(m3) <= 1.5 * this.refresh) return this.trim;
          this.heldSince = null; this.held = null;
          this.mode = "move"; this.moves.push(at); this.direction = m3 > 0 ? -1 : 1;
        }
        if (this.mode === "move") {
          if (Math.abs(m3) <= near) {
            // On the nearest value, at the edge of its span: on at the least nudge for half a refresh of media. Off
            // its cadence (as at the least nudge) Chromium shows each frame on the refresh nearest the media clock,
            // so the span is a refresh wide; on for half a step (a refresh, at 30 fps on 60 Hz) took the frames on
            // to the next refresh, a frame off the line when the line falls between two (traced after seeks).
            this.mode = "center";
            this.nudge = this.direction * GridFollower.MIN_NUDGE;
            this.until = at + Math.min(half, this.refresh / 2) / (GridFollower.MIN_NUDGE * rate);
            return this.nudge;
          }
          this.direction = m3 > 0 ? -1 : 1;
          const size = Math.abs(m3) / (GridFollower.NUDGE_SECONDS * 1e9 * rate);
          this.nudge = this.direction * Math.max(GridFollower.MIN_NUDGE, Math.min(GridFollower.MAX_NUDGE, size));
          return this.nudge;
        }
        // Centering: done after its time, or at once when the frames went on past the value to the next one.
        if (at >= this.until || (Math.abs(m3) > half + GridFollower.HYSTERESIS && Math.sign(m3) === this.direction)) {
          this.mode = "hold"; this.recent = []; this.direction = 0; this.nudge = 0;
          return this.trim;
        }
        return this.nudge;
      }
    }
    // The least nudge that makes Chromium leave its cadence (it keeps one up to 0.2 % off), the most (25 %), the
    // time to close an error in, the margin past half a step, and how many moves in how long mean the grid cannot
    // be held.
    GridFollower.MIN_NUDGE = 0.02;
    GridFollower.MAX_NUDGE = 0.25;
    GridFollower.NUDGE_SECONDS = 0.5;
    GridFollower.HYSTERESIS = 1e6;
    GridFollower.MOVES_BEFORE_CALM = 4;
    GridFollower.CALM_SPAN = 10e9;
    GridFollower.MAX_TRIM = 0.0015;
    // Changing phase: within how long of a start, after how many frames, how often, the swing and how long each
    // way at the least (Chromium keeps its cadence through 15 %, and gave it up in every try with 25 % fast for
    // 300 ms and more, then as long slow), and how long its media clock goes on at the old rate after a change.
    GridFollower.REPHASE_WINDOW = 3e9;
    GridFollower.SLIP_GAP = 5e9;
    GridFollower.REPHASE_FRAMES = 6;
    GridFollower.SETTLE_FRAMES = 15;
    GridFollower.MAX_REPHASES = 2;
    GridFollower.REPHASE_SWING = 0.25;
    GridFollower.REPHASE_LEG = 300e6;
    GridFollower.REPHASE_LATENCY = 60e6;

    function median(values) {
      const sorted = values.slice().sort((a, b) => a - b);
      return sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
    }

    /** Measures the display's refresh interval (ns) from animation frames, then calls `done` with it. */
    function measureRefresh(done, count = 40) {
      const times = [];
      const tick = (now) => {
        times.push(now);
        if (times.length < count) { requestAnimationFrame(tick); return; }
        const steps = times.slice(1).map((t, i) => t - times[i]);
        const typical = median(steps);
        // Timestamps are coarsened (0.1 ms): the span over the whole run, in typical steps, is finer.
        const span = times[times.length - 1] - times[0];
        done(Math.round((typical > 0 ? span / Math.max(1, Math.round(span / typical)) : 1000 / 60) * 1e6));
      };
      requestAnimationFrame(tick);
    }
    """#
}
