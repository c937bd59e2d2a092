#!/usr/bin/env bash
# Analysis speed and memory of `gate` as traces grow, side by side with the
# yardsticks, in one run (BENCHMARKS.md, section 2). Inputs are
# fixtures/traces/healthy-1.jsonl (real H200 data) tiled by
# examples/make-big-trace.rs to 8 GPUs at 100 ms for each of HOURS (default
# "0.25 1 6 24"), written under a temporary directory in /tmp and deleted
# on exit (a 24 h trace is ~1.8 GB).
#
# At each size, in ROUNDS interleaved rounds (the order rotates each round,
# so a neighbour's compile burst hits every contender alike), it times:
#   gate1  `GATE_THREADS=1 gate check --replay` against a baseline captured
#          from the same trace
#   floor1 examples/check-floor.rs on one thread: a byte scanner over the
#          mapped file (no JSON library on the sample lines) into
#          column-major f32 series + gate's statistics of every column
#          over gate's steady window: the least work a check must do
#   gate2, floor2  the same two on two threads (GATE_THREADS=2;
#          `check-floor --threads 2`: the lines split in two at a line
#          boundary, scanned side by side, the statistics dealt out to two
#          threads). THREADS (default "1 2") picks the thread counts.
#   python scripts/naive_check.py: json.loads + numpy percentiles (up to
#          PYTHON_MAX_HOURS, default 1)
#   old    (optional, --old PATH) another gate binary, e.g. main before a
#          change, on the first of THREADS (up to OLD_MAX_HOURS, default all
#          sizes; also in the runs below)
# Each run's CPU time (user+sys), wall time and peak RSS come from wait4
# (scripts/bench_summary.py measure). It prints medians of CPU seconds,
# wall seconds, cores used (CPU / wall) and peak RSS, the medians of the
# per-round ratios of CPU gateN/floorN (same thread count, same round),
# gate/old, of wall time gateN/floorN, and the growth exponent of CPU time
# between the smallest and the largest size (log(cpu ratio) / log(size
# ratio); 1.00 is linear). `check-floor --verify` first checks, on the
# smallest size, that the floor's statistics are gate's, bit for bit.
#
# Then, once per contender binary (gate, and old when given), with peak RSS:
#   capture  `gate capture` of 3 runs of the largest size (hard links)
#   report   `gate report --format json` of the largest size
#   multi    `check`, `capture` and `report --html` of NODES x 8 GPU x 1 h
#            (one node file under NODES names; HTML size printed)
#
# Usage: [THREADS="1 2"] scripts/bench-check-speed.sh [--hours "0.25 1 6 24"]
#        [--rounds 3] [--nodes 64] [--old PATH] [--no-extra]
# (--no-extra: only the side-by-side sizes, not the capture, report and
# multi-node runs after them)
# Needs python3 (numpy for the python contender).
set -euo pipefail
cd "$(dirname "$0")/.."
hours="0.25 1 6 24"; rounds=3; nodes=64; old=""; extra=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --no-extra) extra=0; shift ;;
    *) echo "usage: $0 [--hours \"0.25 1 6 24\"] [--rounds N] [--nodes N] [--old PATH] [--no-extra]" >&2; exit 2 ;;
  esac
done
# numpy only for the python contender (PYTHON_MAX_HOURS=0 leaves it out).
[[ ${PYTHON_MAX_HOURS:-1} == 0 ]] || python3 -c 'import numpy' 2>/dev/null || { echo "needs numpy (pip install numpy, or PYTHON_MAX_HOURS=0)" >&2; exit 2; }
work=$(mktemp -d /tmp/gate-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# NO_BUILD=1 with GATE, MK, FLOOR set: use prebuilt binaries (e.g. while
# cargo is busy with something else).
[[ -n ${NO_BUILD:-} ]] || cargo build --release --quiet --bin gate --example make-big-trace --example check-floor
gate=${GATE:-target/release/gate}
mk=${MK:-target/release/examples/make-big-trace}
floor=${FLOOR:-target/release/examples/check-floor}
src=fixtures/traces/healthy-1.jsonl

# time_one NAME CMD...: appends "cpu wall rss_kb" to $work/NAME.times
# (wait4's accounting of that one process, scripts/bench_summary.py).
time_one() {
  local name=$1; shift
  set +e
  python3 scripts/bench_summary.py measure --json "$work/t.json" --stdout /dev/null --stderr "$work/err" -- "$@"
  set -e
  local code
  code=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exit_code"])' "$work/t.json")
  if [[ $code -gt 1 ]]; then echo "$name failed (exit $code):" >&2; cat "$work/err" >&2; exit 1; fi
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("%.3f %.3f %d" % (d["cpu_s"], d["wall_s"], d["peak_rss_mib"] * 1024))' "$work/t.json" >> "$work/$name.times"
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$work/$1.times"; }
one_line() { # NAME LABEL: "label: cpu s CPU, wall s, RSS MB" from a single run
  read -r cpu wall rss < "$work/$1.times"
  echo "| $2 | $cpu | $wall | $((rss / 1024)) |"
}

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), no GPU, load $(cut -d' ' -f1-3 /proc/loadavg)"
threads=${THREADS:-1 2}
echo "gate:    $($gate --version), threads: $threads${old:+; old: $old}"
echo "input:   $src tiled to 8 GPUs at 100 ms; $rounds interleaved rounds per size"
echo
printf '| trace | MB | contender | CPU s (median) | wall s | cores | peak RSS MB | us CPU per GPU-sample |\n|---|---|---|---|---|---|---|---|\n'
declare -A ratio_lines cpu_of
first_h=""; last_h=""
first_t=${threads%% *}
# The floor's statistics are gate's (bit for bit), on the smallest size.
verify=$work/verify.jsonl
"$mk" --tile "$src" --gpus 8 --samples "$(awk -v h="${hours%% *}" 'BEGIN {printf "%d", h * 36000}')" -o "$verify" 2>/dev/null
"$floor" --verify "$verify" >/dev/null || { echo "check-floor --verify: the floor's statistics are not gate's" >&2; exit 1; }
rm -f "$verify"
for h in $hours; do
  samples=$(awk -v h="$h" 'BEGIN {printf "%d", h * 36000}')
  big=$work/big-${h}h.jsonl
  "$mk" --tile "$src" --gpus 8 --samples "$samples" -o "$big" 2>/dev/null
  mb=$(( $(stat -c %s "$big") / 1000000 ))
  "$gate" capture --baseline big --baseline-dir "$work/b$h" --commit bench --replay "$big" >/dev/null 2>&1
  contenders=()
  for t in $threads; do contenders+=("gate$t" "floor$t"); done
  [[ $(awk -v h="$h" -v m="${PYTHON_MAX_HOURS:-1}" 'BEGIN {print (h <= m)}') == 1 ]] && contenders+=(python)
  [[ -n $old && $(awk -v h="$h" -v m="${OLD_MAX_HOURS:-1000}" 'BEGIN {print (h <= m)}') == 1 ]] && contenders+=(old)
  rm -f "$work"/*.times
  for r in $(seq "$rounds"); do
    n=${#contenders[@]}
    for k in $(seq 0 $((n - 1))); do
      c=${contenders[$(((k + r) % n))]}
      case $c in
        gate*) time_one "$c" env GATE_THREADS="${c#gate}" "$gate" check --baseline big --baseline-dir "$work/b$h" --format json --replay "$big" ;;
        old) time_one old env GATE_THREADS="$first_t" "$old" check --baseline big --baseline-dir "$work/b$h" --format json --replay "$big" ;;
        floor*) time_one "$c" "$floor" --threads "${c#floor}" "$big" ;;
        python) time_one python python3 scripts/naive_check.py "$big" ;;
      esac
    done
  done
  for c in "${contenders[@]}"; do
    cpu=$(col "$c" 1 | median); wall=$(col "$c" 2 | median); rss=$(col "$c" 3 | median)
    cpu_of[$h-$c]=$cpu
    per=$(awk -v c="$cpu" -v s="$samples" 'BEGIN {printf "%.2f", c * 1e6 / (s * 8)}')
    cores=$(paste -d' ' <(col "$c" 1) <(col "$c" 2) | awk '{printf "%.3f\n", $1 / $2}' | median)
    printf '| 8 GPU x %s h | %s | %s | %s | %s | %s | %d | %s |\n' "$h" "$mb" "$c" "$cpu" "$wall" "$cores" $((rss / 1024)) "$per"
  done
  for t in $threads; do
    ratio_lines[$h-cpu$t]=$(paste -d' ' <(col "gate$t" 1) <(col "floor$t" 1) | awk '{printf "%.3f\n", $1 / $2}' | median)
    ratio_lines[$h-wall$t]=$(paste -d' ' <(col "gate$t" 2) <(col "floor$t" 2) | awk '{printf "%.3f\n", $1 / $2}' | median)
    echo "|   | | paired ratio gate$t/floor$t | ${ratio_lines[$h-cpu$t]} | ${ratio_lines[$h-wall$t]} | | | |"
  done
  for c in python old; do
    [[ -f $work/$c.times ]] || continue
    ratio_lines[$h-$c]=$(paste -d' ' <(col "gate$first_t" 1) <(col "$c" 1) | awk '{printf "%.3f\n", $1 / $2}' | median)
    echo "|   | | paired CPU ratio gate$first_t/$c | ${ratio_lines[$h-$c]} | | | | |"
  done
  [[ -z $first_h ]] && first_h=$h
  last_h=$h
  # Keep the largest trace for the capture and report runs below.
  [[ $h == "${hours##* }" ]] || rm -f "$big"
done
echo
echo "Paired ratios (median over rounds of gate / other, same round, same thread count):"
for h in $hours; do
  line="  8 GPU x $h h:"
  for t in $threads; do
    line+=" CPU gate$t/floor$t ${ratio_lines[$h-cpu$t]} (wall ${ratio_lines[$h-wall$t]});"
  done
  for c in python old; do
    [[ -n ${ratio_lines[$h-$c]:-} ]] && line+=" CPU gate$first_t/$c ${ratio_lines[$h-$c]}"
  done
  echo "$line"
done
if [[ $first_h != "$last_h" ]]; then
  echo "Growth of CPU time from $first_h h to $last_h h (exponent; 1.00 = linear):"
  for c in "gate$first_t" "floor$first_t" old; do
    [[ -n ${cpu_of[$first_h-$c]:-} && -n ${cpu_of[$last_h-$c]:-} ]] || continue
    awk -v a="${cpu_of[$first_h-$c]}" -v b="${cpu_of[$last_h-$c]}" -v x="$first_h" -v y="$last_h" -v c="$c" \
      'BEGIN {printf "  %s: %.3f\n", c, log(b / a) / log(y / x)}'
  done
fi

[[ $extra == 1 ]] || exit 0
# Capture of 3 runs and report, at the largest size.
big=$work/big-${last_h}h.jsonl
ln "$big" "$work/run2.jsonl"; ln "$big" "$work/run3.jsonl"
bins=(gate)
[[ -n $old && $(awk -v h="$last_h" -v m="${OLD_MAX_HOURS:-1000}" 'BEGIN {print (h <= m)}') == 1 ]] && bins+=(old)
echo
echo "8 GPU x $last_h h, one run each:"
echo "| command | CPU s | wall s | peak RSS MB |"
echo "|---|---|---|---|"
for b in "${bins[@]}"; do
  bin=$gate; [[ $b == old ]] && bin=$old
  rm -f "$work"/*.times
  time_one cap "$bin" capture --baseline three --baseline-dir "$work/b3-$b" --commit bench --replay "$big" "$work/run2.jsonl" "$work/run3.jsonl"
  one_line cap "$b capture, 3 runs"
  time_one rep "$bin" report --format json "$big"
  one_line rep "$b report"
done
rm -f "$big" "$work/run2.jsonl" "$work/run3.jsonl"

if [[ $nodes -gt 0 ]]; then
  one=$work/node.jsonl
  "$mk" --tile "$src" --gpus 8 --samples 36000 -o "$one" 2>/dev/null
  "$gate" capture --baseline node --baseline-dir "$work/bn" --commit bench --replay "$one" >/dev/null 2>&1
  # The same node file under NODES names (hard links): the CPU work is that
  # of NODES distinct files; the disk reads come from the page cache.
  args=()
  for i in $(seq 0 $((nodes - 1))); do ln "$one" "$work/node-$i.jsonl"; args+=("$work/node-$i.jsonl"); done
  echo
  echo "$nodes nodes x 8 GPU x 1 h ($(( $(stat -c %s "$one") * nodes / 1000000 )) MB), one run each:"
  echo "| command | CPU s | wall s | peak RSS MB |"
  echo "|---|---|---|---|"
  for b in "${bins[@]}"; do
    bin=$gate; [[ $b == old ]] && bin=$old
    rm -f "$work"/*.times
    time_one mc "$bin" check --baseline node --baseline-dir "$work/bn" --multi-node --format json --replay "${args[@]}"
    one_line mc "$b check --multi-node"
    time_one mcap "$bin" capture --baseline multi --baseline-dir "$work/bm-$b" --commit bench --multi-node --replay "${args[@]}"
    one_line mcap "$b capture --multi-node"
    time_one mrep "$bin" report --format json --html "$work/multi-$b.html" "${args[@]}"
    one_line mrep "$b report --html ($(( $(stat -c %s "$work/multi-$b.html") / 1000 )) kB HTML)"
    rm -f "$work/multi-$b.html"
  done
fi
