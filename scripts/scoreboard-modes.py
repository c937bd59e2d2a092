#!/usr/bin/env python3
"""The scoreboard with and without GPM, for one or two gate binaries side by
side (docs/rules.md, "Without GPM": before = the binary before the NVML-only
rules, after = this one).

  python3 scripts/scoreboard-modes.py AFTER_GATE [BEFORE_GATE]

Every family of fixtures/traces/ (recorded) and fixtures/traces/nogpm/ (the
GPM-stripped twins, scripts/strip-gpm.sh): a baseline from healthy-1,2
(round-2 families) or healthy-1..3 (hold-outs, wall time off), each
pathology checked with the benchmark's throughput declared; the cause
ranked first (any severity, "unexplained" counts as none) against the cause
written into the workload before it was recorded. Prints a Markdown table
and the counts. Run from the repository root.
"""

import json
import os
import subprocess
import sys
import tempfile

FAMILIES = [
    ("", 2, {"launch-storm": "kernel_fragmentation", "fp32-no-tf32": "tensor_cores_unused",
             "memory-bound": "memory_bound", "pageable-h2d": "pcie_h2d_bound",
             "sync-stall": "sync_stalls", "host-bound": "host_bound", "contention": "gpu_contention"}),
    ("cnn-", 2, {"sync": "sync_stalls", "launch": "kernel_fragmentation", "input": "input_bound",
                 "contend-in": "tree_contention", "contend-out": "gpu_contention",
                 "memory": "memory_bound", "tensor": "tensor_cores_unused"}),
    ("gpt-", 2, {"sync": "sync_stalls", "launch": "kernel_fragmentation",
                 "contend-in": "tree_contention", "contend-out": "gpu_contention",
                 "memory": "memory_bound", "tensor": "tensor_cores_unused"}),
    ("bert-", 3, {"gradlog": "sync_stalls", "fp32": "tensor_cores_unused", "tokenize": "host_bound",
                  "small-batch": "kernel_fragmentation", "eager-attn": "memory_bound",
                  "contend-out": "gpu_contention"}),
    ("ddp-", 2, {"comm": "comm_fallback", "straggler-gpu": "gpu_imbalance"}),
    ("vit-", 3, {"readback": "sync_stalls", "preprocess": "host_bound", "fp32": "tensor_cores_unused",
                 "small-batch": "kernel_fragmentation", "contend-out": "gpu_contention"}),
    ("decode-", 3, {"stream": "sync_stalls", "batch4": "kernel_fragmentation",
                    "contend-out": "gpu_contention"}),
    ("recsys-", 3, {"unpinned": "blocking_h2d_copy", "host-input": "host_bound", "sync": "sync_stalls",
                    "fp32": "tensor_cores_unused", "contend-out": "gpu_contention"}),
]

THROUGHPUT = """[user_metrics.samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "last"
"""
WALL_TIME_OFF = "\n[metrics.wall_time_s]\nenabled = false\n"


def first_cause(gate, traces, prefix, n_healthy, case):
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "gate.toml"), "w") as f:
        f.write(THROUGHPUT + (WALL_TIME_OFF if n_healthy == 3 else ""))
    healthy = [f"{traces}/{prefix}healthy-{i}.jsonl" for i in range(1, n_healthy + 1)]
    subprocess.run([gate, "capture", "--baseline", "b", "--replay", *healthy], cwd=d,
                   capture_output=True, check=True)
    p = subprocess.run([gate, "check", "--baseline", "b", "--format", "json", "--replay",
                        f"{traces}/{prefix}{case}.jsonl"], cwd=d, capture_output=True, text=True)
    rules = [x["rule"] for x in json.loads(p.stdout).get("diagnosis") or []]
    rules = [r for r in rules if r != "unexplained"]
    return p.returncode, rules[0] if rules else None


def main():
    gates = sys.argv[1:3]
    if not gates:
        sys.exit(__doc__)
    gates = list(reversed(gates))  # before first
    names = ["before", "after"] if len(gates) == 2 else ["this binary"]
    modes = [("with GPM", os.path.abspath("fixtures/traces")),
             ("without GPM", os.path.abspath("fixtures/traces/nogpm"))]
    cols = [f"{m} ({n})" for n in names for m, _ in modes]
    print("| fixture | expected | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    right = [0] * len(cols)
    total = 0
    for prefix, n_healthy, cases in FAMILIES:
        for case, want in cases.items():
            total += 1
            cells = []
            for g in gates:
                for _, traces in modes:
                    _, top = first_cause(g, traces, prefix, n_healthy, case)
                    ok = top == want
                    right[len(cells)] += ok
                    cells.append(("**same**" if ok else f"`{top}`") if top else "none")
            print(f"| `{prefix}{case}` | `{want}` | " + " | ".join(cells) + " |")
    print("| **right cause first** | of %d | " % total + " | ".join(str(r) for r in right) + " |")


if __name__ == "__main__":
    main()
