extension WebPage {
    /// Steering a video's start onto the group's line (`steer`), and steering it again where it lands a refresh
    /// ahead: methods of the sync script's Follower (sync.js, loaded before this), with the measurements of
    /// Chromium's media clock they rest on.
    static let steerScript = #"""
    "use strict";
    // At 4 % fast Chromium's media clock reads in a sawtooth: a tooth every 0.13–0.2 s, each reading falling behind
    // until one jumps 6–10 ms ahead (SAWTOOTH_JUMP: more than this is a jump). A steer that ends on the frame after
    // a jump (within TOOTH_END of it) leaves the clock 2.7 ms below that frame's reading (STEER_DROP); one that ends
    // later in the tooth leaves it 9–10 ms further on. So a fast steer ends only there, on the first tooth that puts
    // the clock within STEER_WINDOW (half a tooth's climb) short of where it aims, or past it.
    // The clock comes to rest so after most such ends and 8–10 ms further on after a few (6 of 82 traced): a steer
    // aims STEER_BELOW under the middle of the span, which the first keep and more of the second.
    const SAWTOOTH_JUMP = 4e6, TOOTH_END = 40e6, STEER_DROP = 2.7e6, STEER_WINDOW = 3.4e6, STEER_BELOW = 2e6;
    // Leaving the group's rate while playing throws Chromium's media clock back about 17.5 ms (CLOCK_THROW), two or
    // three frames later (seen within THROW_WAIT), and the frames with it: a steer from there waits for that first.
    const CLOCK_THROW = 17.5e6, THROW_WAIT = 200e6;
    // A start more than RUSH_FROM off where it aims, and no more than RUSH_MAX (play() took longer or shorter than
    // planned) goes RUSH fast or slow until the clock should be RUSH_NEAR short of it, then steers on as after a
    // change of rate while playing.
    const RUSH = 0.25, RUSH_FROM = 25e6, RUSH_NEAR = 10e6, RUSH_MAX = 100e6;

    Object.assign(Follower.prototype, {
      /** A frame while a video's start is steered onto the line; true while it goes on. The start is aimed a
       *  little late and made 4 % fast (4 % slow where the media clock's first readings are ahead): off the
       *  group's rate Chromium keeps no cadence of refreshes, so each frame shows on the refresh nearest where
       *  the media clock puts it, and the frames follow the clock a refresh at a time. At the group's rate again
       *  once the clock is where it aims, Chromium takes up its cadence on the refreshes the frames then fall on:
       *  the right ones, without the change of phase that a start Chromium's audio clock put a refresh off would
       *  otherwise take (its clock starts on the audio output's next period, up to ±25 ms from where the page
       *  aimed). It aims at the middle of the span in which the frames show on the refresh nearest the line (that
       *  refresh's own error, which the frames' errors give: they come in whole refreshes from it), and a fast
       *  steer ends where the clock's sawtooth lets it say where the clock will come to rest (SAWTOOTH_JUMP). The
       *  first readings also teach the start latency. */
      steer(t) {
        const st = this.steering, at = localNanos();
        if (st.token !== this.token) { this.steering = null; return false; }
        const done = () => {
          this.steering = null; this.video.playbackRate = t.rate * (1 + this.grid.holding());
          this.errors = []; this.clockOffsets = [];
          if (st.swung) this.grid.rephased();
        };
        if (st.firstAt === null) st.firstAt = at;
        if (at - st.firstAt > STEER_LONGEST) { done(); return false; }
        // The clock's teeth: a reading that jumps ahead starts one, and so does the first frame of a run (the
        // start; a frame shown before play() began comes alone, a gap before the next).
        const reading = this.clockOffsets.length ? this.clockOffsets[this.clockOffsets.length - 1] : null;
        if (st.lastAt === null || at - st.lastAt > 45e6) st.topAt = at;
        else if (reading !== null && st.lastReading !== null && reading - st.lastReading > SAWTOOTH_JUMP) st.topAt = at;
        st.lastAt = at; st.lastReading = reading;
        if (st.rushUntil !== null) {
          if (at < st.rushUntil) return true;
          st.rushUntil = null; st.from = reading ?? 0; st.thrown = false; st.firstAt = at;
          this.video.playbackRate = t.rate * (1 + st.rushDir * STEER);
          return true;
        }
        // Steered again while playing (`rephase`): the clock's readings count from where it was thrown back (which
        // starts a tooth), or from THROW_WAIT on where it was not.
        if (st.from !== null && !st.thrown) {
          if (reading !== null && reading < st.from - CLOCK_THROW / 2) {
            st.thrown = true; st.topAt = at; this.clockOffsets = [reading];
          } else if (at - st.firstAt < THROW_WAIT) {
            return true;
          } else {
            st.thrown = true;
          }
        }
        // A start far off rushes from its second reading where both say so (a first reading can be of a frame shown
        // before play() began, or read high, up to 38 ms; none of 340 traced read more than 3 ms low): a frame sooner
        // than the steer's decision. Behind by the higher reading, ahead by the lower.
        if (st.start && !st.rushed && this.clockOffsets.length === 2) {
          const behind = Math.max(...this.clockOffsets), ahead = Math.min(...this.clockOffsets);
          const off = -STEER_BELOW - behind > RUSH_FROM ? behind + STEER_BELOW
            : ahead + STEER_BELOW > RUSH_FROM ? ahead + STEER_BELOW : 0;
          if (off !== 0 && Math.abs(off) <= RUSH_MAX) {
            if (this.measuringStart) this.learnStartLatency(off - STEER_BELOW + STEER_AIM);
            this.rush(st, t, at, off);
            return true;
          }
        }
        if (this.clockOffsets.length < 3) return true;
        const where = median(this.clockOffsets.slice(-3));
        if (!st.decided) {
          st.decided = true;
          if (this.measuringStart) this.learnStartLatency(where + STEER_AIM);
          // Too far for a steer or a rush: the nudges and seeks take it from here.
          if (Math.abs(where) > (st.start && !st.rushed ? RUSH_MAX : STEER_MAX)) { done(); return false; }
          // Where the clock is to come to rest: on the refresh nearest the line, whose error the frames' own give
          // (each a whole number of refreshes from it). Where the line falls about halfway between two, the one
          // below it (within half a refresh and the 1 ms of timestamp rounding): the clock's run-on is upward, and
          // from the one above it took the frames a refresh on, a frame off the line after the nudges (traced).
          const refresh = this.grid.refresh, wrap = (v) => v - refresh * Math.round(v / refresh);
          const nearest = this.errors.length >= 3 ? wrap(median(this.errors.slice(-3))) : 0;
          st.target = (nearest > refresh / 2 - GridFollower.HYSTERESIS ? nearest - refresh : nearest) - STEER_BELOW;
          st.dir = where <= st.target + 1e6 ? 1 : -1;
          this.video.playbackRate = t.rate * (1 + st.dir * STEER);
          if (st.start && !st.rushed && Math.abs(where - st.target) > RUSH_FROM) {
            this.rush(st, t, at, where - st.target);
            return true;
          }
        }
        if (st.dir > 0) {
          const sinceTop = at - st.topAt;
          const short = reading === null || reading - STEER_DROP < st.target - STEER_WINDOW;
          if (short || sinceTop <= 0 || sinceTop > TOOTH_END) return true;
          done(); this.steered(st);
          return true;
        }
        // Slow (where the rest after a tooth is not measured): ended by the median of the last three readings, early
        // by how far the clock runs on. Where the clock is on the line, Chromium shows the frames on the refresh
        // nearest it, which can be just past half a refresh from the line (±2 ms of the clock, where the refreshes
        // fall half a refresh from the line): then back, until the frames come onto the refresh on the other side.
        const edge = this.grid.refresh / 2 + GridFollower.HYSTERESIS;
        const frames = this.errors.length >= 3 ? median(this.errors.slice(-3)) : null;
        if (!st.back) {
          if ((where - st.target) * st.dir + STEER * STEER_RUNON < 0) return true;
          if (frames !== null && Math.abs(frames) > edge && Math.abs(frames) < 1.5 * this.grid.refresh) {
            st.back = true; st.dir = frames > 0 ? -1 : 1;
            this.video.playbackRate = t.rate * (1 + st.dir * STEER);
            return true;
          }
        } else if (frames === null || Math.abs(frames) > edge) {
          return true;
        }
        done(); this.steered(st);
        return true;
      },

      /** Rushes a start `off` (ns, positive: ahead) from where it aims: RUSH slow or fast until the clock should be
       *  RUSH_NEAR short of it, then the steer goes on 4 % the same way (`steer`). Once per start. */
      rush(st, t, at, off) {
        st.rushed = true; st.rushDir = off > 0 ? -1 : 1;
        st.rushUntil = at + (Math.abs(off) - RUSH_NEAR) / RUSH;
        this.video.playbackRate = t.rate * (1 + st.rushDir * RUSH);
      },

      /** A steer's state: from the start (`from` null), from where the clock was when steered again, or from a
       *  swing that made Chromium give up its cadence (`swung`, `rephaseBroken`). A start's own (`start`) may rush
       *  first (`rushUntil`, RUSH), and stays a start's when it steers on from where the clock was then. */
      newSteer(token, from, swung = false) {
        return { token, dir: 1, firstAt: null, decided: false, back: false, target: 0, topAt: null, lastAt: null,
                 lastReading: null, from, thrown: false, swung,
                 rushUntil: null, rushed: false, rushDir: 1, start: from === null && !swung };
      },

      /** A steer reached where it aimed: the grid follower measures afresh (after a steer again or a swing, as part
       *  of the same start, so that the changes of phase left stay). */
      steered(st) {
        if (st.start) { this.grid.steered(); this.steeredStart = true; } else this.grid.rephased();
      },

      /** How long a short seek ahead from a prerolled anchor takes (ns): the slowest of the last four and 20 ms
       *  (they took 11–63 ms in one run), 80 ms until one was timed, within 30–250 ms. */
      hopEstimate() {
        return this.hopTimes.length ? Math.min(250e6, Math.max(30e6, Math.max(...this.hopTimes) + 20e6)) : 80e6;
      }
    });
    """#
}
