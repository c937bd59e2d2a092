#!/usr/bin/env python3
"""Calibrate the verdict's noise model on every recorded family of healthy
runs (docs/gating.md, "Calibration"), through the real binary.

  scripts/calibrate.py [--gate PATH] [--traces DIR] [--out FILE]

For each family and each baseline size k (1, 2, 3, 4 out of sample; 5 in
sample, see below):

- healthy false alarms: every k-subset of the family's healthy runs is a
  baseline, every other healthy run is checked against it; an exit 1 is a
  false alarm (nominal: the verdict's one-sided 2.5 % per gated metric,
  less where the practical floor is wider than the noise), an exit 4 is
  "inconclusive" (not green, not a failure either).
- smallest drop caught: the decisive metric (the benchmark's declared
  throughput, `final_samples_per_s`, aggregate "last", as
  scripts/holdout.py declares it) of every checked healthy run is scaled
  down by d (the trace's output lines are rewritten: a SYNTHESISED drop,
  no recorded drop is that fine-grained) and checked. "caught" = exit 1 in
  every check; "not green" = exit 1 or 4 in every check. With k = 5 no
  healthy run is left out, so the drop is synthesised from each baseline
  run itself (in sample: optimistic, marked so).

Judged with the throughput declared and wall time off, twice: its final
line (`aggregate = "last"`, once per run: scripts/holdout.py's setup) and
its per-step lines (`aggregate = "mean"` over the steady window: a
within-run interval, so the learned prior applies). Prints one TSV table.
"""

import argparse
import glob
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile

FINAL = """[user_metrics.samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "last"
"""

STEPS = """[user_metrics.samples_per_s]
regex = '^samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "mean"
"""

COMMON = """
[metrics.wall_time_s]
enabled = false

[compare]
allow_command_change = true
"""

CONFIGS = {"final line (last)": FINAL + COMMON, "per-step lines (mean)": STEPS + COMMON}


FAMILIES = {
    "train (round 1)": "healthy-{}",
    "live-cnn (round 1)": None,  # live-cnn-base-1..3 + live-cnn-healthy
    "cnn (round 2)": "cnn-healthy-{}",
    "gpt (round 2)": "gpt-healthy-{}",
    "ddp (round 2)": "ddp-healthy-{}",
    "bert (hold-out)": "bert-healthy-{}",
    "vit (hold-out)": "vit-healthy-{}",
    "decode (hold-out)": "decode-healthy-{}",
    "recsys (hold-out)": "recsys-healthy-{}",
}

DROPS_PCT = [1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 40, 60]
LINE = re.compile(r'^((?:final_)?samples_per_s: )([0-9.eE+-]+)$')


def healthy_runs(traces, family):
    pat = FAMILIES[family]
    if pat is None:
        runs = [f"{traces}/live-cnn-base-{i}.jsonl" for i in (1, 2, 3)]
        return runs + [f"{traces}/live-cnn-healthy.jsonl"]
    return [p for i in range(1, 10) if os.path.exists(p := f"{traces}/{pat.format(i)}.jsonl")]


def scaled(src, factor, dst):
    """`src` with every samples_per_s line multiplied by `factor`."""
    with open(src) as f, open(dst, "w") as out:
        for raw in f:
            if '"type":"output"' in raw:
                rec = json.loads(raw)
                m = LINE.match(rec["line"])
                if m:
                    rec["line"] = m.group(1) + "%.3f" % (float(m.group(2)) * factor)
                    raw = json.dumps(rec, separators=(",", ":")) + "\n"
            out.write(raw)


class Project:
    def __init__(self, gate, config, traces):
        self.gate = gate
        self.dir = tempfile.TemporaryDirectory()
        self.write_config(config)
        p = self.run("capture", "--baseline", "b", "--replay", *traces)
        if p.returncode == 2 and "compare" in p.stderr:
            # Older binaries reject the [compare] table: without it.
            self.write_config(config.split("[compare]")[0])
            p = self.run("capture", "--baseline", "b", "--replay", *traces)
        if p.returncode != 0:
            sys.exit(f"capture failed: {p.stderr}")

    def write_config(self, text):
        with open(os.path.join(self.dir.name, "gate.toml"), "w") as f:
            f.write(text)

    def run(self, *args):
        return subprocess.run([self.gate, *args], cwd=self.dir.name, capture_output=True, text=True)

    def check(self, trace):
        return self.run("check", "--baseline", "b", "--replay", trace).returncode


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gate", default="target/debug/gate")
    p.add_argument("--traces", default="fixtures/traces")
    a = p.parse_args()
    gate, traces = os.path.abspath(a.gate), os.path.abspath(a.traces)
    tmp = tempfile.TemporaryDirectory()
    print("decisive metric\tfamily\tk\thealthy checks\tfalse alarms (exit 1)\tinconclusive (exit 4)"
          "\tsmallest drop caught %\tsmallest drop not green %")
    for label, config in CONFIGS.items():
        table(gate, traces, tmp, label, config)


def table(gate, traces, tmp, label, config):
    totals = {}
    for family in FAMILIES:
        runs = healthy_runs(traces, family)
        for k in (1, 2, 3, 4, 5):
            if k > len(runs) or (k == len(runs) and k != 5):
                continue
            in_sample = k == len(runs)
            pairs = []  # (baseline traces, checked healthy trace)
            for subset in itertools.combinations(runs, k):
                others = subset if in_sample else [r for r in runs if r not in subset]
                pairs += [(subset, o) for o in others]
            projects = {s: Project(gate, config, list(s)) for s in {s for s, _ in pairs}}
            alarms = inconclusive = 0
            if not in_sample:
                for s, o in pairs:
                    code = projects[s].check(o)
                    alarms += code == 1
                    inconclusive += code == 4
            caught = green = None
            for d in DROPS_PCT:
                codes = []
                for i, (s, o) in enumerate(pairs):
                    t = os.path.join(tmp.name, f"drop{d}-{i}.jsonl")
                    scaled(o, 1 - d / 100, t)
                    codes.append(projects[s].check(t))
                if green is None and all(c in (1, 4) for c in codes):
                    green = d
                if caught is None and all(c == 1 for c in codes):
                    caught = d
                    break
            n = 0 if in_sample else len(pairs)
            t = totals.setdefault(k, [0, 0, 0])
            t[0] += n
            t[1] += alarms
            t[2] += inconclusive
            fmt = lambda v: ">60" if v is None else str(v)
            print("\t".join([label, family, f"{k}{' (in sample)' if in_sample else ''}",
                             str(n), "" if in_sample else str(alarms),
                             "" if in_sample else str(inconclusive), fmt(caught), fmt(green)]),
                  flush=True)
    for k, (n, fa, inc) in sorted(totals.items()):
        if n:
            print(f"{label}\tall\t{k}\t{n}\t{fa} ({100 * fa / n:.1f} %)\t{inc} ({100 * inc / n:.1f} %)\t\t")


if __name__ == "__main__":
    main()
