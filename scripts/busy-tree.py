#!/usr/bin/env python3
# A busy process tree for measuring gate's /proc work: 8 worker processes
# of 8 threads each (waking every 10 ms), plus the parent, for SECONDS s.
#
# --maps N: before forking, the parent maps N files of 5 segments each
# (as a torch process maps ~250 libraries, ~1,000 lines of /proc/PID/maps,
# which every worker inherits), one of them under a path that gate's
# framework detection names torch (`.../torch/lib/libtorch_cuda.so`): the
# maps read (`frameworks` in GATE_PROFILE) then costs what it costs beside
# a real training loop, and finds something. The files live in a temporary
# directory, removed at the end.
import mmap, os, shutil, sys, tempfile, threading, time

args = sys.argv[1:]
maps = 0
if "--maps" in args:
    i = args.index("--maps")
    maps = int(args[i + 1])
    del args[i : i + 2]
seconds = float(args[0]) if args else 20
PAGE = mmap.PAGESIZE
mapped, tmp = [], None
if maps > 0:
    tmp = tempfile.mkdtemp(prefix="busy-tree-")
    lib = os.path.join(tmp, "site-packages", "torch", "lib")
    os.makedirs(lib)
    for k in range(maps):
        name = "libtorch_cuda.so" if k == 0 else f"libfake_{k:04d}.so"
        path = os.path.join(lib, name)
        with open(path, "wb") as f:
            f.write(b"\0" * (10 * PAGE))
        with open(path, "rb") as f:
            # Every other page: file offsets not contiguous, so the kernel
            # keeps 5 separate mappings (lines in maps) per file.
            for s in range(5):
                mapped.append(mmap.mmap(f.fileno(), PAGE, offset=2 * s * PAGE, access=mmap.ACCESS_READ))


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
if tmp:
    shutil.rmtree(tmp, ignore_errors=True)
print("samples_per_s: 1")
