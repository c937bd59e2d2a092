#!/usr/bin/env python3
"""Run one `gate record` that launches its benchmark and report gate's own
CPU, apart from the benchmark's and apart from its watchdog's.

`wait4` (scripts/bench_summary.py) counts a process together with the
children it reaped, so for a launched benchmark it would count the
benchmark. Here gate's own user+system time is read from /proc/PID/stat
(utime, stime: the process and its threads, not its children) while gate
is a zombie: `waitid(WNOWAIT)` sees it exit without reaping it. The
watchdog (`gate __watchdog`, a child of gate in its own session) is found
among gate's children and, this script being a child subreaper, comes back
to it when gate exits: its CPU is read the same way.

Usage: gate-self-cpu.py --json OUT.json [--stdout F] [--stderr F]
                         [--timeout S] -- GATE record ... -- BENCHMARK ...
Writes {"gate_cpu_s", "watchdog_cpu_s", "wall_s", "gate_cpu_pct_of_one_core",
"gate_and_watchdog_cpu_pct_of_one_core", "exit_code"}.
"""
import ctypes
import json
import os
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
TICKS = os.sysconf("SC_CLK_TCK")


def self_cpu_s(pid):
    """utime + stime of `pid` itself (a zombie keeps them), or None."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    f = text[text.rfind(")") + 2 :].split()
    return (int(f[11]) + int(f[12])) / TICKS


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            out += open(f"/proc/{pid}/task/{tid}/children").read().split()
    except OSError:
        pass
    return [int(c) for c in out]


def is_watchdog(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[1] == b"__watchdog"
    except (OSError, IndexError):
        return False


def exited(pid):
    """Whether `pid` (our child) has exited, leaving it unreaped."""
    r = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return r is not None


def main():
    argv = sys.argv[1:]
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1 :]
    get = lambda k, d=None: opts[opts.index(k) + 1] if k in opts else d
    out_json = get("--json")
    timeout = float(get("--timeout", "3600"))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    so = open(get("--stdout", os.devnull), "wb")
    se = open(get("--stderr", os.devnull), "wb")
    t0 = time.time()
    gate = subprocess.Popen(cmd, stdout=so, stderr=se)
    watchdog = None
    while not exited(gate.pid):
        if watchdog is None:
            watchdog = next((c for c in children(gate.pid) if is_watchdog(c)), None)
        if time.time() - t0 > timeout:
            gate.kill()
        time.sleep(0.05)
    wall = time.time() - t0
    gate_cpu = self_cpu_s(gate.pid)
    code = gate.wait()
    wd_cpu = None
    if watchdog is not None:
        # Reparented to this script when gate exited; it sweeps, then exits.
        deadline = time.time() + 30
        last = self_cpu_s(watchdog)
        while time.time() < deadline:
            try:
                if exited(watchdog):
                    last = self_cpu_s(watchdog)
                    os.waitpid(watchdog, 0)
                    break
            except ChildProcessError:
                break  # not ours (no subreaper): keep the last reading
            last = self_cpu_s(watchdog) or last
            time.sleep(0.05)
        wd_cpu = last
    # Whatever else came back to this subreaper (nothing, normally).
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
    r = {
        "gate_cpu_s": gate_cpu,
        "watchdog_cpu_s": wd_cpu,
        "wall_s": wall,
        "gate_cpu_pct_of_one_core": gate_cpu / wall * 100 if gate_cpu is not None else None,
        "gate_and_watchdog_cpu_pct_of_one_core": (gate_cpu + (wd_cpu or 0)) / wall * 100
        if gate_cpu is not None
        else None,
        "exit_code": code,
    }
    if out_json:
        json.dump(r, open(out_json, "w"), indent=1)
    print(json.dumps(r))
    return 0 if code in (0, 5) else code


if __name__ == "__main__":
    sys.exit(main())
