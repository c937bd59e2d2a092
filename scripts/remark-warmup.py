#!/usr/bin/env python3
"""Derive a trace whose warm-up ends at a kept output line, from a recorded
trace whose `--warmup-until` never matched (every sample marked warm-up).

Why: fixtures/holdout-multibench was recorded with --warmup-until '^gate: warm',
but pytest -v -s prints the test's node id first, so the marker line read
'...::test_op[matmul] gate: warm' and never matched at the line start. The
trace kept that line with its time; this script marks every sample before
it warm-up ("w": true) and every later one not, says so in the header
note, and drops the recorder's note that --warmup-until never matched (no
longer true of the derived trace, and gate fails a run that carries it).
Nothing else changes: samples, output, other events are the recorded ones.
The result is DERIVED, not recorded (fixtures/holdout-multibench/README.md).

Usage: scripts/remark-warmup.py REGEX OUT_DIR TRACE.jsonl[.gz]...
"""

import gzip
import json
import os
import re
import sys

# The recorder's note when --warmup-until never matched (src/trace/format.rs).
NEVER_MATCHED = "--warmup-until never matched a line of the benchmark's stdout"


def remark(lines, pattern, source):
    rx = re.compile(pattern)
    recs = [json.loads(l) for l in lines if l.strip()]
    marks = [r["t"] for r in recs if r.get("type") == "output" and rx.search(r.get("line", ""))]
    if not marks:
        raise SystemExit(f"{source}: no kept output line matches {pattern!r}")
    t_warm = marks[0]
    out = []
    for r in recs:
        if r.get("type") == "event" and r.get("kind") == "note" and r.get("message", "").startswith(NEVER_MATCHED):
            continue
        if r.get("type") == "header":
            r["note"] = (r.get("note", "") + f" | DERIVED by scripts/remark-warmup.py from {source}: "
                         f"warm-up re-marked to end at the kept output line matching {pattern!r} "
                         f"(t = {t_warm} ms); the recorder's --warmup-until had never matched")
        elif r.get("type") == "sample":
            r["w"] = r["t"] < t_warm
        out.append(json.dumps(r, separators=(",", ":")))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    pattern, out_dir, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    for t in traces:
        opener = gzip.open if t.endswith(".gz") else open
        with opener(t, "rt") as f:
            text = remark(f.readlines(), pattern, t)
        name = os.path.basename(t).removesuffix(".gz")
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
