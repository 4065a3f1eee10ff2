#!/usr/bin/env python3
"""Drives the browser page in headless Chromium against a real `tandem host --web`.

    web-peer-check.py TANDEM MEDIA SCREENSHOT
    web-peer-check.py --bench SECONDS PAGES TANDEM MEDIA [LINK]   (one JSON line: time to sync, render offset p50/p99/max,
                                                           the display's refresh, the step the video's frames were
                                                           shown in and the floor it allows, seeks while playing,
                                                           command latency; TANDEM_TRACE_FILE writes every frame,
                                                           TANDEM_SEEK_DEBUG prints each seek's first frames and
                                                           each page's start latency and seek times before it; with
                                                           LINK a native joiner behind that simulated link gives the
                                                           seeks and the commands)
    web-peer-check.py --resumes COUNT TANDEM MEDIA          (one page; the host pauses and resumes COUNT times: each
                                                           resume's first frames' errors, whether the page changed
                                                           phase, and how many landed within half a refresh)
    web-peer-check.py --queue TANDEM MEDIA OTHER_MEDIA      (a queue of both: the page is given both files at once,
                                                           then loads each item by itself)
    web-peer-check.py --vectors TANDEM MEDIA VECTORS        (the page's sealing against the known answers in VECTORS,
                                                           Tests/Vectors/app-data-v2.json, which the Swift tests check too)
    web-peer-check.py --unplayable TANDEM MEDIA NOT_MEDIA  (the page is given files it cannot play: a damaged copy of
                                                           MEDIA that fails mid-play, then NOT_MEDIA; then MEDIA)

Starts the host on 127.0.0.1 (headless player, `--json`), opens the browser link of its `browser` event, picks the
same file, and checks that the page joins, reports ready, follows the host's play / pause / seek, reports its
render offset to the group (the host's `participants` events carry it), sends its own play, shows notices, that
chat crosses both ways, and that after its WebSocket is closed it reconnects as the same participant and follows
a later pause. Writes a screenshot, prints one line per check and a closing 'N passed, N failed'. Exits 0 when
every check passed, 1 otherwise, 77 when the browser cannot start.
Launches Debian's /usr/bin/chromium (Playwright's own browsers are never downloaded).
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM = os.environ.get("TANDEM_CHROMIUM", "/usr/bin/chromium")


def png(width=48, height=27):
    """A small PNG (a horizontal gradient) written with zlib alone, for the host's --preview."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(v for x in range(width) for v in (x * 5 % 256, 80, 200)) for _ in range(height))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    path = os.path.join(tempfile.mkdtemp(prefix="tandem-web-"), "preview.png")
    with open(path, "wb") as out:
        out.write(data)
    return path


class Host:
    """`tandem host --json` with its stdout read line by line on a thread."""

    def __init__(self, tandem, media, *following, extra=(), command=None, env=None):
        self.process = subprocess.Popen(
            command or [tandem, "host", media, *following, *extra, "--web", "--bind", "127.0.0.1", "--port", "0",
                        "--headless", "--name", "ann", "--json"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
            env=env)
        self.lines = []
        self.queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self.queue.put(line)

    def send(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def events(self, name):
        """The host's `--json` events called NAME so far."""
        found = []
        for line in list(self.lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == name:
                found.append(event)
        return found

    def wait_for_event(self, name, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events(name):
                if predicate(event):
                    return event
            time.sleep(0.05)
        return None

    def browser_link(self, timeout=20):
        """The link of the host's `browser` event."""
        event = self.wait_for_event("browser", lambda e: True, timeout)
        return event and event.get("link")

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if predicate(line):
                    return line
            time.sleep(0.05)
        return None

    def stop(self):
        try:
            self.send("leave")
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()


def joiner(tandem, media, host, link):
    """A native joiner of HOST's session (`tandem join --json`, named bob) behind the simulated link LINK (a profile
    of `tandem bench sync --link`, put in its own connection), or None when the host gave no invite."""
    event = host.wait_for_event("invite", lambda e: True, 20)
    if event is None or not event.get("invite"):
        return None
    env = dict(os.environ, TANDEM_INVITE=event["invite"], TANDEM_BENCH_LINK=link + ":1")
    peer = Host(tandem, media, command=[tandem, "join", media, "--headless", "--json", "--name", "bob"], env=env)
    if peer.wait_for_event("joined", lambda e: True, 30) is None:
        peer.stop()
        return None
    return peer


def bench(tandem, media, seconds, pages, joiner_link=None):
    """`--bench SECONDS PAGES [LINK]`: PAGES pages beside the native host (and with LINK, a native joiner behind that
    simulated link, which gives the seeks and the commands instead of the host). For each, the time from choosing the file (the
    host presses play at once; the group waits for every page) to the page being in sync (|error| under 20 ms for
    10 frames in a row); then the render offset of every frame against the group's line, which the native peers
    render to within a millisecond, for SECONDS (from in sync, and from the page being on the refresh grid); then
    seeks while playing, and for each the time from the group's restart to the page being within one frame of it (5
    frames in a row), and to its staying within a frame until the next seek; then the command latency, and where each
    page's first frames fell after each play. Every offset is ground truth: the frame's display time on the system
    clock against the group's line there."""
    from playwright.sync_api import sync_playwright
    host = Host(tandem, media)
    seen, latencies, refresh, seeks, raws, play_leads = [], [], [], [], [], []
    off_target = 0
    plays, after_commands, play_starts = [], [], []
    bob = None
    try:
        link = host.browser_link()
        if link is None:
            print(json.dumps({"error": "the host printed no browser link: " + " | ".join(host.lines[-5:])}))
            return 1
        if joiner_link:
            bob = joiner(tandem, media, host, joiner_link)
            if bob is None:
                print(json.dumps({"error": "the joiner did not join: " + " | ".join(host.lines[-5:])}))
                return 1
        commander = bob or host
        with sync_playwright() as p:
            try:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                    "--autoplay-policy=no-user-gesture-required", "--no-sandbox", "--mute-audio"])
            except Exception as error:
                print(json.dumps({"error": "the browser cannot start: " + str(error).splitlines()[0]}))
                return 77
            opened = [browser.new_page(bypass_csp=True) for _ in range(pages)]
            for page in opened:
                page.goto(link)
            for page in opened:
                page.wait_for_function("window.tandem && tandem.joined === true && tandem.wire.synchronised",
                                       timeout=15000)
            chosen = []
            for page in opened:
                chosen.append(page.evaluate("localNanos()"))
                page.set_input_files("#file", media)
            host.send("play")
            for page in opened:
                page.wait_for_function("tandem.follower.frames > 10", timeout=20000)
            # The display's refresh as the page sees it: requestAnimationFrame's frame times.
            refresh = opened[0].evaluate(REFRESH_SCRIPT)
            refresh_origin = opened[0].evaluate("performance.timeOrigin")
            time.sleep(seconds)
            lines = [page.evaluate(LINE_SCRIPT) for page in opened]
            steady_end = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            # Seeks while playing; the host's session clock is CLOCK_MONOTONIC, where each command's time is read.
            # Past the end of the item the group has stopped: back near the start first, and play.
            generation = opened[0].evaluate("tandem.timeline.generation")
            host.send("seek 1")
            wait_for_generation(opened, generation)
            try:  # a group that was playing plays on from there once everyone has prerolled
                opened[0].wait_for_function("statusOf(tandem.timeline) === 'playing'", timeout=3000)
            except Exception:
                generation = opened[0].evaluate("tandem.timeline.generation")
                host.send("play")
                wait_for_generation(opened, generation, "statusOf(tandem.timeline) === 'playing'")
            time.sleep(2)
            for target in SEEK_TARGETS:
                generation = opened[0].evaluate("tandem.timeline.generation")
                if os.environ.get("TANDEM_SEEK_DEBUG"):
                    for index, page in enumerate(opened):
                        print("before seek %d page %d: start latency, seek times, short seeks ahead, preroll, the last "
                              "start's lateness from its seek, play()'s latency after a short seek (ns): %s"
                              % (len(seeks), index, page.evaluate("JSON.stringify([tandem.follower.startLatency,"
                                 " tandem.follower.seekTimes, tandem.follower.hopTimes, tandem.follower.prerollEstimate(),"
                                 " tandem.follower.startLate, tandem.follower.hopLatency])")),
                              file=sys.stderr)
                sent = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                commander.send("seek %d" % target)
                # A seek while playing stops the group at the new place until everyone has prerolled there, then
                # plays it from a scheduled time: that timeline is the line to follow.
                wait_for_generation(opened, generation, "statusOf(tandem.timeline) === 'playing'")
                seeks.append((sent, [page.evaluate(LINE_SCRIPT) for page in opened]))
                # The group restarted where it was asked to (a seek moved elsewhere is no seek to measure).
                off_target += sum(1 for line in seeks[-1][1] if abs(line[0] - target * 1e9) > 1e6)
                time.sleep(2.5)
            # Ground truth: each frame's display time on the system clock (the page's time origin on the wall
            # clock, moved to CLOCK_MONOTONIC, which is the embedded server's session clock) against the group's
            # line; not the page's own estimate of its error, which rests on its clock sync.
            wall_minus_monotonic = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            refresh = [refresh_origin * 1e6 - wall_minus_monotonic + t * 1e6 for t in refresh]
            for page, at in zip(opened, chosen):
                origin = page.evaluate("performance.timeOrigin") * 1e6 - wall_minus_monotonic
                # [display time (local ns), the page's own estimate of its error, media time (s)] per frame.
                raw = page.evaluate("tandem.follower.trace")
                raws.append(raw)
                seen.append((at, origin, [entry[:3] for entry in raw]))
            # Command latency: from the command (the host's or the joiner's standard input) to each page holding the
            # group's new timeline, both on this machine's wall clock.
            # With a joiner, three more pauses and plays: each play's start is timed from the command too.
            # Each play's line is kept, with when the next command went, for the pages' first frames after it.
            commands = ["pause", "play"] * (4 if bob else 1) + ["seek 2", "pause"]
            for command in commands:
                generation = opened[0].evaluate("tandem.timeline.generation")
                sent = time.time() * 1000
                sent_session = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                if plays and plays[-1][1] is None:
                    plays[-1][1] = sent_session
                commander.send(command)
                for page in opened:
                    page.wait_for_function("tandem.timeline.generation > %d" % generation, timeout=10000)
                    latencies.append(page.evaluate("tandem.timelineAt") - sent)
                if command == "play":
                    play_leads.append((opened[0].evaluate("tandem.timeline.anchorSessionTime") - sent_session) / 1e6)
                    plays.append([[page.evaluate(LINE_SCRIPT) for page in opened], None])
                time.sleep(0.5)
            # Where the pages' first frames after each play fell: the median of each page's first 6 frames' |error|.
            for page, (_, origin, _) in zip(opened, seen):
                after_commands.append((origin, [entry[:3] for entry in page.evaluate("tandem.follower.trace")]))
            browser.close()
    finally:
        if bob:
            bob.stop()
        host.stop()

    def error(line, session, media_time):
        anchor_item, anchor_session, rate = line
        return media_time * 1e9 - (anchor_item + (session - anchor_session) * rate)

    for index, (origin, trace) in enumerate(after_commands):
        for play_lines, until in plays:
            line = play_lines[index]
            signed = [error(line, origin + local, media_time) for local, _, media_time in trace
                      if line[1] <= origin + local < (until or float("inf"))][:6]
            first = [abs(e) for e in signed]
            if os.environ.get("TANDEM_SEEK_DEBUG"):
                print("play page %d: first frames %s" % (index, " ".join("%+.1f" % (e / 1e6) for e in signed)), file=sys.stderr)
            if len(first) == 6:
                play_starts.append(sorted(first)[3])
    traces, settles, leads, seek_frames, missed, held = [], [], [], [], 0, []
    for index, (chosen_at, origin, trace) in enumerate(seen):
        # Per frame: (display time, local ns), ground-truth error, the page's own estimate, display time (session).
        frames = [(local, error(lines[index], origin + local, media_time), own, origin + local)
                  for local, own, media_time in trace if origin + local < steady_end]
        traces.append((chosen_at, frames))
        # Each seek's frames: from the group's restart (its anchor, or the command when that is later) to the next.
        for number, (sent, seek_lines) in enumerate(seeks):
            line = seek_lines[index]
            restart = max(line[1], sent)
            until = seeks[number + 1][0] if number + 1 < len(seeks) else float("inf")
            after = [(origin + local, error(line, origin + local, media_time)) for local, _, media_time in trace
                     if restart <= origin + local < until]
            frame = frame_duration([m for _, _, m in trace]) or 1 / 30
            start = in_sync_from(after, frame * 1e9, 5)
            leads.append((restart - sent) / 1e9)
            if os.environ.get("TANDEM_SEEK_DEBUG"):
                print("seek %d page %d: lead %.3f s, %d frames: %s" % (number, index, (restart - sent) / 1e9, len(after),
                      " ".join("%.0f:%+.1f" % ((at - restart) / 1e6, e / 1e6) for at, e in after[:40])), file=sys.stderr)
            if start is None:
                missed += 1
            else:
                settles.append((after[start][0] - restart) / 1e9)
                seek_frames += [abs(e) for _, e in after[start:]]
                # Within a frame from then on, to the next seek (2.5 s): from the frame after the last one outside.
                outside = [i for i, (_, e) in enumerate(after) if abs(e) >= frame * 1e9]
                if not outside or outside[-1] + 1 < len(after):
                    held.append((after[outside[-1] + 1 if outside else 0][0] - restart) / 1e9)
                else:
                    held.append(None)
                if os.environ.get("TANDEM_SEEK_DEBUG"):
                    print("seek %d page %d: within a frame to stay from %s s%s" % (number, index, "never" if held[-1] is None
                          else "%.3f" % held[-1], "; the last frame outside %.0f ms after the restart, %+.1f ms, of %d"
                          % ((after[outside[-1]][0] - restart) / 1e6, after[outside[-1]][1] / 1e6, len(after))
                          if outside else ""), file=sys.stderr)
    if os.environ.get("TANDEM_TRACE_FILE"):
        # Per page: when the file was chosen (local ns), and every measured frame of the steady part as [display
        # time (local ns), signed error from the group's line on the system clock (ns, positive: ahead), the
        # page's own estimate, display time (session ns)]; and in FILE.raw each page's own trace as it kept it:
        # [display time (local ns), its error, media time (s), its media clock's offset (ns), its rate] per frame.
        with open(os.environ["TANDEM_TRACE_FILE"] + ".raw", "w") as out:
            json.dump(raws, out)
        with open(os.environ["TANDEM_TRACE_FILE"], "w") as out:
            json.dump([{"chosen": at, "frames": frames} for at, frames in traces], out)
    intervals = sorted(b - a for a, b in zip(refresh, refresh[1:]))
    period = (refresh[-1] - refresh[0]) / round((refresh[-1] - refresh[0]) / intervals[len(intervals) // 2]) \
        if intervals else None
    settled, sync_times, own, in_sync_at_by_page = [], [], [], {}
    on_grid, grid_times, refresh_floors = [], [], []
    for chosen_at, trace in traces:
        start = in_sync_from([(at, e) for at, e, _, _ in trace], 20e6, 10)
        in_sync_at = None if start is None else trace[start + 9][0]
        in_sync_at_by_page[id(trace)] = in_sync_at
        sync_times.append(None if in_sync_at is None else (in_sync_at - chosen_at) / 1e9)
        settled += [abs(e) for at, e, _, _ in trace if in_sync_at is not None and at >= in_sync_at]
        own += [abs(o - e) for at, e, o, _ in trace if in_sync_at is not None and at >= in_sync_at]
        # On the refresh grid: from the first 10 frames running within half a refresh (and 1 ms for the rounding of
        # media timestamps to the millisecond, where a line halfway between two refreshes puts a page at best). A
        # page that never gets there counts from in sync, so that it cannot leave the figure.
        grid = in_sync_from([(at, e) for at, e, _, _ in trace], (period or 1e9 / 60) / 2 + 1e6, 10)
        grid_at = None if grid is None else trace[grid][0]
        grid_times.append(None if grid_at is None else (grid_at - chosen_at) / 1e9)
        since = grid_at if grid_at is not None else in_sync_at
        on_grid += [abs(e) for at, e, _, _ in trace if since is not None and at >= since]
        # The best any choice of refresh could do for the same frames: each error moved by whole refreshes.
        if period:
            refresh_floors += [abs((e + period / 2) % period - period / 2) for at, e, _, _ in trace
                               if since is not None and at >= since]
    on_grid.sort()
    refresh_floors.sort()
    # Which refreshes the video's frames are shown on (every one, every second, ...): each page's floor is then the
    # best error that allows it, its error moved by whole steps to the one nearest the line.
    frame = frame_duration([m for _, _, trace in seen for _, _, m in trace])
    steps = [presentation_step([at for _, _, _, at in frames], period, frame) for _, frames in traces]
    step = max((s for s in steps if s), default=None)
    floors = []
    for _, frames in traces:
        since = in_sync_at_by_page[id(frames)]
        floors += [abs((e + step / 2) % step - step / 2) for at, e, _, _ in frames
                   if step and since is not None and at >= since]
    floors.sort()
    print(json.dumps(figures(settled, sync_times, latencies, own) | {
        "refreshMs": round(period / 1e6, 3) if period else None,
        "presentationStepMs": round(step / 1e6, 2) if step else None,
        "floorP99Ms": quantile(floors, 0.99),
        "gridP50Ms": quantile(on_grid, 0.5), "gridP99Ms": quantile(on_grid, 0.99),
        "gridMaxMs": round(on_grid[-1] / 1e6, 3) if on_grid else None,
        "refreshFloorP99Ms": quantile(refresh_floors, 0.99),
        "gridSecondsAfterFileChosen": None if not grid_times or any(t is None for t in grid_times)
        else round(max(grid_times), 3),
        # rAF times are coarsened to 0.1 ms: the spread of the intervals says how regular the refresh is.
        "refreshSpreadMs": round((intervals[int(0.99 * len(intervals))] - intervals[int(0.01 * len(intervals))]) / 1e6, 2)
        if intervals else None,
        "seeks": len(leads), "seeksMissed": missed, "seeksOffTarget": off_target,
        "seekSettleP50S": round(sorted(settles)[len(settles) // 2], 3) if settles else None,
        "seekSettleMaxS": round(max(settles), 3) if settles else None,
        # From the restart to the page being within a frame and staying there until the next seek (None: a seek
        # whose page was outside a frame at its window's end counts as never).
        "seekHeldP50S": held_quantile(held, 0.5), "seekHeldMaxS": held_quantile(held, 1),
        "seekLeadP50S": round(sorted(leads)[len(leads) // 2], 3) if leads else None,
        "afterSeekP99Ms": quantile(sorted(seek_frames), 0.99),
        "playLeadP50Ms": round(sorted(play_leads)[len(play_leads) // 2], 1) if play_leads else None,
        "playLeadMaxMs": round(max(play_leads), 1) if play_leads else None,
        # Each page's first frames after each play (the median of 6 |errors|): where the start put it.
        "playStartP50Ms": quantile(sorted(play_starts), 0.5), "playStartMaxMs": quantile(sorted(play_starts), 1)}))
    return 0


LINE_SCRIPT = "[tandem.timeline.anchorItemTime, tandem.timeline.anchorSessionTime, tandem.timeline.rate]"

REFRESH_SCRIPT = """() => new Promise((done) => {
  const times = [];
  const tick = (now) => { times.push(now); if (times.length < 121) requestAnimationFrame(tick); else done(times); };
  requestAnimationFrame(tick);
})"""

# Seeks while playing, each followed by 2.5 s of play: all within the first 15 s of the item.
SEEK_TARGETS = [4, 9, 3, 12]


def wait_for_generation(pages, generation, also="true"):
    for page in pages:
        page.wait_for_function("tandem.timeline.generation > %d && %s" % (generation, also), timeout=10000)


def frame_duration(media_times):
    """The media's frame duration (s): the shortest step between successive frames' media times."""
    steps = sorted(b - a for a, b in zip(media_times, media_times[1:]) if b > a)
    return steps[len(steps) // 10] if steps else None


def presentation_step(display_times, refresh, frame):
    """The step between the refreshes a video's frames are shown on: REFRESH times the largest k (up to the frame
    duration) that divides 98 % of the gaps between successive frames' display times, in refreshes. (Chromium
    shows a 30 fps video on every second refresh of a 60 Hz display; now and then the phase moves by one.)"""
    gaps = [round((b - a) / refresh) for a, b in zip(display_times, display_times[1:]) if b > a] if refresh else []
    if not gaps:
        return None
    best = 1
    for k in range(2, 5):
        if frame and k * refresh > frame * 1e9 + refresh / 2:
            break
        if sum(1 for g in gaps if g % k == 0) >= 0.98 * len(gaps):
            best = k
    return best * refresh


def in_sync_from(frames, bound, run_length):
    """The index of the first frame of the first run of RUN_LENGTH frames with |error| under BOUND, or None."""
    run = 0
    for i, (_, error) in enumerate(frames):
        run = run + 1 if abs(error) < bound else 0
        if run >= run_length:
            return i - run_length + 1
    return None


def held_quantile(held, q):
    """The Q quantile (s) of seek times where None is never: None when it falls on a never, or there are none."""
    ordered = sorted(float("inf") if h is None else h for h in held)
    value = ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None
    return None if value is None or value == float("inf") else round(value, 3)


def quantile(ordered, q):
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6, 3) if ordered else None


def figures(settled, sync_times, latencies, own):
    settled.sort()
    latencies.sort()
    own.sort()
    never = any(t is None for t in sync_times)
    return {"pages": len(sync_times), "frames": len(settled), "p50Ms": quantile(settled, 0.5),
            "p99Ms": quantile(settled, 0.99), "maxMs": round(settled[-1] / 1e6, 3) if settled else None,
            "syncSecondsAfterFileChosen": None if never or not sync_times else round(max(sync_times), 3),
            "commands": len(latencies),
            "commandP50Ms": round(latencies[len(latencies) // 2], 1) if latencies else None,
            "commandMaxMs": round(latencies[-1], 1) if latencies else None,
            "ownEstimateP50Ms": quantile(own, 0.5), "ownEstimateP99Ms": quantile(own, 0.99)}


def launch(p):
    """Debian's Chromium, or None (after saying why) when it cannot start."""
    try:
        return p.chromium.launch(executable_path=CHROMIUM, args=["--autoplay-policy=no-user-gesture-required",
                                                                  "--no-sandbox", "--mute-audio"])
    except Exception as error:  # the one reason to skip: no browser to run the page in
        print("SKIP: the browser cannot start: " + str(error).splitlines()[0])
        return None


def open_page(browser, link, ready, timeout=10000):
    """A new page on `link` (its CSP lifted for the driver's probes), once the script `ready` holds there."""
    page = browser.new_page(bypass_csp=True)
    page.goto(link)
    page.wait_for_function(ready, timeout=timeout)
    return page


def queue_check(tandem, first, second, check):
    """`--queue`: the host shares a queue of two files; the page is given both files at once (in the order that
    puts the second item first), loads the current item's by name and fingerprint, and the next one when the host
    moves on, without asking."""
    from playwright.sync_api import sync_playwright
    host = Host(tandem, first, second)
    try:
        link = host.browser_link()
        check("the host gives a browser link", link is not None, "\n".join(host.lines[-5:]) if link is None else "")
        if link is None:
            return
        with sync_playwright() as p:
            browser = launch(p)
            if browser is None:
                return 77
            page = open_page(browser, link, "window.tandem && tandem.joined === true && (tandem.people || []).length === 2")
            page.set_input_files("#file", [second, first])
            page.wait_for_function("tandem.ready === true && tandem.libraryLoads === 1", timeout=10000)
            check("from two files the page loads the current item's", page.evaluate("tandem.mismatch") is False
                  and page.evaluate("tandem.library") == 2, page.text_content("#mediaNote") or "")
            item = page.evaluate("tandem.activity.itemID")
            page.evaluate("tandem.ready = false")
            seen = len(host.events("participants"))
            host.send("next")
            page.wait_for_function("tandem.activity.itemID !== %s && tandem.ready === true && tandem.libraryLoads === 2"
                                   % json.dumps(item), timeout=15000)
            check("the next item loads without asking, matching the host's fingerprint",
                  page.evaluate("tandem.mismatch") is False, page.text_content("#mediaNote") or "")
            deadline, ready = time.monotonic() + 10, False
            while not ready and time.monotonic() < deadline:
                ready = any(p.get("name") == "browser" and p.get("readiness", {}).get("state") == "ready"
                            for e in host.events("participants")[seen:] for p in e.get("participants", []))
                time.sleep(0.05)
            check("the host sees the page ready for the next item", ready)
            browser.close()
    except Exception as error:
        check("no step timed out", False, str(error).splitlines()[0])
        print("  host said: " + " | ".join(host.lines[-8:]))
    finally:
        host.stop()


VECTORS_SCRIPT = """async (vectors) => {
  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  const unhex = (t) => new Uint8Array(t.match(/../g) || []).map((_, i) => parseInt(t.substr(i * 2, 2), 16));
  const key = await deriveAppKey(vectors.secret, vectors.session, true);
  const out = { key: hex(new Uint8Array(await crypto.subtle.exportKey("raw", key))), boxes: [] };
  for (const v of vectors.boxes) {
    const place = Object.assign({}, v.place, v.place.kind === "message" ? { sequence: BigInt(v.place.sequence) } : {});
    const aad = placeData(vectors.session, place);
    const box = await seal(key, unhex(v.plaintext), aad, unhex(v.nonce));
    let opened = null, elsewhere = null;
    try { opened = hex(await open(key, unhex(v.box), aad)); } catch (e) { opened = "threw " + e; }
    // The same box in another place (another sequence, index or id) must not open.
    const moved = Object.assign({}, place, place.kind === "message" ? { sequence: place.sequence + 1n }
                                           : place.kind === "record" ? { index: place.index + 1 } : { id: place.id + "x" });
    try { await open(key, unhex(v.box), placeData(vectors.session, moved)); elsewhere = "opened"; } catch (e) { elsewhere = "refused"; }
    out.boxes.push({ name: v.name, aad: hex(aad), box: hex(box), opened, elsewhere });
  }
  return out;
}"""


def vectors_check(tandem, media, path, check):
    """`--vectors`: the page's key derivation, places and boxes against the shared known answers."""
    from playwright.sync_api import sync_playwright
    with open(path) as f:
        vectors = json.load(f)
    host = Host(tandem, media)
    try:
        link = host.browser_link()
        check("the host gives a browser link", link is not None, "\n".join(host.lines[-5:]) if link is None else "")
        if link is None:
            return
        with sync_playwright() as p:
            browser = launch(p)
            if browser is None:
                return 77
            page = browser.new_page()
            page.goto(link)
            page.wait_for_function("typeof placeData === 'function' && typeof deriveAppKey === 'function'", timeout=10000)
            got = page.evaluate(VECTORS_SCRIPT, vectors)
            check("the page derives the shared key", got["key"] == vectors["key"], got["key"])
            for want, have in zip(vectors["boxes"], got["boxes"]):
                ok = (have["aad"] == want["aad"] and have["box"] == want["box"] and have["opened"] == want["plaintext"]
                      and have["elsewhere"] == "refused")
                check("the page seals and opens " + want["name"] + " in its place", ok, "" if ok else json.dumps(have))
            check("every known answer was checked", len(got["boxes"]) == len(vectors["boxes"]) >= 6)
            browser.close()
    except Exception as error:
        check("no step timed out", False, str(error).splitlines()[0])
    finally:
        host.stop()


GRID_SCRIPT = """() => {
  const R = 1e9 / 60, F = 1e9 / 30;
  // A browser that shows a page's frames with errors from the set phase + k * step, the value nearest the page's
  // media clock (its offset from the line, moved by each nudge), holding the one it shows until the clock is 4 ms
  // past the middle between two (its cadence); the frames' timestamps are rounded to the millisecond.
  function run(step, offset, frames = 600, drift = 0, frame = F) {
    const grid = new GridFollower(R);
    let clock = offset, shown = offset, nudge = 0, moves = 0, last = 0, firstNudge = null;
    const errors = [];
    for (let i = 0; i < frames; i++) {
      clock += nudge * F + drift * F;
      if (Math.abs(clock - shown) > step / 2 + 4e6) shown += Math.round((clock - shown) / step) * step;
      const error = shown + [0, -0.33e6, 0.33e6][i % 3];
      errors.push(error);
      nudge = grid.frame(error, i * F, 1, frame);
      if (nudge !== 0 && firstNudge === null) firstNudge = i;
      if (nudge !== 0 && last === 0) moves += 1;
      last = nudge;
    }
    const settledFrom = errors.findIndex((_, i) => errors.slice(i).every((e) => Math.abs(e - errors[errors.length - 1]) < 1e6));
    const late = errors.slice(300);
    return { moves, settledFrom, firstNudge, final: errors[errors.length - 1] / 1e6, nudge, step: grid.step / 1e6,
             worstAfter: Math.max(...errors.slice(settledFrom).map(Math.abs)) / 1e6, trim: grid.trim,
             outsideAfter10s: late.filter((e) => Math.abs(e) > R / 2 + 1e6).length / late.length };
  }
  // The values at which the page asks for the other phase of the refreshes, [frame, target ms], each followed by
  // the change (rephased): frames of `value` from the start, after `before` frames of `first`.
  function rephase(value, frames, frame = F, first = value, before = 0) {
    const grid = new GridFollower(R), asked = [];
    for (let i = 0; i < frames; i++) {
      grid.frame((i < before ? first : value) + [0, -0.33e6, 0.33e6][i % 3], i * F, 1, frame);
      const target = grid.rephaseTarget(i * F);
      if (target !== null) { asked.push([i, Math.round(target / 1e4) / 100]); grid.rephased(); }
    }
    return asked;
  }
  return {
    rephase: {
      wrong: rephase(-15e6, 90),            // on the other phase from the best (+1.67 ms): asks, twice at most
      near: rephase(-9e6, 90),              // within half a refresh and the margin: stays
      samePhase: rephase(-25e6, 90),        // +8.3 ms on its own phase: nudges get there, no change of phase
      far: rephase(-49e6, 90),              // past half a frame, on the other phase from the best (+1.0 ms)
      farSame: rephase(-23.2e6, 90),        // past half a frame, its own phase's nearest value (+10.1 ms)
                                            // a refresh from the best (-6.53 ms): asks at once, not after nudges
      late: rephase(-15e6, 130, F, -9e6, 100), // more than 3 s after the start: once, later
      slip: rephase(-16.4e6, 140, F, 0.3e6, 100), // on the grid for 3.3 s, then a refresh late: back, once
      wrongLong: rephase(-15e6, 400),       // on the other phase for 13 s: twice at once, then every 5 s
      everyRefresh: rephase(-15e6, 90, R),  // 60 fps on 60 Hz: no phases to choose from
    },
    // During a swing toward +1.7 ms, 30 fps on 60 Hz: what frames on the old phase, on the target, a frame past it
    // and two frames past it say (and a follower that has seen no frame yet, without a step: nothing)
    swing: (() => {
      const grid = new GridFollower(R);
      for (let i = 0; i < 3; i++) grid.frame(-15e6, i * F, 1, F);
      const fine = new GridFollower(R);
      return [-15e6, 18.3e6, 1.2e6, 2.9e6, 35.4e6, 68.4e6].map((e) => grid.swingBroken(e, 1.7e6))
        .concat([fine.swingBroken(1.7e6, 1.7e6)]);
    })(),
    // 60 fps on 60 Hz, every refresh a frame: from +13 ms to -3.7 ms
    fine: run(R, 13e6, 600, 0, R),
    // 30 fps on 60 Hz, every second refresh (Chromium): from -20.4 to +12.9 ms
    coarse: run(F, -20.4e6),
    hold: run(R, 9.0e6, 600, 0, R), // within half a refresh and the margin: left alone
    edge: run(F, 16.0e6),          // a whole frame apart: settles on one side, no hunting
    drift: run(R, 0, 3600, -1e-3, R), // a media clock 0.1 % slow (1 ms a second), for two minutes
    // Just after a start on every second refresh: a refresh late is left to the change of phase; a frame ahead not
    otherPhase: run(F, -18e6, 30),
    frameAhead: run(F, 33.5e6, 30),
  };
}"""


# A video's start steered onto the line (steer.js) with made-up frames and clock readings, each `behind` of the line
# and moving with the rate the page sets: the rates it sets, frame by frame (the page's own clock made up too).
STEER_SCRIPT = """(behind) => {
  const R = 1e9 / 60, F = 1e9 / 30, saved = window.localNanos;
  let now = 0;
  window.localNanos = () => now;
  try {
    const f = Object.create(Follower.prototype);
    f.video = { playbackRate: 1.04 }; f.token = 1; f.errors = []; f.clockOffsets = []; f.measuringStart = false;
    f.grid = { refresh: R, holding: () => 0, steered() { f.settled = true; }, rephased() {} };
    f.steering = f.newSteer(1, null);
    const rates = [];
    let clock = -behind;
    for (let i = 0; i < 30 && f.steering; i++) {
      now = i * F;
      f.errors.push(clock); f.clockOffsets.push(clock);
      f.steer({ rate: 1 });
      rates.push(Math.round(f.video.playbackRate * 100) / 100);
      clock += (f.video.playbackRate - 1) * F;
    }
    return { rates, settled: !!f.settled };
  } finally {
    window.localNanos = saved;
  }
}"""


def steer_check(page, check):
    """Where a start lands far behind, the steer goes 25 % fast for a while, then on at 4 %; far ahead, 25 % slow,
    then 4 %; near, at 4 % only."""
    far, near = page.evaluate(STEER_SCRIPT, 36e6), page.evaluate(STEER_SCRIPT, 8e6)
    ahead = page.evaluate(STEER_SCRIPT, -60e6)
    check("a start 60 ms ahead (a play() after a pause faster than planned) goes 25 % slow from its second frame, "
          "then 4 % slow", ahead["rates"][:2] == [1.04, 0.75] and 0.75 not in ahead["rates"][9:]
          and 0.96 in ahead["rates"][8:], json.dumps(ahead))
    check("a start 36 ms behind rushes 25 % fast from its second frame for as long as brings it near, then steers "
          "on at 4 %; one 8 ms behind steers at 4 % only",
          far["rates"][:1] == [1.04] and far["rates"][1] == 1.25 and 1.25 not in far["rates"][5:]
          and 1.04 in far["rates"][3:] and 1.25 not in near["rates"], json.dumps([far, near]))


def grid_check(page, check):
    """The page's refresh grid follower (grid.js) against simulated browsers: deterministic, not by luck."""
    got = page.evaluate(GRID_SCRIPT)
    fine, coarse, hold, edge, drift = (got[k] for k in ["fine", "coarse", "hold", "edge", "drift"])
    check("during a change of phase, a frame on the target or a frame past it ends the swing, and frames on the "
          "old phase or two frames past leave it as it is",
          got["swing"] == [False, False, True, True, True, False, False], json.dumps(got["swing"]))
    rephase = got["rephase"]
    check("frames held a refresh from the best value just after a start ask for the other phase, twice at most, "
          "once the start has settled", [target for _, target in rephase["wrong"]] == [1.67, 1.67]
          and 5 <= rephase["wrong"][0][0] <= 8, json.dumps(rephase["wrong"]))
    check("frames past half a frame ask for the other phase at once where its value is nearer the line "
          "(not after nudges have brought them to their own phase's nearest value)",
          [target for _, target in rephase["far"]] == [1.0, 1.0] and 5 <= rephase["far"][0][0] <= 8
          and [target for _, target in rephase["farSame"]] == [-6.53, -6.53] and 5 <= rephase["farSame"][0][0] <= 8,
          json.dumps([rephase["far"], rephase["farSame"]]))
    late_asks = [rephase[k] for k in ["slip", "late"]] + [rephase["wrongLong"][2:]]
    check("frames found on the other phase more than 3 s after a start (a slip of the browser's cadence) ask for it, "
          "5 s after the last ask at the soonest",
          [[t for _, t in asks] for asks in late_asks] == [[0.27], [1.67], [1.67, 1.67]]
          and all(100 <= asks[0][0] <= 103 for asks in late_asks[:2])
          and [i for i, _ in rephase["wrongLong"]][1:] == [20, 171, 321], json.dumps(rephase))
    check("no change of phase within half a refresh, on a phase with a value that near, "
          "or where every refresh shows a frame",
          not any(rephase[k] for k in ["near", "samePhase", "everyRefresh"]),
          json.dumps(rephase))
    check("with a frame on every refresh, the page moves its frames to the refresh nearest the line and stays",
          abs(fine["final"] + 3.67) < 0.5 and fine["settledFrom"] < 90 and fine["nudge"] == 0 and fine["moves"] <= 2,
          json.dumps(fine))
    check("with a 30 fps video on every second refresh, the page settles within half a frame, without hunting",
          abs(coarse["final"] - 12.93) < 0.5 and abs(coarse["step"] - 33.33) < 0.1 and coarse["settledFrom"] < 90
          and coarse["nudge"] == 0 and coarse["moves"] <= 1, json.dumps(coarse))
    check("an error within half a refresh and the margin is left alone (no hunting)",
          hold["moves"] == 0 and hold["settledFrom"] == 0, json.dumps(hold))
    check("a media clock drifting 1 ms a second is trimmed: after 10 s under 1 % of frames past half a refresh",
          drift["outsideAfter10s"] < 0.01 and 0.0005 < drift["trim"] <= 0.0015, json.dumps(drift))
    other, ahead = got["otherPhase"], got["frameAhead"]
    check("just after a start, frames a refresh off are not nudged before the change of phase is decided (6 frames); "
          "frames a whole frame off are nudged at once", other["firstNudge"] == 5 and ahead["firstNudge"] == 2,
          json.dumps([other["firstNudge"], ahead["firstNudge"]]))
    check("an error half a frame off settles on one side without hunting", edge["moves"] <= 3
          and edge["settledFrom"] < 200 and edge["worstAfter"] <= 18 and edge["nudge"] == 0, json.dumps(edge))


def damaged_copy(media):
    """MEDIA with every 20th byte after its first tenth inverted: the browser reads its header (metadata, ready),
    plays a couple of seconds and then fails to decode it (Chromium: PIPELINE_ERROR_DECODE)."""
    data = bytearray(open(media, "rb").read())
    for i in range(len(data) // 10, len(data), 20):
        data[i] ^= 0xFF
    path = os.path.join(tempfile.mkdtemp(prefix="tandem-web-"), os.path.basename(media))
    with open(path, "wb") as out:
        out.write(data)
    return path


def unplayable_check(tandem, media, not_media, check):
    """`--unplayable`: a page whose file the browser cannot play shows it (the failed state, the reason, what to do),
    runs no clock, tells the group (which goes on without it instead of waiting), and plays again once given a file
    it can play. Two failures: a damaged copy that loads (ready) and fails while playing with the group, and bytes
    that are not media at all."""
    from playwright.sync_api import sync_playwright
    damaged = damaged_copy(media)
    name = os.path.basename(media)
    host = Host(tandem, media, extra=("--fallback-url", "https://example.org/" + name))

    def page_failed(page, label, reason):
        page.wait_for_function("document.getElementById('status').className === 'error' && tandem.failed", timeout=20000)
        status, note = page.text_content("#status"), page.text_content("#mediaNote")
        check(label + ": the page shows the failed state and the reason", status.startswith("Cannot play here: the "
              "browser cannot play this file: ") and reason in status and "goes on without waiting for you" in status,
              status)
        check(label + ": ... and what to do (another copy, or the fallback URL)", note.startswith(
              "What you can do: choose another copy of " + name) and "Play from the fallback URL" in note, note)
        before = page.text_content("#clock")
        time.sleep(2)
        after = page.text_content("#clock")
        check(label + ": its clock does not run", before == after == "–:– / –:–" and page.evaluate("video.paused"),
              "%s, then %s" % (before, after))

    def host_sees_failed(since):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for e in host.events("participants")[since:]:
                for p in e.get("participants", []):
                    if p.get("name") == "browser" and p.get("readiness", {}).get("state") == "failed":
                        return p["readiness"].get("reason", "")
            time.sleep(0.05)
        return None

    def group_plays():
        """The host's group is playing (not waiting for the page) within 10 s."""
        return host.wait_for_event("position", lambda e: e.get("time", 0) > time.time() - 0.5
                                   and e.get("state") == "playing", 10) is not None

    try:
        link = host.browser_link()
        check("the host gives a browser link", link is not None, "\n".join(host.lines[-5:]) if link is None else "")
        if link is None:
            return
        with sync_playwright() as p:
            browser = launch(p)
            if browser is None:
                return 77
            page = open_page(browser, link, "window.tandem && tandem.joined === true && (tandem.people || []).length === 2"
                             " && tandem.wire.synchronised")

            # A damaged copy: ready, plays with the group, then fails to decode a couple of seconds in.
            page.set_input_files("#file", damaged)
            page.wait_for_function("tandem.ready === true", timeout=10000)
            seen = len(host.events("participants"))
            host.send("play")
            page.wait_for_function("statusOf(tandem.timeline) === 'playing' && !video.paused", timeout=10000)
            page_failed(page, "a copy that fails mid-play", "it does not decode")
            reason = host_sees_failed(seen)
            check("the group is told the page failed (its readiness), with the reason", reason is not None
                  and "cannot play this file" in reason, str(reason))
            check("the group plays on without the page", group_plays(), " | ".join(host.lines[-3:]))
            told = host.wait_for(lambda l: "browser could not load the item" in l, 5)
            check("the host sees a notice that the page could not play", told is not None)

            # Bytes that are not media: failed before any metadata, while the group plays.
            seen = len(host.events("participants"))
            page.set_input_files("#file", not_media)
            page_failed(page, "a file that is not media", "its format or codec is not supported here")
            check("the group is told again", host_sees_failed(seen) is not None)
            check("the group plays on without the page again", group_plays(), " | ".join(host.lines[-3:]))

            # A copy it can play: the failure is gone and the page plays with the group.
            page.set_input_files("#file", media)
            page.wait_for_function("tandem.ready === true && statusOf(tandem.timeline) === 'playing' && !video.paused",
                                   timeout=20000)
            before = page.text_content("#clock")
            time.sleep(1.5)
            after = page.text_content("#clock")
            status = page.text_content("#status")
            check("given a file it can play, the page plays with the group again", status.startswith("Ready as")
                  and page.get_attribute("#status", "class") != "error" and before != after,
                  "%s; clock %s, then %s" % (status, before, after))
            browser.close()
    except Exception as error:
        check("no step timed out", False, str(error).splitlines()[0])
        print("  host said: " + " | ".join(host.lines[-8:]))
    finally:
        host.stop()
        shutil.rmtree(os.path.dirname(damaged), ignore_errors=True)


def resumes(tandem, media, count):
    """`--resumes COUNT`: one page beside the host, which pauses and resumes COUNT times; for each resume, the first
    six frames' errors from the group's line (as the page measures them; its clock agrees with the ground truth to
    0.1 ms in the bench) and the changes of phase it made. A resume lands on the right refresh when its frames are
    within half a refresh of the line, else on the other phase of Chromium's cadence."""
    from playwright.sync_api import sync_playwright
    host = Host(tandem, media)
    landed, swings = [], 0
    try:
        link = host.browser_link()
        if link is None:
            print("the host printed no browser link: " + " | ".join(host.lines[-5:]))
            return 1
        with sync_playwright() as p:
            browser = launch(p)
            if browser is None:
                return 77
            page = open_page(browser, link, "window.tandem && tandem.joined === true && tandem.wire.synchronised", 15000)
            page.set_input_files("#file", media)
            host.send("play")
            page.wait_for_function("tandem.follower.frames > 10", timeout=20000)
            time.sleep(4)
            for number in range(count):
                generation = page.evaluate("tandem.timeline.generation")
                host.send("pause")
                wait_for_generation([page], generation)
                time.sleep(0.7)
                generation = page.evaluate("tandem.timeline.generation")
                seen = page.evaluate("tandem.follower.trace.length")
                before = page.evaluate("tandem.follower.corrections.rephases")
                host.send("play")
                wait_for_generation([page], generation, "statusOf(tandem.timeline) === 'playing'")
                time.sleep(1.6)
                first = page.evaluate("tandem.follower.trace.slice(%d, %d)" % (seen, seen + 6))
                errors = [round(entry[1] / 1e6, 1) for entry in first]
                clock = [None if entry[3] is None else round(entry[3] / 1e6, 1) for entry in first]
                changed = page.evaluate("tandem.follower.corrections.rephases") - before
                swings += changed
                typical = sorted(errors)[len(errors) // 2] if errors else None
                landed.append(typical is not None and abs(typical) <= 1e3 / 60 / 2)
                print("resume %d: first frames %s ms, media clock %s ms, changes of phase %d" % (
                    number + 1, errors, clock, changed), flush=True)
            browser.close()
    finally:
        host.stop()
    print("resumes: %d, on the right refresh %d, changes of phase %d" % (count, sum(landed), swings))
    return 0


def main():
    if sys.argv[1] == "--bench":
        return bench(sys.argv[4], sys.argv[5], float(sys.argv[2]), int(sys.argv[3]),
                     sys.argv[6] if len(sys.argv) > 6 else None)
    if sys.argv[1] == "--resumes":
        return resumes(sys.argv[3], sys.argv[4], int(sys.argv[2]))
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("SKIP: Playwright is not installed; run `make deps`")
        return 77
    if not os.access(CHROMIUM, os.X_OK):
        print("SKIP: no Chromium at " + CHROMIUM + "; run `make deps`")
        return 77
    if sys.argv[1] == "--vectors":
        if vectors_check(sys.argv[2], sys.argv[3], sys.argv[4], check) == 77:
            return 77
        passed = sum(1 for r in results if r)
        print("web peer vectors: %d passed, %d failed" % (passed, len(results) - passed))
        return 0 if results and passed == len(results) else 1
    if sys.argv[1] == "--queue":
        if queue_check(sys.argv[2], sys.argv[3], sys.argv[4], check) == 77:
            return 77
        passed = sum(1 for r in results if r)
        print("web peer queue: %d passed, %d failed" % (passed, len(results) - passed))
        return 0 if results and passed == len(results) else 1
    if sys.argv[1] == "--unplayable":
        if unplayable_check(sys.argv[2], sys.argv[3], sys.argv[4], check) == 77:
            return 77
        passed = sum(1 for r in results if r)
        print("web peer unplayable: %d passed, %d failed" % (passed, len(results) - passed))
        return 0 if results and passed == len(results) else 1
    tandem, media, screenshot = sys.argv[1:4]

    preview = png()
    host = Host(tandem, media, extra=("--preview", preview))
    try:
        event = host.wait_for_event("browser", lambda e: True, 20)
        check("the host's --json output has a browser event", event is not None and bool(event.get("link"))
              and event.get("loopbackLink", "absent") is None, json.dumps(event) if event else "\n".join(host.lines[-5:]))
        if event is None:
            return 1
        link = event["link"]
        check("the secret is in the fragment", "#" in link and "/join/" in link, link.split("#")[0])
        with sync_playwright() as p:
            try:
                browser = p.chromium.launch(executable_path=CHROMIUM,
                                            args=["--autoplay-policy=no-user-gesture-required", "--no-sandbox",
                                                  "--mute-audio"])
            except Exception as error:  # the one reason to skip: no browser to run the page in
                print("SKIP: the browser cannot start: " + str(error).splitlines()[0])
                return 77
            # Playwright's polling evaluates strings in the page, which the page's own CSP forbids: the test's
            # context lifts the CSP for its probes only.
            page = browser.new_page(viewport={"width": 1100, "height": 760}, bypass_csp=True)
            page.on("console", lambda m: m.type == "error" and "404" not in m.text and print("  page: " + m.text))
            page.goto(link)
            page.wait_for_function("window.tandem && window.tandem.joined === true", timeout=10000)
            check("the page joins the session", True)
            grid_check(page, check)
            steer_check(page, check)
            page.wait_for_function("(tandem.people || []).length === 2", timeout=5000)
            check("the page shows both participants", True, ", ".join(page.evaluate("tandem.people")))
            title = page.text_content("#title")
            check("the page shows the activity", bool(title) and title != "Tandem", title or "")
            page.wait_for_function("tandem.preview && document.getElementById('preview').naturalWidth === 48",
                                   timeout=10000)
            check("the page shows the host's preview image (fetched from the journal, opened, checked)", True,
                  json.dumps(page.evaluate("tandem.preview")))

            page.set_input_files("#file", media)
            page.wait_for_function("tandem.ready === true", timeout=10000)
            check("the file is checked against the host's fingerprint",
                  page.evaluate("tandem.mismatch") is False, page.text_content("#mediaNote") or "")
            page.wait_for_function("tandem.wire.synchronised", timeout=5000)

            host.send("play")
            page.wait_for_function("tandem.timeline && statusOf(tandem.timeline) === 'playing' && !video.paused",
                                   timeout=10000)
            check("the page plays when the host plays", True)
            time.sleep(2.5)
            stats = page.evaluate("tandem.follower.stats()")
            detail = "frames %d, |error| p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
                stats["frames"], (stats["p50"] or 0) / 1e6, (stats["p99"] or 0) / 1e6, (stats["max"] or 0) / 1e6)
            check("frames are measured against the group's line", stats["frames"] > 0 and stats["p50"] is not None
                  and stats["p50"] < 200e6, detail)

            def reported(e):
                return any(p.get("name") == "browser" and isinstance(p.get("renderOffsetMs"), (int, float))
                           for p in e.get("participants", []))
            event = host.wait_for_event("participants", reported, 5)
            offset = event and [p["renderOffsetMs"] for p in event["participants"] if p.get("name") == "browser"][0]
            check("the page's render offset reaches the host (participants event)",
                  event is not None and abs(offset) < 200, "renderOffsetMs %s" % offset)

            host.send("pause")
            page.wait_for_function("statusOf(tandem.timeline) === 'paused' && video.paused", timeout=5000)
            page.wait_for_function("Math.abs(video.currentTime * 1e9 - tandem.timeline.anchorItemTime) < 0.05e9",
                                   timeout=5000)
            check("the page pauses where the host paused", True,
                  "%.3f s" % page.evaluate("tandem.timeline.anchorItemTime / 1e9"))

            host.send("seek 3")
            page.wait_for_function("Math.abs(tandem.timeline.anchorItemTime - 3e9) < 1e6 && "
                                   "Math.abs(video.currentTime - 3) < 0.05", timeout=5000)
            check("the page follows the host's seek", True)

            page.click("h1")  # nothing focused: the page's keys apply
            # The keys use the session's limits, announced in the welcome (defaults: 10 s steps, rates 0.5 to 2).
            limits = page.evaluate("tandem.limits")
            check("the welcome announces the session's playback limits", bool(limits)
                  and limits.get("smallSeekStep") == 10e9 and limits.get("maximumRate") == 4, str(limits))
            page.keyboard.press("ArrowRight")
            page.wait_for_function("Math.abs(tandem.timeline.anchorItemTime - 13e9) < 1e6", timeout=5000)
            page.keyboard.press("ArrowLeft")
            page.wait_for_function("Math.abs(tandem.timeline.anchorItemTime - 3e9) < 1e6", timeout=5000)
            check("→ and ← seek the group by the session's small step", True)
            # Three seeks timed: the page reports the preroll it needs with its next link report (a second apart).
            try:
                page.wait_for_function("typeof tandem.wire.reportedPreroll === 'number'", timeout=3000)
            except Exception:
                pass
            preroll = page.evaluate("tandem.wire.reportedPreroll ?? null")
            # Measured, not assumed: from the page's own timed seeks (its slowest, and play()'s latency), between
            # the floor and the cap it reports. Not bounded by how fast seeks are here: they took 0.2–0.3 s with the
            # second half of `make test` beside them, and up to a second with the whole suite beside it.
            seeks = page.evaluate("tandem.follower.seekTimes")
            check("the page times its seeks and reports the preroll it needs (from its own seeks, 30 ms to 1 s)",
                  isinstance(preroll, (int, float)) and 30e6 <= preroll <= 1e9 and len(seeks) >= 3
                  and preroll >= min(seeks), "prerollEstimate %s, seek times %s" % (preroll, seeks))
            # And how long its play() takes, which starts from where it stands prerolled wait for: its learned
            # latency (at most 150 ms) and 10 ms, sent again once it moves by 5 ms.
            try:
                page.wait_for_function("typeof tandem.wire.reportedStartLatency === 'number' && "
                                       "Math.abs(tandem.wire.reportedStartLatency - tandem.follower.startLead()) < 5e6",
                                       timeout=3000)
            except Exception:
                pass
            lead = page.evaluate("tandem.wire.reportedStartLatency ?? null")
            check("the page reports the start latency it learned (play()'s, and 10 ms)",
                  isinstance(lead, (int, float)) and 10e6 <= lead <= 160e6
                  and abs(lead - page.evaluate("tandem.follower.startLead()")) < 5e6, "startLatency %s" % lead)
            page.keyboard.press("]")
            page.wait_for_function("tandem.timeline.rate === 1.25 && $('rate').value === '1.25'", timeout=5000)
            page.keyboard.press("[")
            page.wait_for_function("tandem.timeline.rate === 1", timeout=5000)
            check("] and [ step the group's rate through the session's steps", True)
            page.keyboard.press("Space")
            page.wait_for_function("statusOf(tandem.timeline) === 'playing' && !video.paused", timeout=10000)
            played = host.wait_for(lambda l: "browser played" in l, 5)
            check("the page's own play starts the group", played is not None, played or "")
            page.wait_for_function("tandem.notices.some((n) => n.includes('browser played'))", timeout=5000)
            check("the page shows notices", True)

            # A seek back while the page plays: the page, still on the old line when it arrives, is past the
            # seek's target, and that is no stop it played past; the group plays on from the target.
            page.wait_for_function("!video.paused && video.currentTime > 3.5", timeout=5000)
            host.send("seek 1")
            page.wait_for_function("statusOf(tandem.timeline) === 'playing' && !video.paused && "
                                   "Math.abs(tandem.timeline.anchorItemTime - 1e9) < 1e6 && video.currentTime < 2.5",
                                   timeout=5000)
            time.sleep(0.5)
            line = page.evaluate("[tandem.timeline.anchorItemTime / 1e9, video.currentTime]")
            check("the page follows the host's seek back while playing", abs(line[0] - 1) < 1e-3 and line[1] < 3,
                  "the group from %.3f s, the page at %.3f s" % tuple(line))

            page.fill("#chatText", "hello from the browser")
            page.click("#chatSend")
            said = host.wait_for(lambda l: "hello from the browser" in l, 5)
            check("chat from the page reaches the host (sealed end to end)", said is not None, said or "")
            host.send("chat hello from the terminal")
            page.wait_for_function("tandem.chat.includes('hello from the terminal')", timeout=5000)
            check("chat from the host reaches the page", True)

            # The link drops (the page's socket closes under it): the page reconnects as the same participant
            # and follows what the group does next.
            before = page.evaluate("tandem.me.id")
            page.evaluate("tandem.wire.ws.close()")
            page.wait_for_function("tandem.reconnecting >= 1", timeout=5000)
            page.wait_for_function("tandem.rejoined >= 1 && tandem.wire.state === 'accepted'", timeout=20000)
            after = page.evaluate("tandem.me.id")
            check("the page reconnects as the same participant", before == after, "%s, then %s" % (before, after))
            page.wait_for_function("statusOf(tandem.timeline) === 'playing' && !video.paused", timeout=10000)
            host.send("pause")
            page.wait_for_function("statusOf(tandem.timeline) === 'paused' && video.paused && "
                                   "Math.abs(video.currentTime * 1e9 - tandem.timeline.anchorItemTime) < 0.05e9",
                                   timeout=10000)
            check("after reconnecting the page follows the host's pause", True,
                  "%.3f s" % page.evaluate("tandem.timeline.anchorItemTime / 1e9"))
            # Chat goes on across the reconnect both ways, with nothing taken for the relay's doing.
            page.fill("#chatText", "again from the browser")
            page.click("#chatSend")
            said = host.wait_for(lambda l: "again from the browser" in l, 5)
            host.send("chat again from the terminal")
            page.wait_for_function("tandem.chat.includes('again from the terminal')", timeout=5000)
            drops = page.evaluate("tandem.wire.drops")
            altered = [e for e in host.events("notice") if e.get("kind") == "appDataAltered"]
            check("after reconnecting chat crosses both ways, and neither side drops or warns of anything",
                  said is not None and not any(drops.values()) and page.evaluate("tandem.altered === undefined")
                  and not altered, json.dumps(drops) + " " + json.dumps(altered))

            time.sleep(1)
            page.screenshot(path=screenshot)
            check("screenshot written", os.path.getsize(screenshot) > 0, screenshot)
            browser.close()
    except Exception as error:
        check("no step timed out", False, str(error).splitlines()[0])
        print("  host said: " + " | ".join(host.lines[-8:]))
    finally:
        host.stop()
        shutil.rmtree(os.path.dirname(preview), ignore_errors=True)
    passed = sum(1 for r in results if r)
    print("web peer: %d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
