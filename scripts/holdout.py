#!/usr/bin/env python3
"""Judge the recorded hold-out families with a gate binary, as written down
in benchmarks/raw-output/*-holdout*/ and fixtures/README.md.

  scripts/holdout.py verdicts FAMILY    one family's verdict table (TSV): a
                                        baseline from healthy-1..3, every
                                        other run checked against it
  scripts/holdout.py scoreboard         every family: healthy false alarms
                                        over all 10 three-run baselines of
                                        the 5 healthy runs (x the 2 others),
                                        pathologies caught and with the
                                        expected cause first

Both judge with defaults and with the throughput declared (wall time off).
Options: --gate PATH (default target/release/gate), --traces DIR (default
fixtures/traces). Run from the repository root.
"""

import argparse
import glob
import itertools
import json
import os
import subprocess
import sys
import tempfile

# The cause each pathology should have ranked first, as written into the
# workloads before they were recorded (fixtures/workloads/*.py).
FAMILIES = {
    "bert": {"gradlog": "sync_stalls", "fp32": "tensor_cores_unused", "tokenize": "host_bound",
             "small-batch": "kernel_fragmentation", "eager-attn": "memory_bound",
             "contend-out": "gpu_contention"},
    "vit": {"readback": "sync_stalls", "preprocess": "host_bound", "fp32": "tensor_cores_unused",
            "small-batch": "kernel_fragmentation", "contend-out": "gpu_contention"},
    "decode": {"stream": "sync_stalls", "batch4": "kernel_fragmentation",
               "contend-out": "gpu_contention"},
    "recsys": {"unpinned": "blocking_h2d_copy", "host-input": "host_bound", "sync": "sync_stalls",
               "fp32": "tensor_cores_unused", "contend-out": "gpu_contention"},
}

# Recorded by scripts/record-holdout-twice.sh jax (four healthy runs, each run
# with and without GPM): `verdicts jax --traces DIR/traces/gpm` and
# `--traces DIR/traces/nogpm-recorded` judge it; not in `scoreboard`, which
# needs five healthy runs.
VERDICTS_ONLY = {
    "jax": {"recompile": "host_bound", "remat": "more_work_per_unit", "hostsync": "sync_stalls",
            "fp32": "tensor_cores_unused", "small-batch": "kernel_fragmentation"},
    # scripts/record-holdout-twice.sh gnn: fixtures/holdout-gnn/{gpm,nogpm-recorded}.
    "gnn": {"cpu-sample": "host_bound", "sync": "sync_stalls", "wide": "more_work_per_unit",
            "fp32": "tensor_cores_unused", "host-busy": "host_contention"},
    # Round 4 (issue 27.5), fixtures/holdout-timm and fixtures/holdout-lightning:
    # pytest-benchmark timing a timm ViT (its JSON is each trace's metrics
    # file) and Lightning with loader workers. The device-to-host copy cause
    # did not exist when they were written; its name is the one it got.
    "timm": {"fp32": "tensor_cores_unused", "cpu-preprocess": "host_bound",
             "unfused-attn": "memory_bound", "d2h-copy": "blocking_d2h_copy"},
    "lightning": {"ema-cpu": "host_bound", "slow-loader": "input_bound",
                  "d2h-metrics": "blocking_d2h_copy", "fp32": "tensor_cores_unused"},
    # Round 5 (issue 39.5): fixtures/holdout-{multibench,rawkernel,ckpt},
    # written before recording. multibench: one of four pytest-benchmark
    # benchmarks of one process regresses (its span holds the cause).
    # latency_bound did not exist when they were written.
    "multibench": {"matmul-fp32": "tensor_cores_unused", "norm-unfused": "memory_bound"},
    "rawkernel": {"strided": "latency_bound", "atomic": "latency_bound"},
    "ckpt": {"checkpoint": "more_work_per_unit", "sync": "sync_stalls",
             "h2d-copy": "blocking_h2d_copy"},
    # Issue 38's neighbour family (GPM only): the healthy ckpt loop beside a
    # burner outside the tree, light (number holds) and heavy; and the
    # burner inside the tree (a regression of the change).
    "neighbour": {"out-light": "pass", "out-heavy": "gpu_contention",
                  "contend-in": "tree_contention"},
}

# The number a family's benchmark declares, where it is not the protocol's
# final_samples_per_s line (the second configuration of CONFIGS).
DECLARED = {
    "timm": """[user_metrics.forward_s]
source = "metrics_file"
format = "pytest_benchmark"
benchmark = "test_vit_forward"
stat = "mean"
direction = "lower_is_better"
unit = "s"

[metrics.wall_time_s]
enabled = false
""",
}

# multibench: each of the four benchmarks' mean, as its own number.
DECLARED["multibench"] = "".join(f"""[user_metrics.{op}_s]
source = "metrics_file"
format = "pytest_benchmark"
benchmark = "test_op[{op}]"
stat = "mean"
direction = "lower_is_better"
unit = "s"

""" for op in ("matmul", "softmax", "layernorm", "gather")) + """[metrics.wall_time_s]
enabled = false
"""

CONFIGS = {
    "none (defaults)": None,
    "throughput declared, wall time off": """[user_metrics.samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "last"

[metrics.wall_time_s]
enabled = false
""",
}


class Project:
    """A temporary directory with gate.toml and a baseline 'b' of `traces`."""

    def __init__(self, gate, config, traces):
        self.gate = gate
        self.dir = tempfile.TemporaryDirectory()
        if config:
            with open(os.path.join(self.dir.name, "gate.toml"), "w") as f:
                f.write(config)
        self.run("capture", "--baseline", "b", "--replay", *traces)

    def run(self, *args):
        return subprocess.run([self.gate, *args], cwd=self.dir.name, capture_output=True, text=True)

    def check(self, trace):
        """(exit code, report as JSON)"""
        p = self.run("check", "--baseline", "b", "--format", "json", "--replay", trace)
        return p.returncode, json.loads(p.stdout)


def causes(report):
    return [d["rule"] for d in report.get("diagnosis") or []]


def regressed(report):
    return [m["id"] for m in report["metrics"] if m.get("verdict") == "regression"]


def configs(family):
    """CONFIGS with the family's own declared number where it has one."""
    out = dict(CONFIGS)
    if family in DECLARED:
        out["throughput declared, wall time off"] = DECLARED[family]
    return out


def verdicts(gate, traces, family):
    healthy = [f"{traces}/{family}-healthy-{i}.jsonl" for i in (1, 2, 3)]
    print("gate.toml\tfixture\tverdict\tdeclared change %\tregressed\tranked first\tthen\texpected")
    want = {**FAMILIES, **VERDICTS_ONLY}.get(family, {})
    for label, config in configs(family).items():
        project = Project(gate, config, healthy)
        for t in sorted(glob.glob(f"{traces}/{family}-*.jsonl")):
            if t in healthy:
                continue
            _, r = project.check(t)
            sp = [m for m in r["metrics"]
                  if m["id"] in ("samples_per_s", "forward_s", "matmul_s", "softmax_s", "layernorm_s",
                                 "gather_s") and m.get("change_pct") is not None]
            # Several declared numbers (multibench): the one that moved most.
            sp.sort(key=lambda m: -abs(m["change_pct"]))
            c = causes(r)
            name = os.path.basename(t)[:-len(".jsonl")]
            print("\t".join([label, name, str(r.get("verdict")),
                             "%.1f" % sp[0]["change_pct"] if sp else "", ",".join(regressed(r)),
                             c[0] if c else "none", ",".join(c[1:3]),
                             want.get(name[len(family) + 1:], "pass")]))


def scoreboard(gate, traces):
    for label, config in CONFIGS.items():
        total = [0, 0, 0, 0, 0]  # false alarms, healthy checks, caught, first, pathologies
        for family, cases in FAMILIES.items():
            h = lambda i: f"{traces}/{family}-healthy-{i}.jsonl"
            alarms, checks = [], 0
            for trio in itertools.combinations(range(1, 6), 3):
                project = Project(gate, config, [h(i) for i in trio])
                for other in sorted(set(range(1, 6)) - set(trio)):
                    checks += 1
                    code, r = project.check(h(other))
                    if code != 0:
                        alarms.append(f"healthy-{other} against {trio}: {regressed(r)}")
            project = Project(gate, config, [h(1), h(2), h(3)])
            caught = first = 0
            misses = []
            for name, want in cases.items():
                code, r = project.check(f"{traces}/{family}-{name}.jsonl")
                c = causes(r)
                caught += code == 1
                first += code == 1 and c[:1] == [want]
                if not (code == 1 and c[:1] == [want]):
                    misses.append(f"{name}: exit {code}, first {c[:1]}, regressed {regressed(r)}")
            print(f"{label:36s} {family:7s} healthy false alarms {len(alarms)}/{checks}, "
                  f"caught {caught}/{len(cases)}, cause first {first}/{len(cases)}")
            for line in alarms:
                print("    false alarm:", line)
            for line in misses:
                print("    not caught with its cause first:", line)
            for i, v in enumerate([len(alarms), checks, caught, first, len(cases)]):
                total[i] += v
        print(f"{label:36s} all     healthy false alarms {total[0]}/{total[1]}, "
              f"caught {total[2]}/{total[4]}, cause first {total[3]}/{total[4]}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["verdicts", "scoreboard"])
    p.add_argument("family", nargs="?", choices=sorted({**FAMILIES, **VERDICTS_ONLY}))
    p.add_argument("--gate", default="target/release/gate")
    p.add_argument("--traces", default="fixtures/traces")
    a = p.parse_args()
    gate, traces = os.path.abspath(a.gate), os.path.abspath(a.traces)
    if a.what == "verdicts":
        if not a.family:
            p.error("verdicts needs a FAMILY")
        verdicts(gate, traces, a.family)
    else:
        scoreboard(gate, traces)
    return 0


if __name__ == "__main__":
    sys.exit(main())
