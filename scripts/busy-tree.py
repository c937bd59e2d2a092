#!/usr/bin/env python3
# A busy process tree for measuring gate's /proc work: 8 worker processes
# of 8 threads each (waking every 10 ms), plus the parent, for SECONDS s.
import os, sys, threading, time
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20
def spin():
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.01)
kids = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        ts = [threading.Thread(target=spin) for _ in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("samples_per_s: 1")
