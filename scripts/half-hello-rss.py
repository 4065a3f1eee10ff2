#!/usr/bin/env python3
"""600 connections, each announcing a 1 MiB hello and sending 64 KiB of it; server RSS before/after.

Usage: tandem serve --bind 127.0.0.1 --port P &  then  scripts/half-hello-rss.py PID P
"""
import socket, struct, sys, time
def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1])
pid, port = int(sys.argv[1]), int(sys.argv[2])
before = rss_kb(pid); socks = []; refused = 0
for i in range(600):
    s = socket.socket(); s.settimeout(2); s.connect(("127.0.0.1", port))
    try: s.sendall(struct.pack(">IB", 1 << 20, 1) + b" " * 65536)
    except OSError: refused += 1
    socks.append(s)
time.sleep(2)
peak = rss_kb(pid)
for s in socks: s.close()
time.sleep(3)
print(f"rss_before_kb={before} rss_with_600_kb={peak} rss_after_kb={rss_kb(pid)} send_errors={refused}")
