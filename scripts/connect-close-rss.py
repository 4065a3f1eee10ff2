#!/usr/bin/env python3
"""Bounded connect-and-close load against 127.0.0.1:PORT; prints the server's RSS before and after.

Usage: tandem serve --bind 127.0.0.1 --port P &  then  scripts/connect-close-rss.py PID P 20000
"""
import socket, sys, time

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

pid, port, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
deadline = time.time() + 300
before = rss_kb(pid)
done = 0
for i in range(count):
    if time.time() > deadline:
        break
    s = socket.socket()
    s.connect(("127.0.0.1", port))
    s.close()
    done += 1
    if i % 500 == 499:
        time.sleep(0.05)
time.sleep(5)
after = rss_kb(pid)
print(f"cycles={done} rss_before_kb={before} rss_after_kb={after} growth_kb={after - before}")
