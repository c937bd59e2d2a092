#!/usr/bin/env bash
# Speed and memory of `gate watch --replay` beside `gate check --replay` of
# the same trace (issue 22.4: a replay within 1.5x of a check, memory
# bounded by the longest window; BENCHMARKS.md section 2).
#
# Input: fixtures/traces/healthy-1.jsonl (real H200 data) tiled to 8 GPUs at
# 100 ms for each of HOURS (default "1 24") by examples/make-big-trace.rs,
# under a temporary directory in /tmp, deleted on exit (24 h is ~1.8 GB).
# At each size, ROUNDS interleaved rounds (the order alternates), timing:
#   check  `gate check --replay` against a baseline captured from the trace
#   watch  `gate watch --replay` at its defaults (--window 1m, --eval-every 5s,
#          --min-severity low; the built-in rules)
# and prints medians of CPU seconds (user+sys), wall seconds and peak RSS,
# and the median of the per-round CPU ratios watch/check.
#
# Usage: scripts/bench-watch-speed.sh [--hours "1 24"] [--rounds 3]
# Needs /usr/bin/time (apt-get install time).
set -euo pipefail
cd "$(dirname "$0")/.."
hours="1 24"; rounds=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--hours \"1 24\"] [--rounds N]" >&2; exit 2 ;;
  esac
done
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
work=$(mktemp -d /tmp/gate-watch-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# NO_BUILD=1 with GATE and MK set: use prebuilt binaries.
[[ -n ${NO_BUILD:-} ]] || cargo build --release --quiet --bin gate --example make-big-trace
gate=${GATE:-target/release/gate}
mk=${MK:-target/release/examples/make-big-trace}
src=fixtures/traces/healthy-1.jsonl

# time_one NAME CMD...: appends "cpu wall rss_kb" to $work/NAME.times
time_one() {
  local name=$1; shift
  set +e
  /usr/bin/time -f "%U %S %e %M" -o "$work/t" "$@" >/dev/null 2>"$work/err"
  local code=$?
  set -e
  if [[ $code -gt 1 ]]; then echo "$name failed (exit $code):" >&2; cat "$work/err" >&2; exit 1; fi
  awk '{printf "%.3f %.3f %d\n", $1 + $2, $3, $4}' "$work/t" >> "$work/$name.times"
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$work/$1.times"; }

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gate:    $($gate --version)"
echo "input:   $src tiled to 8 GPUs at 100 ms; $rounds interleaved rounds per size"
echo
printf '| trace | MB | command | CPU s (median) | wall s | peak RSS MB |\n|---|---|---|---|---|---|\n'
for h in $hours; do
  samples=$((h * 36000))
  big=$work/big-${h}h.jsonl
  "$mk" --tile "$src" --gpus 8 --samples "$samples" -o "$big" 2>/dev/null
  mb=$(( $(stat -c %s "$big") / 1000000 ))
  # One baseline, captured from the first size: the judging costs the same
  # whatever the baseline's length, and a 24-hour capture costs minutes.
  [[ -d $work/b ]] || "$gate" capture --baseline big --baseline-dir "$work/b" --commit bench --replay "$big" >/dev/null 2>&1
  rm -f "$work"/*.times
  for r in $(seq "$rounds"); do
    for c in $( ((r % 2)) && echo "check watch" || echo "watch check"); do
      case $c in
        check) time_one check "$gate" check --baseline big --baseline-dir "$work/b" --format json --replay "$big" ;;
        watch) time_one watch "$gate" watch --replay "$big" ;;
      esac
    done
  done
  for c in check watch; do
    printf '| 8 GPU x %s h | %s | %s | %s | %s | %d |\n' "$h" "$mb" "$c" \
      "$(col "$c" 1 | median)" "$(col "$c" 2 | median)" $(( $(col "$c" 3 | median | cut -d. -f1) / 1024 ))
  done
  ratio=$(paste -d' ' <(col watch 1) <(col check 1) | awk '{printf "%.3f\n", $1 / $2}' | median)
  echo "|   | | paired CPU ratio watch/check | $ratio | | |"
  rm -f "$big"
done
