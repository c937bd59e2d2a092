#!/usr/bin/env python3
"""Helpers for scripts/bench-overhead.sh (standard library only).

  measure --json FILE [--stdout F] [--stderr F] [--timeout S] -- CMD...
      Run CMD, wait for it with os.wait4 and write its wall seconds, user and
      system CPU seconds and peak RSS (ru_maxrss) as JSON. wait4 gives the
      kernel's exact accounting of that one process (plus any children it
      reaped), with no sampling gap at the end and no dependency on
      /usr/bin/time. On timeout: SIGTERM, then SIGKILL 10 s later.

  summarize --dir DIR --gpu NAME --driver VERSION --pairs N --intervals 100ms,10ms
      Read the measurements the script left in DIR and write DIR/bench.json
      (machine-readable) and DIR/bench.txt (for people).
"""

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import time


def cmd_measure(a):
    if not a.cmd:
        print("bench_summary.py measure: no command after --", file=sys.stderr)
        return 2
    out = open(a.stdout, "wb") if a.stdout else None
    err = open(a.stderr, "wb") if a.stderr else None
    t0 = time.monotonic()
    proc = subprocess.Popen(a.cmd, stdout=out, stderr=err)
    timed_out = False
    killed_at = None
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        now = time.monotonic()
        if a.timeout and now - t0 > a.timeout and not timed_out:
            timed_out = True
            killed_at = now
            proc.send_signal(signal.SIGTERM)
        elif timed_out and now - killed_at > 10:
            proc.kill()
        time.sleep(0.02)
    wall_s = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    cpu_s = ru.ru_utime + ru.ru_stime
    result = {
        "cmd": a.cmd,
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "wall_s": wall_s,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "cpu_s": cpu_s,
        "cpu_pct_of_one_core": 100.0 * cpu_s / wall_s if wall_s > 0 else None,
        "peak_rss_mib": ru.ru_maxrss / 1024.0,  # Linux: ru_maxrss is in KiB
        "method": "os.wait4 rusage",
    }
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return 0


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"error": f"{path}: {e}"}


def trace_stats(path):
    """Count the sample records of a gate trace (or of its .partial prefix)."""
    for p in (path, path + ".partial"):
        if os.path.exists(p):
            n_samples = n_lines = 0
            complete = False
            with open(p) as f:
                for line in f:
                    n_lines += 1
                    try:
                        t = json.loads(line).get("type")
                    except ValueError:
                        continue
                    n_samples += t == "sample"
                    complete |= t == "end"
            return {"file": os.path.basename(p), "lines": n_lines, "samples": n_samples,
                    "complete": complete, "bytes": os.path.getsize(p)}
    return {"file": None, "error": f"{path}: no trace written"}


def fmt(x, spec=".2f"):
    return "n/a" if x is None else format(x, spec)


def cmd_summarize(a):
    d = a.dir
    intervals = [s for s in a.intervals.split(",") if s]
    attach = []
    for iv in intervals:
        g = load(os.path.join(d, f"gate-{iv}.json"))
        g["interval"] = iv
        g["trace"] = trace_stats(os.path.join(d, f"attach-{iv}.jsonl"))
        m = load(os.path.join(d, f"dmon-{iv}.json"))
        m["interval"] = "1s (dmon minimum), alongside gate at " + iv
        attach.append({"gate": g, "dmon": m})

    pairs = []
    for i in range(1, a.pairs + 1):
        bare = load(os.path.join(d, f"pair-{i}-bare.json"))
        gated = load(os.path.join(d, f"pair-{i}-gated.json"))
        gm = load(os.path.join(d, f"pair-{i}-gated-measure.json"))
        b = bare.get("final_samples_per_s")
        g = gated.get("final_samples_per_s")
        pairs.append({
            "pair": i,
            "order": "bare,gated" if i % 2 == 1 else "gated,bare",
            "bare_samples_per_s": b,
            "gated_samples_per_s": g,
            "ratio_gated_over_bare": (g / b) if (b and g) else None,
            "gate_exit_code": gm.get("exit_code"),
            "gated_trace": trace_stats(os.path.join(d, f"pair-{i}-gated.jsonl")),
        })
    ratios = [p["ratio_gated_over_bare"] for p in pairs if p["ratio_gated_over_bare"]]
    bares = [p["bare_samples_per_s"] for p in pairs if p["bare_samples_per_s"]]
    gateds = [p["gated_samples_per_s"] for p in pairs if p["gated_samples_per_s"]]
    med_ratio = statistics.median(ratios) if ratios else None
    throughput = {
        "workload": "fixtures/workloads/train.py --mode healthy --seconds %s" % a.run_seconds,
        "gate_interval": "100ms",
        "pairs": pairs,
        "valid_pairs": len(ratios),
        "median_bare_samples_per_s": statistics.median(bares) if bares else None,
        "median_gated_samples_per_s": statistics.median(gateds) if gateds else None,
        "median_ratio_gated_over_bare": med_ratio,
        "min_ratio": min(ratios) if ratios else None,
        "max_ratio": max(ratios) if ratios else None,
        "median_slowdown_pct": (1.0 - med_ratio) * 100.0 if med_ratio else None,
    }
    report = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": a.gpu,
        "driver": a.driver,
        "measurement": "CPU seconds and peak RSS from os.wait4 rusage of the gate / nvidia-smi "
                       "process itself; CPU % is of one core (cpu_s / wall_s * 100)",
        "attach": attach,
        "throughput": throughput,
    }
    with open(os.path.join(d, "bench.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")

    lines = [
        f"gate overhead benchmark, {report['date_utc']}",
        f"GPU: {a.gpu}, driver {a.driver}",
        "",
        f"(a)/(b) sampler cost while attached (--pid) to a running train.py --mode healthy,",
        "        gate and nvidia-smi dmon over the same window",
        f"{'tool':<44} {'wall s':>7} {'CPU s':>7} {'CPU %':>7} {'peak RSS MiB':>13} {'samples':>8} {'rc':>4}",
    ]
    for row in attach:
        g, m = row["gate"], row["dmon"]
        lines.append(
            f"{'gate record --interval ' + g['interval']:<44} {fmt(g.get('wall_s'), '.1f'):>7} "
            f"{fmt(g.get('cpu_s'), '.3f'):>7} {fmt(g.get('cpu_pct_of_one_core')):>7} "
            f"{fmt(g.get('peak_rss_mib'), '.1f'):>13} {g['trace'].get('samples', 'n/a')!s:>8} "
            f"{g.get('exit_code', 'n/a')!s:>4}")
        lines.append(
            f"{'nvidia-smi dmon -s pucm --gpm-metrics (1 s)':<44} {fmt(m.get('wall_s'), '.1f'):>7} "
            f"{fmt(m.get('cpu_s'), '.3f'):>7} {fmt(m.get('cpu_pct_of_one_core')):>7} "
            f"{fmt(m.get('peak_rss_mib'), '.1f'):>13} {'':>8} {m.get('exit_code', 'n/a')!s:>4}")
    lines += [
        "",
        f"(c) throughput of {throughput['workload']}, bare vs under 'gate record --interval 100ms'",
        f"{'pair':>4} {'order':<11} {'bare samples/s':>15} {'gated samples/s':>16} {'ratio':>7}",
    ]
    for p in pairs:
        lines.append(
            f"{p['pair']:>4} {p['order']:<11} {fmt(p['bare_samples_per_s'], '.1f'):>15} "
            f"{fmt(p['gated_samples_per_s'], '.1f'):>16} {fmt(p['ratio_gated_over_bare'], '.4f'):>7}")
    lines += [
        f"median bare {fmt(throughput['median_bare_samples_per_s'], '.1f')} samples/s, "
        f"median gated {fmt(throughput['median_gated_samples_per_s'], '.1f')} samples/s",
        f"median ratio gated/bare {fmt(med_ratio, '.4f')} (min {fmt(throughput['min_ratio'], '.4f')}, "
        f"max {fmt(throughput['max_ratio'], '.4f')}), median slowdown "
        f"{fmt(throughput['median_slowdown_pct'], '.2f')} % over {len(ratios)} valid pairs",
    ]
    with open(os.path.join(d, "bench.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd_name", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--json", required=True)
    m.add_argument("--stdout")
    m.add_argument("--stderr")
    m.add_argument("--timeout", type=float, default=0.0)
    m.add_argument("cmd", nargs=argparse.REMAINDER)
    s = sub.add_parser("summarize")
    s.add_argument("--dir", required=True)
    s.add_argument("--gpu", default="unknown")
    s.add_argument("--driver", default="unknown")
    s.add_argument("--pairs", type=int, default=5)
    s.add_argument("--intervals", default="100ms,10ms")
    s.add_argument("--run-seconds", default="20")
    a = p.parse_args()
    if a.cmd_name == "measure":
        if a.cmd and a.cmd[0] == "--":
            a.cmd = a.cmd[1:]
        return cmd_measure(a)
    return cmd_summarize(a)


if __name__ == "__main__":
    sys.exit(main())
