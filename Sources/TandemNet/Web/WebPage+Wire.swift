extension WebPage {
    /// The wire: native frames in binary WebSocket messages, the challenge-response with WebCrypto, clock sync,
    /// and sealing of app data (AES-256-GCM with the key every participant derives from the invite).
    static let wireScript = #"""
    "use strict";
    const Kind = { hello: 1, challenge: 2, authProof: 3, accepted: 4, error: 5, ping: 6, pong: 7, close: 8,
                   session: 0x10, clockPing: 0x11, clockPong: 0x12, appMessage: 0x13, journalChunk: 0x14 };
    const PROTOCOL_VERSION = 3;
    const utf8 = new TextEncoder(), fromUTF8 = new TextDecoder();

    function b64(bytes) { let s = ""; for (const b of bytes) s += String.fromCharCode(b); return btoa(s); }
    function unb64(text) { const s = atob(text); const out = new Uint8Array(s.length);
      for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i); return out; }
    function concat(...parts) { const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0)); let at = 0;
      for (const p of parts) { out.set(p, at); at += p.length; } return out; }
    /** Monotonic now in integer nanoseconds (the page's local clock). */
    function localNanos() { return Math.round(performance.now() * 1e6); }

    /** A native frame: length u32 BE (kind + body), kind u8, body. */
    function frame(kind, body) {
      const out = new Uint8Array(5 + body.length);
      new DataView(out.buffer).setUint32(0, body.length + 1); out[4] = kind; out.set(body, 5); return out;
    }

    /** Codes after which the session is over for this page: it does not reconnect. */
    const FINAL_CODES = ["ended", "hostLeft", "removed", "left", "serverShutdown", "authenticationFailed",
                         "noSuchSession", "sessionEnded", "sessionFull", "serverFull", "protocolVersion"];
    /** Reconnecting: 0.25 s doubling to 2 s between attempts, for at most this long after the link was lost. */
    const RECONNECT_FOR_MS = 60000;

    /** One participant's connection: WebSocket, handshake, heartbeats, clock sync, session messages; a lost
     *  connection is opened again (handlers.reconnecting, then handlers.accepted once more). */
    class TandemWire {
      constructor(session, secret, handlers) {
        this.session = session; this.secret = secret; this.handlers = handlers;
        this.pending = new Uint8Array(0); this.state = "connecting"; this.sequence = 0; this.appSequence = 0n;
        // App messages are sealed and opened one at a time, so their numbers follow the wire's order.
        this.sending = Promise.resolve(); this.opening = Promise.resolve(); this.order = new MessageOrder();
        this.drops = { altered: 0, replayed: 0, reordered: 0, missing: 0, late: 0, malformed: 0 };
        this.samples = []; this.offset = null; this.roundTrip = null; this.lastReport = null; this.reportedOffset = null; this.lastHeard = performance.now();
        this.lostAt = null; this.attempts = 0; this.connections = 0;
        // Epochs start at random, so that a reloaded page taking its identity back never reuses an earlier one's.
        this.firstEpoch = crypto.getRandomValues(new Uint32Array(1))[0];
      }

      async open() {
        if (!window.crypto || !crypto.subtle) throw new Error("this page needs a secure context for WebCrypto: open it over https (a host with --tls-cert) or on 127.0.0.1 / localhost (e.g. through an SSH tunnel)");
        this.appKey = await deriveAppKey(this.secret, this.session);
        this.connect();
      }

      connect() {
        const scheme = location.protocol === "https:" ? "wss:" : "ws:";
        const ws = new WebSocket(scheme + "//" + location.host + "/ws");
        this.ws = ws; this.pending = new Uint8Array(0); this.closeReason = null; this.finalReason = null;
        this.state = "connecting"; this.connections += 1; this.lastHeard = performance.now();
        ws.binaryType = "arraybuffer";
        ws.onopen = () => this.sendJSON(Kind.hello, { protocolVersion: PROTOCOL_VERSION, session: this.session });
        ws.onmessage = (event) => { if (ws === this.ws) this.receive(new Uint8Array(event.data)); };
        ws.onclose = (event) => { if (ws === this.ws) this.lost(this.closeReason || ("connection closed (" + event.code + ")")); };
        ws.onerror = () => { this.closeReason = this.closeReason || "the connection failed"; };
      }

      /** Gives up on this connection at once (a dead link may take long to finish a WebSocket close). */
      drop(reason) {
        const ws = this.ws; this.ws = null;
        try { ws.close(); } catch (e) { /* already closing */ }
        this.lost(reason);
      }

      /** The connection ended: over for good after a final code, else tried again with backoff for a while. */
      lost(reason) {
        if (this.state === "closed") return;
        clearInterval(this.heartbeat); clearTimeout(this.clockTimer);
        if (this.finalReason) return this.closed(this.finalReason);
        const now = performance.now();
        if (this.lostAt === null) { this.lostAt = now; this.attempts = 0; }
        if (now - this.lostAt >= RECONNECT_FOR_MS) {
          return this.closed(reason + "; no connection for " + RECONNECT_FOR_MS / 1000 + " s, so the page stopped trying: reload it to join again");
        }
        this.state = "reconnecting";
        const delay = Math.min(2000, 250 * 2 ** this.attempts); this.attempts += 1;
        this.handlers.reconnecting(reason, Math.ceil((RECONNECT_FOR_MS - (now - this.lostAt)) / 1000));
        this.retryTimer = setTimeout(() => this.connect(), delay);
      }

      send(kind, body) { if (this.ws && this.ws.readyState === 1) this.ws.send(frame(kind, body)); }
      sendJSON(kind, value) { this.send(kind, utf8.encode(JSON.stringify(value))); }
      sendMessage(message) { this.sendJSON(Kind.session, message); }

      receive(bytes) {
        this.lastHeard = performance.now();
        this.pending = this.pending.length ? concat(this.pending, bytes) : bytes;
        while (this.pending.length >= 5) {
          const view = new DataView(this.pending.buffer, this.pending.byteOffset);
          const length = view.getUint32(0);
          if (this.pending.length < 4 + length) break;
          const kind = this.pending[4], body = this.pending.slice(5, 4 + length);
          this.pending = this.pending.slice(4 + length);
          this.handleFrame(kind, body, localNanos());
        }
      }

      async handleFrame(kind, body, receivedAt) {
        switch (kind) {
        case Kind.challenge: return this.answer(JSON.parse(fromUTF8.decode(body)));
        case Kind.accepted: return this.accepted(JSON.parse(fromUTF8.decode(body)));
        case Kind.ping: return this.send(Kind.pong, new Uint8Array(0));
        case Kind.pong: return;
        case Kind.error: case Kind.close: {
          const reason = JSON.parse(fromUTF8.decode(body));
          this.closeReason = reason.message + " (" + reason.code + ")";
          if (FINAL_CODES.includes(reason.code)) this.finalReason = this.closeReason;
          return this.ws.close(); }
        case Kind.clockPong: return this.clockPong(body, receivedAt);
        case Kind.session: return this.handlers.message(JSON.parse(fromUTF8.decode(body)));
        case Kind.appMessage: return this.appMessage(body);
        case Kind.journalChunk: {
          // id str | offset i64 | bytes: the page fetches one attachment at a time (the preview image).
          const view = new DataView(body.buffer, body.byteOffset), idLength = view.getUint16(0);
          if (body.length < 10 + idLength) return;
          const id = fromUTF8.decode(body.slice(2, 2 + idLength));
          return this.handlers.journalChunk(id, Number(view.getBigInt64(2 + idLength)), body.slice(10 + idLength)); }
        default: return;
        }
      }

      /** The proof: HMAC-SHA256(SHA-256(secret), nonce ‖ session ‖ clientNonce), as native clients compute it. */
      async answer(challenge) {
        const key = await crypto.subtle.importKey("raw", await crypto.subtle.digest("SHA-256", utf8.encode(this.secret)),
                                                  { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
        const clientNonce = crypto.getRandomValues(new Uint8Array(32));
        const proof = new Uint8Array(await crypto.subtle.sign("HMAC", key,
                                     concat(unb64(challenge.nonce), utf8.encode(this.session), clientNonce)));
        this.sendJSON(Kind.authProof, { clientNonce: b64(clientNonce), proof: b64(proof), host: false });
      }

      accepted(body) {
        this.state = "accepted";
        this.heartbeatMs = body.heartbeatIntervalMs || 500;
        this.timeoutMs = body.heartbeatTimeoutMs || 2000;
        this.handlers.accepted(this.lostAt !== null);
        clearInterval(this.heartbeat);
        this.heartbeat = setInterval(() => {
          if (performance.now() - this.lastHeard > this.timeoutMs * 2) { this.drop("nothing heard from the server"); return; }
          this.send(Kind.ping, new Uint8Array(0));
        }, this.heartbeatMs);
        this.pingClock();
      }

      /** Clock sync: one ping at a time, a quick burst and then one a second. */
      pingClock() {
        if (this.state === "closed") return;
        this.sequence = (this.sequence + 1) >>> 0;
        const body = new Uint8Array(12), view = new DataView(body.buffer);
        view.setUint32(0, this.sequence); view.setBigInt64(4, BigInt(localNanos()));
        this.send(Kind.clockPing, body);
        clearTimeout(this.clockTimer);
        this.clockTimer = setTimeout(() => this.pingClock(), this.samples.length < 8 ? 60 : 1000);
      }

      clockPong(body, t4) {
        const view = new DataView(body.buffer, body.byteOffset);
        if (view.getUint32(0) !== this.sequence) return;  // only the answer to the latest ping counts
        const t1 = Number(view.getBigInt64(4)), t2 = Number(view.getBigInt64(12)), t3 = Number(view.getBigInt64(20));
        const offset = ((t2 - t1) + (t3 - t4)) / 2, roundTrip = (t4 - t1) - (t3 - t2);
        this.samples.push({ offset, roundTrip, at: t4 });
        if (this.samples.length > 16) this.samples.shift();
        // NTP-style: the samples with the lowest round trips bound the offset best; take the median of the best 4.
        const best = this.samples.slice().sort((a, b) => a.roundTrip - b.roundTrip).slice(0, 4)
          .sort((a, b) => a.offset - b.offset);
        this.offset = best[Math.floor(best.length / 2)].offset;
        this.roundTrip = best[0].roundTrip;
        // Once a second; sooner (a tenth of a second apart at most) while the first readings still move the offset
        // by half a millisecond or more, since a display's refreshes are told in session time through it.
        const moved = this.reportedOffset !== null && Math.abs(this.offset - this.reportedOffset) >= 0.5e6
          && t4 - this.lastReport > 100e6;
        if (this.samples.length >= 4 && (!this.lastReport || t4 - this.lastReport > 1e9 || moved)) this.reportLink();
        if (this.handlers.clock) this.handlers.clock(this.offset, this.roundTrip);
      }

      /** The link report: half the best round trip, the render offset and the display's refreshes as known now. Sent
       *  a second apart with the clock's answers, and at once when the display becomes known, so that the start
       *  that follows loading already puts its frames on the page's refreshes. */
      reportLink() {
        if (this.state === "closed" || !this.synchronised) return;
        this.lastReport = localNanos(); this.reportedOffset = this.offset;
        const half = Math.max(0, Math.round(this.roundTrip / 2));
        const report = { oneWayDelay: half, errorBound: half };
        const offset = this.handlers.renderOffset ? this.handlers.renderOffset() : null;
        if (offset !== null && isFinite(offset)) report.renderOffset = Math.round(offset);
        const display = this.handlers.display ? this.handlers.display() : null;
        if (display !== null) report.display = display;
        // The page's preroll when it moved by 5 ms or more since the last told (each one sent is news for everyone).
        const preroll = this.handlers.preroll ? this.handlers.preroll() : null;
        if (preroll !== null && (this.reportedPreroll == null || Math.abs(preroll - this.reportedPreroll) >= 5e6)) {
          report.prerollEstimate = preroll; this.reportedPreroll = preroll;
        }
        const lead = this.handlers.startLatency ? this.handlers.startLatency() : null;
        if (lead !== null && (this.reportedStartLatency == null || Math.abs(lead - this.reportedStartLatency) >= 5e6)) {
          report.startLatency = lead; this.reportedStartLatency = lead;
        }
        this.sendMessage({ linkReport: report });
      }

      /** Session time (ns) at local time `local` (ns), once the clock is synchronised. */
      sessionTime(local = localNanos()) { return this.offset === null ? null : local + this.offset; }
      localTime(session) { return session - this.offset; }
      get synchronised() { return this.samples.length >= 4; }

      /** A reliable app message to everyone: delivery u8, sequence u64, count u16 (0xFFFF: all), sealed payload.
       *  Numbered in the lane "everyone" and sealed in its place: header (audience 0, epoch u32) ‖ plaintext. */
      sendApp(plaintext) {
        this.sending = this.sending.then(async () => {
          if (!this.me) return;
          this.appSequence += 1n;
          const sequence = this.appSequence, header = new Uint8Array(5);
          new DataView(header.buffer).setUint32(1, (this.firstEpoch + this.connections) >>> 0);
          const place = { kind: "message", sender: this.me, delivery: 0, sequence };
          const sealed = await seal(this.appKey, concat(header, plaintext), placeData(this.session, place));
          const head = new Uint8Array(11), view = new DataView(head.buffer);
          view.setUint8(0, 0); view.setBigUint64(1, sequence); view.setUint16(9, 0xFFFF);
          this.send(Kind.appMessage, concat(head, sealed));
        }).catch(() => {});
      }

      /** An app message from the others: opened in its place (the source the server stamped, its delivery and
       *  number) and shown only when it comes in order; what does not is dropped, counted, and told once. */
      appMessage(body) {
        const view = new DataView(body.buffer, body.byteOffset);
        if (body.length < 11) return;
        const delivery = view.getUint8(0), sequence = view.getBigUint64(1), sourceLength = view.getUint16(9);
        const source = fromUTF8.decode(body.slice(11, 11 + sourceLength)), box = body.slice(11 + sourceLength);
        this.opening = this.opening.then(async () => {
          let plaintext;
          try {
            plaintext = await open(this.appKey, box, placeData(this.session, { kind: "message", sender: source, delivery, sequence }));
          } catch (e) { return this.dropped("altered"); }
          if (plaintext.length < 5 || plaintext[0] > 1) return this.dropped("malformed");
          const epoch = new DataView(plaintext.buffer, plaintext.byteOffset).getUint32(1);
          const lane = delivery === 1 ? "unreliable" : plaintext[0] === 0 ? "everyone" : "some";
          const verdict = this.order.admit(source, lane, sequence, epoch);
          if (verdict !== "admitted") return this.dropped(verdict);
          if (this.order.missing > 0n) { this.drops.missing += Number(this.order.missing); this.order.missing = 0n; this.tell(); }
          this.handlers.app(source, plaintext.slice(5));
        }).catch(() => {});
      }

      dropped(reason) { this.drops[reason] += 1; if (reason !== "late") this.tell(); }
      tell() {
        if (this.toldAltered) return;
        this.toldAltered = true;
        if (this.handlers.altered) this.handlers.altered("a message from the relay was altered and dropped: the relay may be replaying, reordering, re-attributing or withholding messages");
      }

      /** In the session (a welcome, first or after a reconnect) as `me`: the next loss gets a fresh 60 s, and what
       *  was sent while away explains the next gap of every sender. */
      rejoined(me) { this.lostAt = null; this.attempts = 0; this.me = me; this.order.resumed(); }

      leave() {
        this.sendMessage({ leave: {} });
        this.sendJSON(Kind.close, { code: "left", message: "left the session" });
        this.finalReason = "you left the session";
        clearTimeout(this.retryTimer);
        if (this.ws) this.ws.close(); else this.closed(this.finalReason);
      }

      closed(reason) {
        if (this.state === "closed") return;
        this.state = "closed"; clearInterval(this.heartbeat); clearTimeout(this.clockTimer); clearTimeout(this.retryTimer);
        this.handlers.closed(reason);
      }
    }

    /** HKDF-SHA256(ikm: secret, salt: session, info: "tandem app data v2") → AES-256-GCM key. */
    async function deriveAppKey(secret, session, extractable = false) {
      const ikm = await crypto.subtle.importKey("raw", utf8.encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: utf8.encode(session),
                                       info: utf8.encode("tandem app data v2") },
                                     ikm, { name: "AES-GCM", length: 256 }, extractable, ["encrypt", "decrypt"]);
    }
    /** A box's associated data, its place (docs/PROTOCOL.md, "Sealing app data"; str = length u32 ‖ UTF-8):
     *  message 1 ‖ session ‖ sender ‖ delivery u8 ‖ sequence u64; name 2 ‖ session ‖ owner ‖ id;
     *  record 3 ‖ session ‖ owner ‖ id ‖ index u64 ‖ final u8. */
    function placeData(session, place) {
      const str = (text) => { const bytes = utf8.encode(text), out = new Uint8Array(4 + bytes.length);
        new DataView(out.buffer).setUint32(0, bytes.length); out.set(bytes, 4); return out; };
      const u64 = (value) => { const out = new Uint8Array(8); new DataView(out.buffer).setBigUint64(0, BigInt(value)); return out; };
      switch (place.kind) {
      case "message": return concat(new Uint8Array([1]), str(session), str(place.sender), new Uint8Array([place.delivery]), u64(place.sequence));
      case "name": return concat(new Uint8Array([2]), str(session), str(place.owner), str(place.id));
      case "record": return concat(new Uint8Array([3]), str(session), str(place.owner), str(place.id), u64(place.index),
                                   new Uint8Array([place.final ? 1 : 0]));
      default: throw new Error("no such place: " + place.kind);
      }
    }
    /** box = nonce (12) ‖ ciphertext ‖ tag (16), the place as associated data (a nonce is given only by tests). */
    async function seal(key, plaintext, aad, nonce = crypto.getRandomValues(new Uint8Array(12))) {
      return concat(nonce, new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, key, plaintext)));
    }
    async function open(key, box, aad) {
      if (box.length < 28) throw new Error("short box");
      return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: box.slice(0, 12), additionalData: aad }, key, box.slice(12)));
    }

    /** Opens an attachment's records (`length u32 BE ‖ box` each, record i bound to its owner, id, index and whether
     *  it is the last) and joins the plaintext; cut, shuffled, moved or truncated records throw. */
    async function openRecords(key, session, owner, id, sealed) {
      const parts = []; let at = 0, index = 0;
      if (sealed.length === 0) throw new Error("no records");
      while (at < sealed.length) {
        if (sealed.length - at < 4) throw new Error("cut records");
        const length = new DataView(sealed.buffer, sealed.byteOffset + at).getUint32(0); at += 4;
        if (length > sealed.length - at) throw new Error("cut records");
        const place = { kind: "record", owner, id, index, final: at + length === sealed.length };
        parts.push(await open(key, sealed.slice(at, at + length), placeData(session, place))); at += length; index += 1;
      }
      return concat(...parts);
    }

    /** Where each sender's app messages stand, lane by lane, as native peers keep it (AppMessageOrder): the first
     *  is the baseline; a number at or below the highest is a replay (seen, or older than 64 back), reordered
     *  (reliable) or late (unreliable); a jump in the lane "everyone" leaves `missing` messages unless this page
     *  reconnected since; another epoch than the sender's current one starts a new baseline, and an epoch the sender
     *  has left behind never comes back (replayed, or late when unreliable). */
    class MessageOrder {
      constructor() { this.tracks = new Map(); this.resumes = 0; this.missing = 0n; this.retired = new Map(); }
      resumed() { this.resumes += 1; }
      admit(sender, lane, sequence, epoch) {
        const key = sender + "\u0000" + lane, t = this.tracks.get(key);
        if (!t || t.epoch !== epoch) {
          const retired = this.retired.get(sender) || [];
          if (retired.includes(epoch)) return lane === "unreliable" ? "late" : "replayed";
          if (t && !retired.includes(t.epoch)) { retired.push(t.epoch); if (retired.length > 16) retired.shift(); }
          this.retired.set(sender, retired);
          this.tracks.set(key, { highest: sequence, seen: 1n, epoch, resumes: this.resumes });
          return "admitted";
        }
        if (sequence > t.highest) {
          const step = sequence - t.highest;
          const explained = lane !== "everyone" || this.resumes !== t.resumes;
          if (!explained) this.missing += step - 1n;
          t.seen = step >= 64n ? 1n : ((t.seen << step) | 1n) & 0xFFFFFFFFFFFFFFFFn;
          t.highest = sequence; t.resumes = this.resumes;
          return "admitted";
        }
        const back = t.highest - sequence;
        if (back >= 64n || (t.seen >> back) & 1n) return "replayed";
        return lane === "unreliable" ? "late" : "reordered";
      }
    }

    /** The token for the host's media (`--web-media`): hex HMAC-SHA256(SHA-256(secret), "tandem web media v1" ‖ session). */
    async function mediaToken(secret, session) {
      const key = await crypto.subtle.importKey("raw", await crypto.subtle.digest("SHA-256", utf8.encode(secret)),
                                                { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8.encode("tandem web media v1" + session)));
      return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
    }

    /** The content fingerprint native peers compute: SHA-256 of "SIZE\n", the first and the last 64 KiB. */
    async function fingerprint(file) {
      const chunk = 64 * 1024, size = file.size;
      const head = new Uint8Array(await file.slice(0, Math.min(chunk, size)).arrayBuffer());
      const start = size > chunk ? size - chunk : 0;
      const tail = new Uint8Array(await file.slice(start, Math.min(start + chunk, size)).arrayBuffer());
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", concat(utf8.encode(size + "\n"), head, tail)));
      return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    }
    """#
}
