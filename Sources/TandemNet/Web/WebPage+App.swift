extension WebPage {
    /// The page's participant: joins, shows the activity, the people, notices and chat, loads the person's own
    /// copy of the file (checked against the host's fingerprint) or the fallback URL, and sends the controls.
    static let appScript = #"""
    "use strict";
    const $ = (id) => document.getElementById(id);
    const video = $("video");
    const session = decodeURIComponent(location.pathname.replace(/^\/join\//, "").replace(/\/$/, ""));
    const secret = decodeURIComponent(location.hash.slice(1));
    const CHAT_TYPE = "TandemPeer.ChatLine";
    let me = null, people = [], activity = null, hostMedia = null, requestID = 0, follower = null, objectURL = null;
    let reconnectToken = null, readyInfo = null;
    /** The session's playback limits from the welcome (rate range and steps, seek steps): the keys use them. */
    let limits = null;
    /** Why the browser cannot play the chosen copy (null: it can, or nothing is chosen yet), and the listeners of the
     *  latest load (each new load drops the previous one's, so a stale file never reports for the current one). */
    let failure = null, loadWatch = null;
    /** Files picked together (several, or a folder): each item of the queue is found here by name and fingerprint. */
    let library = [];
    const MAX_LIBRARY = 5000, MAX_FINGERPRINTS = 200;
    /** The host's preview image: a journal attachment of this name, fetched when offered, at most this large
     *  (256 KiB of image as base64 JSON, sealed), one at a time, each at most once. */
    const PREVIEW_NAME = "value:TandemPeer.PreviewImage", MAX_PREVIEW_BYTES = 415061;
    let preview = null; const previewTried = new Set();
    const tandem = window.tandem = { events: [], notices: [], chat: [] };

    function show(id, text, cls) { const el = $(id); el.textContent = text; el.className = cls || ""; }
    function status(text, cls) { show("status", text, cls); tandem.events.push(text); }
    function addLine(listID, text, cls) {
      const li = document.createElement("li"); li.textContent = text; if (cls) li.className = cls;
      const list = $(listID); list.appendChild(li); while (list.children.length > 100) list.firstChild.remove();
      list.scrollTop = list.scrollHeight;
    }
    function nameOf(id) { const p = people.find((s) => s.participant.id === id); return p ? p.participant.name : id; }
    function clockText(seconds) { if (!isFinite(seconds)) return "–"; const s = Math.max(0, Math.floor(seconds));
      return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }

    if (!session || !secret) {
      status("This link is incomplete: open the browser link tandem prints (…/join/SESSION#SECRET).", "error");
    } else {
      const wire = new TandemWire(session, secret, {
        accepted(again) {
          status(again ? "Connected again; rejoining…" : "Authenticated; joining…");
          // 300 ms until the page has timed its own seeks (`Follower.prerollEstimate`); again after a reconnect.
          const measured = follower ? follower.prerollEstimate() : null;
          wire.reportedPreroll = measured; wire.reportedStartLatency = null;
          const join = { name: "browser", prerollEstimate: measured ?? 300000000, lazyJournal: true };
          // The same participant again: the id and the token of the latest welcome.
          if (again && me && reconnectToken) { join.reconnectAs = me.id; join.reconnectToken = reconnectToken; }
          wire.sendMessage({ join });
        },
        reconnecting(reason, secondsLeft) {
          tandem.reconnecting = (tandem.reconnecting || 0) + 1; setControls(false);
          status("Connection lost (" + reason + "); reconnecting… (for up to " + secondsLeft + " s more)", "warn");
        },
        renderOffset() { return follower ? follower.currentOffset() : null; },
        display() { return follower ? follower.displayGrid() : null; },
        preroll() { return follower ? follower.prerollEstimate() : null; },
        startLatency() { return follower ? follower.startLead() : null; },
        message(m) { onMessage(m); },
        clock(offset, roundTrip) {
          show("sync", "clock: round trip " + (roundTrip / 1e6).toFixed(1) + " ms" + syncText());
          if (follower) follower.clockReady();
        },
        app(source, plaintext) { onApp(source, plaintext); },
        altered(text) { tandem.altered = text; addLine("notices", "⚠ " + text, "warn"); },
        journalChunk(id, offset, bytes) {
          if (!preview || preview.id !== id) return;
          if (offset !== preview.got || preview.got + bytes.length > preview.size) { previewFailed("its chunks do not add up"); return; }
          preview.buffer.set(bytes, preview.got); preview.got += bytes.length;
        },
        closed(reason) { status("Disconnected: " + reason, "error"); tandem.closed = reason; setControls(false); },
      });
      tandem.wire = wire;
      follower = new Follower(video, wire, { problem: (text) => status(text, "warn") });
      tandem.follower = follower;
      wire.open().catch((e) => status(e.message, "error"));
      window.addEventListener("pagehide", () => { if (wire.state !== "closed") wire.leave(); });

      function onMessage(m) {
        const [kind] = Object.keys(m), body = m[kind];
        switch (kind) {
        case "welcome": {
          const snap = body._0, again = tandem.joined === true, before = me;
          me = tandem.me = snap.localParticipant; people = snap.participants; reconnectToken = snap.reconnectToken || null;
          if (snap.playbackLimits) { limits = tandem.limits = snap.playbackLimits; showRates(); }
          wire.rejoined(me.id);
          if (snap.activity) showActivity(snap.activity);
          renderPeople(); setControls(true);
          if (again) {
            // The server dropped this participant's readiness and preroll with the old connection: say them again.
            tandem.rejoined = (tandem.rejoined || 0) + 1;
            status("Reconnected as " + me.name + (before && before.id !== me.id ? " (a new participant: the old one had expired)" : "") + ".");
            addLine("notices", "Reconnected to the session.");
          } else status("Joined as " + me.name + " (" + me.id + "). Choose your copy of the file.");
          tandem.joined = true;
          wire.sendMessage({ readiness: { _0: readyInfo ? { ready: { _0: readyInfo } }
            : failure ? { failed: { _0: failure } } : { loading: {} } } });
          if (snap.timeline) timelineChanged(snap.timeline);
          if (again) follower.reportPreparedAgain(); else offerHostMedia();
          if (failure) showFailure();
          break; }
        case "timeline": timelineChanged(body._0); break;
        case "participants": people = body._0; renderPeople(); break;
        case "activity": showActivity(body._0); break;
        case "notice": {
          const n = body._0; tandem.notices.push(n.text);
          addLine("notices", (n.kind === "app" ? nameOf(n.participant) + ": " : "") + n.text,
                  n.kind === "differentMedia" || n.kind === "limitExceeded" ? "warn" : "");
          break; }
        case "journal": onJournal(body._0); break;
        case "rejected": addLine("notices", "Not done: " + body.reason, "warn"); break;
        case "refused": addLine("notices", "Refused: " + body.reason, "warn"); break;
        case "invalidated": status("The session ended for you: " + body._0.message, "error"); break;
        default: break;  // queue, journal, clock pongs in JSON: nothing to show
        }
      }

      function timelineChanged(t) {
        tandem.timeline = t; tandem.timelineAt = performance.timeOrigin + performance.now();
        const kind = statusOf(t);
        $("play").textContent = kind === "paused" ? "Play" : "Pause";
        if (limits) showRates();
        if (failure) { /* the failure and what to do about it stay shown */ }
        else if (kind === "waiting") {
          const who = t.status.waiting.for.filter((x, i) => i % 2 === 0).map(nameOf);
          show("mediaNote", who.length ? "Waiting for " + who.join(", ") : "Starting…");
        } else if (follower.loaded) show("mediaNote", kind === "playing" ? "Playing with the group" : "Paused");
        follower.apply(t);
      }

      function showActivity(envelope) {
        const moved = activity && activity.itemID !== envelope.itemID;
        activity = envelope; const meta = envelope.metadata || {};
        try { hostMedia = JSON.parse(fromUTF8.decode(unb64(envelope.payload))); } catch (e) { hostMedia = null; }
        if (moved) {
          // Another item of the queue: the file loaded so far is not it.
          readyInfo = null; failure = null; tandem.failed = null; follower.setLoaded(false);
          if (loadWatch) loadWatch.abort();
          video.pause(); video.removeAttribute("src"); video.load();
          wire.sendMessage({ readiness: { _0: { loading: {} } } });
          if (library.length) loadFromLibrary();
          else show("mediaNote", "The group moved on: choose your copy of " + (meta.title || "the next item") + ".", "warn");
        }
        show("title", meta.title || (hostMedia && hostMedia.fileName) || "Tandem");
        show("subtitle", meta.subtitle || "");
        let line = "Type: " + (meta.type || "generic");
        if (hostMedia && hostMedia.fileName) line += " · file: " + hostMedia.fileName;
        if (hostMedia && hostMedia.duration) line += " · " + clockText(hostMedia.duration / 1e9);
        show("meta", line);
        const fallback = meta.fallbackURL && /^https?:\/\//i.test(meta.fallbackURL) ? meta.fallbackURL : null;
        $("fallback").hidden = !fallback;
        $("fallback").onclick = () => { if (fallback) load(fallback, null); };
        tandem.activity = envelope;
      }

      /** When the host offers its file (`--web-media`), a button streams it by range requests. */
      async function offerHostMedia() {
        const url = "/media/" + encodeURIComponent(session) + "?t=" + await mediaToken(secret, session);
        const answer = await fetch(url, { method: "HEAD" }).catch(() => null);
        tandem.hostMedia = !!(answer && answer.ok);
        $("stream").hidden = !tandem.hostMedia;
        $("stream").onclick = () => load(url, null, hostMedia && hostMedia.contentID);
      }

      /** Attachments: only the host's preview image is fetched (lazily, bounded), checked and shown. */
      async function onJournal(j) {
        const [kind] = Object.keys(j), body = j[kind];
        if (kind === "available") {
          const info = body._0;
          if (preview || previewTried.has(info.id) || (me && info.owner === me.id)) return;
          let name = null;
          try {
            name = fromUTF8.decode(await open(wire.appKey, unb64(info.name), placeData(session, { kind: "name", owner: info.owner, id: info.id })));
          } catch (e) { return; }
          if (name !== PREVIEW_NAME || preview || previewTried.has(info.id)) return;
          previewTried.add(info.id);
          if (info.size > MAX_PREVIEW_BYTES) { addLine("notices", "Ignored a preview image of " + info.size + " bytes (the limit is " + MAX_PREVIEW_BYTES + ")", "warn"); return; }
          preview = { id: info.id, owner: info.owner, size: info.size, sha256: info.sha256, got: 0, buffer: new Uint8Array(info.size) };
          wire.sendMessage({ journal: { _0: { fetch: { id: info.id } } } });
        } else if (kind === "failed" && preview && body.id === preview.id) previewFailed(body.reason);
        else if (kind === "commit" && preview && body.id === preview.id) {
          const done = preview;
          if (done.got !== done.size) return previewFailed("it ended early");
          const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", done.buffer));
          if (Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("") !== done.sha256) return previewFailed("its checksum differs");
          try {
            const value = JSON.parse(fromUTF8.decode(await openRecords(wire.appKey, session, done.owner, done.id, done.buffer)));
            const bytes = unb64(value.bytes), format = imageFormat(bytes);
            if (!format || format !== value.format || bytes.length > 256 * 1024) return previewFailed("it is not a PNG, JPEG, GIF or WebP image");
            $("preview").src = URL.createObjectURL(new Blob([bytes], { type: "image/" + format }));
            $("preview").hidden = false; tandem.preview = { format, bytes: bytes.length };
            preview = null;
          } catch (e) { previewFailed("it does not open with this session's key"); }
        }
      }
      function previewFailed(why) { preview = null; addLine("notices", "Could not show the host's preview image: " + why, "warn"); }
      /** An image's format by its first bytes, as native peers judge it. */
      function imageFormat(b) {
        const starts = (...m) => m.every((x, i) => b[i] === x), text = (at, t) => fromUTF8.decode(b.slice(at, at + t.length)) === t;
        if (starts(0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A)) return "png";
        if (starts(0xFF, 0xD8, 0xFF)) return "jpeg";
        if (text(0, "GIF87a") || text(0, "GIF89a")) return "gif";
        if (b.length >= 12 && text(0, "RIFF") && text(8, "WEBP")) return "webp";
        return null;
      }

      function renderPeople() {
        const list = $("people"); list.replaceChildren();
        for (const p of people) {
          const readiness = Object.keys(p.readiness)[0];
          let text = p.participant.name + (p.participant.id === (me && me.id) ? " (you)" : "") + (p.isHost ? " · host" : "")
            + " · " + readiness;
          if (p.suspensions && p.suspensions.length) text += " (" + p.suspensions.join(", ") + ")";
          addLine("people", text);
        }
        tandem.people = people.map((p) => p.participant.name);
      }

      /** Loads a file or URL; `file` (a File) is checked against the host's fingerprint first. */
      async function load(source, file, knownContentID) {
        if (loadWatch) loadWatch.abort();
        const watch = loadWatch = new AbortController();
        readyInfo = null; failure = null; tandem.failed = null; follower.setLoaded(false);
        wire.sendMessage({ readiness: { _0: { loading: {} } } });
        status("Opening " + (file ? file.name : "the stream") + "…");
        let contentID = knownContentID || null;
        if (file) {
          contentID = await fingerprint(file);
          if (watch !== loadWatch) return;  // another file was chosen meanwhile
          const theirs = hostMedia && hostMedia.contentID;
          if (theirs && theirs !== contentID) {
            show("mediaNote", "Warning: your file's content differs from the host's (" + (hostMedia.fileName || "their file")
              + "); the group may see different pictures.", "warn");
            tandem.mismatch = true;
          } else { show("mediaNote", "Your file matches the host's."); tandem.mismatch = false; }
        }
        if (objectURL) URL.revokeObjectURL(objectURL);
        objectURL = file ? source : null;
        video.src = source;
        video.addEventListener("loadedmetadata", () => {
          const info = { isSeekable: true, hasVideo: video.videoWidth > 0, hasAudio: true };
          if (isFinite(video.duration)) info.duration = Math.round(video.duration * 1e9);
          if (contentID) info.contentID = contentID;
          $("seek").max = isFinite(video.duration) ? String(video.duration) : "0";
          readyInfo = info;
          wire.sendMessage({ readiness: { _0: { ready: { _0: info } } } });
          tandem.ready = true;
          status("Ready as " + me.name + ": the group plays when it plays.");
          follower.setLoaded(true);
        }, { once: true, signal: watch.signal });
        // Before the metadata (not a media file, no codec for any stream) or after it (a frame that will not
        // decode, even in the middle of playing).
        video.addEventListener("error", () => {
          const e = video.error, kind = e && MEDIA_ERRORS[e.code];
          cannotPlay("the browser cannot play this file: " + (kind || "error " + (e ? e.code : "?"))
            + (e && e.message ? " (" + e.message + ")" : ""));
        }, { once: true, signal: watch.signal });
      }
      const MEDIA_ERRORS = { 1: "loading was stopped", 2: "a network error interrupted it",
        3: "it does not decode (a damaged file, or a codec this browser lacks)", 4: "its format or codec is not supported here" };
      /** The chosen copy cannot play: stop following the group and tell it so (readiness `failed`: the group goes on
       *  without this page, as for a native peer whose file will not load, rather than waiting for it), and tell
       *  the person why and what they can do. The page stays in the session: chat, the people, another file. */
      function cannotPlay(why) {
        if (loadWatch) loadWatch.abort();
        failure = why; readyInfo = null; tandem.ready = false; tandem.failed = why;
        follower.halt(); video.removeAttribute("src"); video.load();
        wire.sendMessage({ readiness: { _0: { failed: { _0: why } } } });
        showFailure();
      }
      function showFailure() {
        status("Cannot play here: " + failure + ". The group goes on without waiting for you.", "error");
        const ways = ["choose another copy of " + ((hostMedia && hostMedia.fileName) || "the file")
          + " in a format this browser plays (WebM or MP4, for instance)"];
        if (!$("stream").hidden) ways.push("press “Stream the host's file”");
        if (!$("fallback").hidden) ways.push("press “Play from the fallback URL”");
        show("mediaNote", "What you can do: " + ways.join(", or ") + ".", "error");
        showClock();
      }
      /** The picked file for the current item: the host's file name with the host's fingerprint, else the same
       *  content under another name (at most MAX_FINGERPRINTS files read), else the same name (with the warning). */
      async function findInLibrary() {
        if (!hostMedia) return null;
        const named = library.filter((f) => f.name === hostMedia.fileName);
        if (!hostMedia.contentID) return named[0] || null;
        let read = 0;
        for (const f of named.concat(library.filter((f) => f.name !== hostMedia.fileName))) {
          if (read++ >= MAX_FINGERPRINTS) break;
          if (await fingerprint(f) === hostMedia.contentID) return f;
        }
        return named[0] || null;
      }
      async function loadFromLibrary() {
        const item = activity && activity.itemID;
        const file = await findInLibrary();
        if (!activity || activity.itemID !== item) return;  // the group moved on meanwhile
        if (file) { tandem.libraryLoads = (tandem.libraryLoads || 0) + 1; return load(URL.createObjectURL(file), file); }
        show("mediaNote", "None of the " + library.length + " files you picked is " + ((hostMedia && hostMedia.fileName)
          || "this item") + ": choose your copy of it.", "warn");
      }
      /** One file: that is the copy. Several, or a folder: the library the queue's items are found in. */
      function picked(files) {
        const list = Array.from(files).filter((f) => f.size > 0);
        if (list.length === 1) { library = []; return load(URL.createObjectURL(list[0]), list[0]); }
        library = list.slice(0, MAX_LIBRARY); tandem.library = library.length;
        if (library.length) loadFromLibrary();
      }
      $("file").addEventListener("change", (e) => picked(e.target.files));
      $("folder").addEventListener("change", (e) => picked(e.target.files));

      // Controls: requests to the group; nothing plays until the group's timeline says so.
      function request(command) {
        const t = tandem.timeline; if (!t) return;
        requestID += 1;
        wire.sendMessage({ timelineRequest: { _0: { requestID, command, basedOnGeneration: t.generation,
          requestedAtSessionTime: Math.round(wire.sessionTime() ?? 0) } } });
      }
      /** Where the group is now (ns), by its line: what a page that plays nothing pauses at. */
      function groupPosition(t) { return statusOf(t) === "playing" ? follower.expected(wire.sessionTime()) : t.anchorItemTime; }
      function togglePlay() {
        const t = tandem.timeline; if (!t) return;
        if (statusOf(t) === "paused") request({ play: {} });
        else {
          video.pause();
          request({ pause: { itemTime: follower.loaded ? follower.position() : Math.max(0, Math.round(groupPosition(t))) } });
        }
      }
      /** A seek `offset` ns from where the group is; the authority clamps it to the item. */
      function seekBy(offset) {
        const t = tandem.timeline; if (!t) return;
        request({ seek: { itemTime: Math.round(groupPosition(t) + offset), play: statusOf(t) !== "paused" } });
      }
      function setRate(rate) { request({ rate: { _0: rate } }); }
      /** The session's next rate step up (or down) from the group's rate. */
      function stepRate(up) {
        const t = tandem.timeline; if (!t || !limits) return;
        const steps = limits.rateSteps.filter((r) => r >= limits.minimumRate && r <= limits.maximumRate).sort((a, b) => a - b);
        const next = up ? steps.find((r) => r > t.rate + 1e-9) : steps.filter((r) => r < t.rate - 1e-9).pop();
        if (next === undefined) addLine("notices", "Already at the " + (up ? "fastest" : "slowest") + " rate.", "warn");
        else setRate(next);
      }
      /** The speed menu offers the session's rate steps (and the group's rate, when it is none of them). */
      function showRates() {
        const rate = tandem.timeline ? tandem.timeline.rate : 1;
        const rates = limits.rateSteps.includes(rate) ? limits.rateSteps : limits.rateSteps.concat([rate]).sort((a, b) => a - b);
        $("rate").replaceChildren(...rates.map((r) => { const o = document.createElement("option");
          o.value = String(r); o.textContent = r + "×"; return o; }));
        $("rate").value = String(rate);
      }
      tandem.controls = { togglePlay, seekBy, setRate, stepRate, seekTo: (s) => { const t = tandem.timeline;
        request({ seek: { itemTime: Math.round(s * 1e9), play: !!t && statusOf(t) !== "paused" } }); } };
      $("play").addEventListener("click", togglePlay);
      $("seek").addEventListener("change", (e) => tandem.controls.seekTo(Number(e.target.value)));
      $("rate").addEventListener("change", (e) => setRate(Number(e.target.value)));
      document.addEventListener("keydown", (e) => {
        // Fields and buttons keep their own keys (a focused button already plays on space).
        if (["INPUT", "SELECT", "BUTTON", "TEXTAREA"].includes(e.target.tagName)) return;
        if (e.key === " ") { e.preventDefault(); togglePlay(); return; }
        if (!limits) return;
        const steps = { ArrowLeft: -limits.smallSeekStep, ArrowRight: limits.smallSeekStep,
                        ArrowUp: limits.largeSeekStep, ArrowDown: -limits.largeSeekStep };
        if (e.key in steps) { e.preventDefault(); seekBy(steps[e.key]); }
        else if (e.key === "[" || e.key === "]") stepRate(e.key === "]");
      });
      /** The position in the chosen copy; after a failure nothing plays: no clock that looks as if something did. */
      function showClock() {
        $("clock").textContent = failure ? "–:– / –:–" : clockText(video.currentTime) + " / " + clockText(video.duration);
      }
      setInterval(() => {
        showClock();
        if (document.activeElement !== $("seek")) $("seek").value = String(video.currentTime);
        show("sync", $("sync").textContent.replace(/ · offset.*$/, "") + syncText());
      }, 250);

      // Chat: sealed app messages of the CLI's chat type, so native peers and browsers read each other.
      $("chatForm").addEventListener("submit", (e) => {
        e.preventDefault();
        const text = $("chatText").value.replace(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/g, " ").trim().slice(0, 500);
        if (!text) return;
        const body = b64(utf8.encode(JSON.stringify({ text })));
        wire.sendApp(concat(new Uint8Array([1]), utf8.encode(JSON.stringify({ type: CHAT_TYPE, body }))));
        addLine("chat", "you: " + text); $("chatText").value = "";
      });
      function onApp(source, plaintext) {
        if (plaintext[0] !== 1) { addLine("chat", nameOf(source) + " sent " + (plaintext.length - 1) + " bytes"); return; }
        try {
          const wrapper = JSON.parse(fromUTF8.decode(plaintext.slice(1)));
          if (wrapper.type === CHAT_TYPE) {
            const line = JSON.parse(fromUTF8.decode(unb64(wrapper.body)));
            const text = String(line.text).replace(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/g, " ").trim().slice(0, 500);
            tandem.chat.push(text); addLine("chat", nameOf(source) + ": " + text);
          } else addLine("chat", nameOf(source) + " sent a " + wrapper.type.slice(0, 80));
        } catch (e) { /* not ours to read */ }
      }
      function setControls(on) {
        for (const id of ["play", "seek", "rate", "chatText", "chatSend"]) $(id).disabled = !on;
      }
      function syncText() {
        const s = follower ? follower.stats() : null;
        if (!s || s.last === null) return "";
        return " · offset " + (s.last / 1e6).toFixed(1) + " ms (p99 " + (s.p99 / 1e6).toFixed(1) + " ms over " + s.frames + " frames)";
      }
    }
    """#
}
