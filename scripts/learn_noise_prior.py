#!/usr/bin/env python3
"""Learn the noise model's prior (src/noise.rs, docs/gating.md "The noise
model") from every recorded family of healthy runs, through the real binary.

  scripts/learn_noise_prior.py [--gate PATH] [--traces DIR]

For each family, a baseline of ALL its healthy runs is captured (full
precision), and for each metric with a direction (what the verdict can gate)
and a spread between runs:

- sampled counters and per-step user metrics (each run has a within-run
  interval, batch means / AR(1)): r = s^2 / w, the between-run variance of
  the run statistic over the mean within-run variance of a run's mean;
- numbers measured once per run (wall time, `aggregate = "last"`): the
  squared coefficient of variation s^2 / mean^2.

Each set is summarised the way Smyth (2004, section 6.2) estimates the prior
of the moderated variance: with d_i = k_i - 1 and e_i = log r_i -
digamma(d_i/2) + log(d_i/2), trigamma(d0/2) = mean((e - mean e)^2 k/(k-1))
- mean(trigamma(d_i/2)) gives the prior degrees of freedom d0 (infinite when
the right side is <= 0), and log s0^2 = mean(e) + digamma(d0/2) -
log(d0/2) the prior scale. Prints both, and the per-family table, for
src/noise.rs's constants.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import tomllib

FAMILIES = {
    "train": ["healthy-1", "healthy-2", "healthy-3"],
    "live-cnn": ["live-cnn-base-1", "live-cnn-base-2", "live-cnn-base-3", "live-cnn-healthy"],
    "cnn": [f"cnn-healthy-{i}" for i in (1, 2, 3)],
    "gpt": [f"gpt-healthy-{i}" for i in (1, 2, 3)],
    "ddp": [f"ddp-healthy-{i}" for i in (1, 2, 3)],
    "bert": [f"bert-healthy-{i}" for i in range(1, 6)],
    "vit": [f"vit-healthy-{i}" for i in range(1, 6)],
    "decode": [f"decode-healthy-{i}" for i in range(1, 6)],
    "recsys": [f"recsys-healthy-{i}" for i in range(1, 6)],
}

# The benchmark's throughput twice: per step (mean over the steady window's
# lines: has a within-run interval) and its final line (once per run).
CONFIG = """[user_metrics.step_samples_per_s]
regex = '^samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "mean"

[user_metrics.final_samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "last"
"""


def digamma(x):
    r = 0.0
    while x < 6:
        r -= 1 / x
        x += 1
    f = 1 / (x * x)
    return r + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))


def trigamma(x):
    r = 0.0
    while x < 6:
        r += 1 / (x * x)
        x += 1
    f = 1 / (x * x)
    return r + 1 / x + f / 2 + f / x * (1 / 6 - f * (1 / 30 - f * (1 / 42 - f / 30)))


def trigamma_inverse(y):
    """x with trigamma(x) = y: trigamma falls monotonically, so bisect."""
    lo, hi = 1e-8, 1e12
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if trigamma(mid) > y:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def smyth(points):
    """(s0^2, d0) from [(variance ratio, df)] (Smyth 2004, section 6.2)."""
    e = [math.log(r) - digamma(d / 2) + math.log(d / 2) for r, d in points]
    n = len(e)
    mean = sum(e) / n
    var = sum((x - mean) ** 2 for x in e) / (n - 1)
    excess = var - sum(trigamma(d / 2) for _, d in points) / n
    if excess <= 0:
        return math.exp(mean), math.inf
    d0 = 2 * trigamma_inverse(excess)
    return math.exp(mean + digamma(d0 / 2) - math.log(d0 / 2)), d0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gate", default="target/debug/gate")
    p.add_argument("--traces", default="fixtures/traces")
    a = p.parse_args()
    gate, traces = os.path.abspath(a.gate), os.path.abspath(a.traces)
    within, once = [], []
    print("family\tmetric\truns\tbetween-run sd\twithin-run se\tratio of variances\tcv %")
    for family, names in FAMILIES.items():
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "gate.toml"), "w") as f:
                f.write(CONFIG)
            paths = [f"{traces}/{n}.jsonl" for n in names]
            r = subprocess.run([gate, "capture", "--baseline", "b", "--replay", *paths],
                               cwd=d, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{family}: capture failed: {r.stderr}")
            with open(os.path.join(d, "baselines", "b.toml"), "rb") as f:
                b = tomllib.load(f)
        for mid, m in sorted(b["metrics"].items()):
            if m["direction"] == "neutral" or not m.get("gated", False) and mid != "wall_time_s":
                continue
            vals = [r["value"] for r in m["runs"]]
            k = len(vals)
            mean = sum(vals) / k
            s2 = sum((v - mean) ** 2 for v in vals) / (k - 1)
            if s2 <= 0 or mean == 0:
                continue
            cis = [r.get("ci95") for r in m["runs"]]
            if all(c is not None and c > 0 for c in cis):
                w = sum((c / 1.96) ** 2 for c in cis) / k
                within.append((s2 / w, k - 1))
                print(f"{family}\t{mid}\t{k}\t{math.sqrt(s2):.4g}\t{math.sqrt(w):.4g}\t{s2 / w:.3g}"
                      f"\t{100 * math.sqrt(s2) / abs(mean):.3g}")
            elif all(c is None for c in cis):
                once.append((s2 / mean ** 2, k - 1))
                print(f"{family}\t{mid}\t{k}\t{math.sqrt(s2):.4g}\t\t\t{100 * math.sqrt(s2) / abs(mean):.3g}")
    for label, pts, unit in [("within-run inflation (variance ratio)", within, ""),
                             ("once-per-run squared cv", once, "")]:
        s0, d0 = smyth(pts)
        extra = f" (cv {100 * math.sqrt(s0):.3g} %)" if "cv" in label else f" (sd ratio {math.sqrt(s0):.3g})"
        print(f"# {label}: {len(pts)} metric-families, prior s0^2 = {s0:.4g}{extra}, d0 = {d0:.3g}")


if __name__ == "__main__":
    main()
