#!/usr/bin/env python3
"""Rewrite recorded traces as the once-a-second host counters would have
recorded them (sampler::host::SLOW_PERIOD, 2026-12-01): storage I/O,
context switches and the machine's CPU become, at every sample, the mean of
the per-tick rates over the last whole second before it (null in the first
second), the other host columns unchanged. A SYNTHETIC derivation of real
traces, for checking that verdicts and causes do not change with the
sampler; the output is never a fixture.

    python3 scripts/emulate-slow-host-rates.py OUT_DIR TRACE...
"""
import json
import math
import os
import sys

SLOW = ["target_read_mib_s", "target_write_mib_s", "target_ctx_switches_per_s",
        "target_vol_ctx_switches_per_s", "host_cpu_busy_pct", "host_iowait_pct"]


def rewrite(path, out_dir):
    records = [json.loads(line) for line in open(path)]
    columns = next(r["host_columns"] for r in records if r.get("type") == "header")
    slow = [columns.index(c) for c in SLOW if c in columns]
    samples = [r for r in records if r.get("type") == "sample" and r.get("h")]
    if not samples:
        return
    t0 = samples[0]["t"]
    # Second k's read (at t0 + k s) covers the ticks in (t0 + (k-1) s, t0 + k s].
    by_second = {}
    for s in samples:
        by_second.setdefault(math.ceil((s["t"] - t0) / 1000.0 - 1e-9), []).append(s)
    held = {}
    for k, ticks in by_second.items():
        for j in slow:
            values = [t["h"][j] for t in ticks if t["h"][j] is not None]
            held[(k, j)] = sum(values) / len(values) if values else None
    for s in samples:
        k = int((s["t"] - t0) // 1000)
        for j in slow:
            s["h"][j] = held.get((k, j)) if k >= 1 else None
    with open(os.path.join(out_dir, os.path.basename(path)), "w") as out:
        for r in records:
            out.write(json.dumps(r, separators=(",", ":")) + "\n")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for path in sys.argv[2:]:
        rewrite(path, sys.argv[1])


if __name__ == "__main__":
    main()
