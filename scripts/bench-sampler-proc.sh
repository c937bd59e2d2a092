#!/usr/bin/env bash
# gate's own sampling work beyond NVML, measured without a GPU
# (BENCHMARKS.md, "gate's own /proc work"): `/proc` reads of the target's
# tree (`host`), tree rescans (`tree`), the framework scan of
# /proc/PID/maps (`frameworks`) and writing the trace (`trace_write`).
#
# A busy tree (scripts/busy-tree.py: a parent and 8 workers of 8 threads,
# and with --maps N each process maps N files of 5 segments, one named
# like torch's libtorch_cuda.so, ~1,100 lines of maps like a torch
# process) runs; `GATE_PROFILE=1 gate record --no-gpu --pid PID --interval
# 100ms --duration SECONDS` attaches to it, so /usr/bin/time measures gate's
# own CPU (an attached tree is not gate's child). Each round runs every
# binary once, the order alternating; medians over the rounds.
#
# Usage: scripts/bench-sampler-proc.sh [--old PATH] [--rounds 3]
#        [--seconds 20] [--maps 200]
# GATE (default target/release/gate) is "new"; --old PATH adds another
# binary beside it. In gate binaries before the commit that added this
# script, the `trace_write` section contained the `frameworks` one
# (nested); for --old it is taken out again (OLD_NESTED=0 to turn that off).
# Needs /usr/bin/time and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
old=""; rounds=3; seconds=20; maps=200
while [[ $# -gt 0 ]]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --maps) maps=$2; shift 2 ;;
    *) echo "usage: $0 [--old PATH] [--rounds N] [--seconds S] [--maps N]" >&2; exit 2 ;;
  esac
done
gate=${GATE:-target/release/gate}
old_nested=${OLD_NESTED:-1}
work=$(mktemp -d /tmp/gate-sampler.XXXXXX)
tree_pid=""
cleanup() {
  [[ -n $tree_pid ]] && kill "$tree_pid" 2>/dev/null && wait "$tree_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
names=(new); bins=("$gate")
[[ -n $old ]] && { names+=(old); bins+=("$old"); }

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), no GPU, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "new:     $gate ($($gate --version))${old:+; old: $old}"
echo "tree:    scripts/busy-tree.py --maps $maps (9 processes, 73 tasks); record --no-gpu --pid --interval 100ms --duration ${seconds}s; $rounds rounds"
echo

# run NAME BIN: one attached recording; appends "section us_per_tick" lines
# to $work/NAME.prof and "cpu_s wall_s rss_kb" to $work/NAME.cpu
run() {
  local name=$1 bin=$2
  python3 scripts/busy-tree.py $((seconds + 10)) --maps "$maps" >/dev/null &
  tree_pid=$!
  sleep 2 # the workers fork and map their files
  rm -f "$work/t.jsonl"
  GATE_PROFILE=1 /usr/bin/time -f "%U %S %e %M" -o "$work/time" \
    "$bin" record --no-gpu --pid "$tree_pid" --interval 100ms --duration "${seconds}s" \
    --warmup 0s -o "$work/t.jsonl" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  kill "$tree_pid" 2>/dev/null; wait "$tree_pid" 2>/dev/null || true
  tree_pid=""
  awk '{printf "%.3f %.3f %d\n", $1 + $2, $3, $4}' "$work/time" >> "$work/$name.cpu"
  # "  host   12.345 ms total   41.2 us/call  300 calls"
  awk -v r="$3" '/ us\/call / {print r, $1, $5}' "$work/err" >> "$work/$name.prof"
}

for r in $(seq "$rounds"); do
  for k in $(seq 0 $((${#names[@]} - 1))); do
    i=$(( (k + r) % ${#names[@]} ))
    run "${names[$i]}" "${bins[$i]}" "$r"
  done
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
section() { # NAME SECTION -> median us per tick over rounds
  awk -v s="$2" '$2 == s {print $3}' "$work/$1.prof" | median
}
# Per round, the sum of the sections (frameworks taken out of trace_write
# where it was nested), then the median of those sums.
total() {
  awk -v nested="$2" '{v[$1, $2] = $3; r[$1] = 1}
    END {for (k in r) {t = v[k, "tree"] + v[k, "host"] + v[k, "trace_write"];
      if (!nested) t += v[k, "frameworks"]; print t}}' "$work/$1.prof" | median
}
printf '| section, us per 100 ms tick (median of %s) |' "$rounds"
for n in "${names[@]}"; do printf ' %s |' "$n"; done
printf '\n|---|'; for n in "${names[@]}"; do printf -- '---|'; done; echo
for s in host tree frameworks trace_write; do
  printf '| %s |' "$s"
  for n in "${names[@]}"; do
    v=$(section "$n" "$s")
    if [[ $s == trace_write && $n == old && $old_nested == 1 ]]; then
      v=$(awk -v a="$v" -v b="$(section old frameworks)" 'BEGIN {printf "%.1f", a - b}')
      v="$v (frameworks taken out)"
    fi
    printf ' %s |' "$v"
  done
  echo
done
printf '| all four, us per tick |'
for n in "${names[@]}"; do
  nested=0; [[ $n == old && $old_nested == 1 ]] && nested=1
  printf ' %s |' "$(total "$n" "$nested")"
done
echo
printf '| gate process CPU, %% of a core (user+sys / wall) |'
for n in "${names[@]}"; do
  printf ' %s |' "$(awk '{printf "%.3f\n", $1 / $2 * 100}' "$work/$n.cpu" | median)"
done
echo
printf '| gate peak RSS, MB |'
for n in "${names[@]}"; do
  printf ' %s |' "$(awk '{print $3 / 1024}' "$work/$n.cpu" | median)"
done
echo
