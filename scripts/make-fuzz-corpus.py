#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (Fuzz/corpus): valid and nearly valid inputs for every surface of
WireFuzzing.exercise. The first byte of each file picks the surface: 0 a frame stream, 1 one frame (kind byte, body),
2 a session message in JSON, 3 an invite. Deterministic: running it again writes the same files."""
import base64, json, os, struct, sys

out = sys.argv[1] if len(sys.argv) > 1 else "Fuzz/corpus"
os.makedirs(out, exist_ok=True)

def frame(kind, body):
    return struct.pack(">IB", len(body) + 1, kind) + body

def js(value):
    return json.dumps(value, separators=(",", ":")).encode()

def b64(data):
    return base64.b64encode(data).decode()

def string(s):
    raw = s.encode()
    return struct.pack(">H", len(raw)) + raw

hello = js({"protocolVersion": 2, "session": "movie-night", "create": False})
proof = js({"clientNonce": b64(bytes(range(32))), "proof": b64(bytes(32)), "host": True})
join = js({"join": {"name": "ann", "prerollEstimate": 300000000}})
app_client = struct.pack(">BQH", 0, 7, 0xFFFF) + b"hello"
app_only = struct.pack(">BQH", 1, 8, 2) + string("p1") + string("p2") + b"hi"
app_server = struct.pack(">BQ", 0, 7) + string("p1") + b"hello"
chunk = string("poster") + struct.pack(">q", 0) + b"\x89PNG"
ping = struct.pack(">Iq", 1, 123456789)
pong = struct.pack(">Iqqq", 1, 1, 2, 3)

activity = {"activityIdentifier": "movie", "itemID": "countdown.webm", "payload": b64(b'{"movie":"x"}'),
            "metadata": {"title": "Movie night", "type": "watchTogether", "fallbackURL": "https://example.com/m.webm"}}
messages = {
    "join": {"join": {"name": "bob", "reconnectAs": "p1", "reconnectToken": "abc", "prerollEstimate": 1}},
    "play": {"timelineRequest": {"_0": {"requestID": 1, "command": {"play": {}}, "basedOnGeneration": 1,
                                        "requestedAtSessionTime": 5}}},
    "playProposed": {"timelineRequest": {"_0": {"requestID": 9, "command": {"play": {}}, "basedOnGeneration": 1,
                                                "requestedAtSessionTime": 5, "proposedStart": 90000005}}},
    "pause": {"timelineRequest": {"_0": {"requestID": 2, "command": {"pause": {"itemTime": 1000}},
                                         "basedOnGeneration": 1, "requestedAtSessionTime": 5}}},
    "seek": {"timelineRequest": {"_0": {"requestID": 3, "command": {"seek": {"itemTime": 9000000000, "play": True}},
                                        "basedOnGeneration": 2, "requestedAtSessionTime": 5}}},
    "rate": {"timelineRequest": {"_0": {"requestID": 4, "command": {"rate": {"_0": 1.5}}, "basedOnGeneration": 2,
                                        "requestedAtSessionTime": 5}}},
    "ready": {"readiness": {"_0": {"ready": {"_0": {"duration": 30000000000, "isSeekable": True, "hasVideo": True,
                                                     "hasAudio": True, "contentID": "abc"}}}}},
    "loading": {"readiness": {"_0": {"loading": {"progress": 0.5}}}},
    "failed": {"readiness": {"_0": {"failed": {"_0": "no such file"}}}},
    "prepared": {"prepared": {"generation": 2}},
    "renderedPast": {"renderedPast": {"generation": 2, "itemTime": 754200000000}},
    "suspend": {"suspension": {"_0": {"begin": {"id": 1, "reason": "stallRecovery"}}}},
    "resume": {"suspension": {"_0": {"end": {"id": 1, "proposedItemTime": 5000}}}},
    "setActivity": {"setActivity": {"_0": activity}},
    "appMessage": {"appMessage": {"_0": {"recipients": {"all": {}}, "delivery": "reliable", "sequence": 7,
                                         "payload": b64(b"hi")}}},
    "appOnly": {"appMessage": {"_0": {"recipients": {"only": {"_0": ["p1"]}}, "delivery": "unreliable",
                                      "sequence": 8, "payload": ""}}},
    "begin": {"journal": {"_0": {"begin": {"_0": {"id": "poster", "owner": "p2", "name": "poster.png", "size": 4,
                                                   "sha256": "00" * 32}}}}},
    "chunk": {"journal": {"_0": {"chunk": {"id": "poster", "offset": 0, "bytes": b64(b"\x89PNG")}}}},
    "commit": {"journal": {"_0": {"commit": {"id": "poster"}}}},
    "remove": {"journal": {"_0": {"remove": {"id": "poster"}}}},
    "journalFailed": {"journal": {"_0": {"failed": {"id": "poster", "reason": "x"}}}},
    "linkReport": {"linkReport": {"oneWayDelay": 40000, "errorBound": 40000}},
    "linkReportDisplay": {"linkReport": {"oneWayDelay": 150000, "errorBound": 150000,
                                         "display": {"refresh": 16666667, "refreshAt": 81234567890123,
                                                     "frame": 33366667, "frameAt": 12433000000}}},
    "leave": {"leave": {}},
    "end": {"end": {}},
}

seeds = {
    "stream-handshake": b"\x00" + frame(0x01, hello) + frame(0x03, proof) + frame(0x10, join),
    "stream-session": b"\x00" + frame(0x13, app_client) + frame(0x13, app_only) + frame(0x14, chunk)
                      + frame(0x11, ping) + frame(0x06, b"") + frame(0x10, js(messages["play"])),
    "stream-truncated": b"\x00" + frame(0x01, hello)[:9],
    "stream-oversized": b"\x00" + struct.pack(">IB", 0xFFFFFFFF, 0x01) + b"xx",
    "stream-unknown-kind": b"\x00" + frame(0x7F, b"?"),
    "frame-app-client": b"\x01\x13" + app_client,
    "frame-app-server": b"\x01\x13" + app_server,
    "frame-chunk": b"\x01\x14" + chunk,
    "frame-ping": b"\x01\x11" + ping,
    "frame-pong": b"\x01\x12" + pong,
    "frame-error": b"\x01\x05" + js({"code": "flood", "message": "too many frames"}),
    "frame-accepted": b"\x01\x04" + js({"heartbeatIntervalMs": 500, "heartbeatTimeoutMs": 2000, "maxFrameSize": 1048576}),
    "frame-challenge": b"\x01\x02" + js({"nonce": b64(bytes(32))}),
    "invite-plain": b"\x03tandem://127.0.0.1:7420/movie-night#Zr8secret",
    "invite-tls": b"\x03tandems://[::1]:7420/s1?pin=" + b"ab" * 32 + b"#secret",
    "invite-bad": b"\x03tandem://host:99999/a/b#",
}
for name, message in messages.items():
    seeds["json-" + name] = b"\x02" + js(message)

for name, data in sorted(seeds.items()):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
