#!/usr/bin/env bash
# gate's own CPU when it LAUNCHES a tree of 1 main + 8 workers, host
# counters only (`--no-gpu`: no GPU here), on its two host paths: the
# target's own cgroup (the tree's CPU from cpu.stat, per-process /proc
# reads once a second) and GATE_CGROUP=0 (every process's /proc/PID/stat at
# every 100 ms tick). BENCHMARKS.md section 1, "host counters from a cgroup".
#
# The tree is scripts/busy-tree.py (a parent and 8 workers of 8 threads
# each waking every 10 ms, 73 tasks; --maps N maps N files as torch would).
# gate's own CPU (not the benchmark's, not its watchdog's) comes from
# scripts/gate-self-cpu.py; the per-tick sections from GATE_PROFILE=1.
# Each round runs both paths, the order alternating; medians over rounds.
#
# Usage: scripts/bench-sampler-launch.sh [--rounds 5] [--seconds 20] [--maps 200]
# GATE (default target/release/gate). Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5; seconds=20; maps=200
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --maps) maps=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--seconds S] [--maps N]" >&2; exit 2 ;;
  esac
done
gate=${GATE:-target/release/gate}
work=$(mktemp -d /tmp/gate-launch.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), no GPU, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gate:    $gate ($($gate --version)), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "tree:    scripts/busy-tree.py --maps $maps (9 processes, 73 tasks), launched: record --no-gpu --interval 100ms --duration ${seconds}s; $rounds rounds"
echo

# run NAME GATE_CGROUP ROUND: one launched recording
run() {
  local name=$1 cg=$2 r=$3
  GATE_CGROUP=$cg GATE_PROFILE=1 python3 scripts/gate-self-cpu.py --json "$work/$name-$r.json" \
    --stderr "$work/$name-$r.err" --timeout $((seconds + 120)) -- \
    "$gate" record --no-gpu --interval 100ms --duration "${seconds}s" --warmup 0s -o "$work/t.jsonl" \
    -- python3 scripts/busy-tree.py $((seconds + 30)) --maps "$maps" > /dev/null
  grep -q "host counters: the target's own cgroup" "$work/t.jsonl" && echo "$name round $r: cgroup path" \
    || echo "$name round $r: $(grep -o 'host counters: [^"]*' "$work/t.jsonl")"
  # "  host   12.345 ms total   41.2 us/call  300 calls"
  awk -v r="$r" '/ us\/call / {print r, $1, $2, $5, $7}' "$work/$name-$r.err" >> "$work/$name.prof"
}
for r in $(seq "$rounds"); do
  if (( r % 2 )); then run cgroup 1 "$r"; run proc 0 "$r"; else run proc 0 "$r"; run cgroup 1 "$r"; fi
done
python3 - "$work" "$rounds" "$seconds" <<'PY'
import json, statistics, sys
work, rounds, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
med = statistics.median
res = {}
for name in ("cgroup", "proc"):
    runs = [json.load(open(f"{work}/{name}-{r}.json")) for r in range(1, rounds + 1)]
    prof = {}
    for line in open(f"{work}/{name}.prof"):
        r, sec, total_ms, us_call, calls = line.split()
        prof.setdefault(sec, {})[int(r)] = (float(total_ms), float(us_call), int(calls))
    # Sampling-thread CPU of the tree and /proc work per 100 ms tick: the
    # sections' totals over the recording's ticks (the ticks are the
    # trace_write calls: one per tick).
    per_tick = {}
    for r in range(1, rounds + 1):
        ticks = prof.get("trace_write", {}).get(r, (0, 0, 1))[2]
        per_tick.setdefault("host+tree", []).append(
            sum(prof.get(s, {}).get(r, (0, 0, 0))[0] for s in ("host", "host_1s", "tree")) * 1000 / ticks)
        for s in ("host", "host_1s", "tree"):
            if r in prof.get(s, {}):
                per_tick.setdefault(s, []).append(prof[s][r][1])
    res[name] = dict(
        gate=med(r["gate_cpu_pct_of_one_core"] for r in runs),
        gate_runs=[r["gate_cpu_pct_of_one_core"] for r in runs],
        wd=med((r["watchdog_cpu_s"] or 0) / r["wall_s"] * 100 for r in runs),
        both=med(r["gate_and_watchdog_cpu_pct_of_one_core"] for r in runs),
        tick={k: med(v) for k, v in per_tick.items()},
    )
print(f"| launched tree, {seconds:.0f} s at 100 ms, median of {rounds} | cgroup path | /proc path | cgroup / proc |")
print("|---|---|---|---|")
c, p = res["cgroup"], res["proc"]
row = lambda label, a, b, fmt: print(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {a / b if b else float('nan'):.2f} |")
row("gate process CPU, % of a core", c["gate"], p["gate"], "{:.3f} %")
row("its watchdog, % of a core", c["wd"], p["wd"], "{:.3f} %")
row("gate + watchdog, % of a core", c["both"], p["both"], "{:.3f} %")
row("host + tree sections, us per tick (sampling thread)", c["tick"]["host+tree"], p["tick"]["host+tree"], "{:.1f}")
for s in ("host", "host_1s", "tree"):
    if s in c["tick"] and s in p["tick"]:
        row(f"`{s}` section, us per call", c["tick"][s], p["tick"][s], "{:.1f}")
print()
print("gate CPU % per round: cgroup " + " ".join(f"{x:.3f}" for x in c["gate_runs"])
      + "; proc " + " ".join(f"{x:.3f}" for x in p["gate_runs"]))
PY
