#!/usr/bin/env python3
"""A naive Python checker: the yardstick `gate check` must beat at every size
(BENCHMARKS.md, section 2). json.loads on every line, numpy arrays, numpy
percentiles (p5/p50/p95/p99), mean and standard deviation of every GPU
column per GPU, of the per-sample GPU mean and of every host column over the
steady window. No batch-means intervals, features, rules or verdict: less
work than gate does.

Usage: scripts/naive_check.py TRACE.jsonl
"""
import json
import warnings
import sys
from array import array

import numpy as np


def main(path):
    nan = float("nan")
    gpu_flat, host_flat = array("d"), array("d")
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        ngpu = len(header["fingerprint"]["gpus"])
        ncols = len(header["gpu_columns"])
        nhost = len(header["host_columns"])
        for raw in f:
            rec = json.loads(raw)
            if rec.get("type") != "sample" or rec.get("w"):
                continue
            for g in rec["g"]:
                gpu_flat.extend(nan if v is None else v for v in g)
            host_flat.extend(nan if v is None else v for v in rec["h"])
    gpu = np.frombuffer(gpu_flat, dtype=np.float64).reshape(-1, ngpu, ncols)
    host = np.frombuffer(host_flat, dtype=np.float64).reshape(-1, nhost)
    series = [gpu[:, g, c] for g in range(ngpu) for c in range(ncols)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        agg = np.nanmean(gpu, axis=1)
    series += [agg[:, c] for c in range(ncols)]
    series += [host[:, c] for c in range(host.shape[1])]
    stats = 0
    for s in series:
        s = s[np.isfinite(s)]
        if s.size == 0:
            continue
        np.percentile(s, [5, 50, 95, 99])
        s.mean()
        s.std(ddof=1) if s.size > 1 else 0.0
        stats += 1
    print(f"{gpu.shape[0]} steady samples x {ngpu} GPUs: {stats} statistics")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
