#!/usr/bin/env bash
# Speed of `gate check --replay` on a 1-hour, 8-GPU, 100 ms trace (36,000
# samples): wall time and peak RSS, median of 5 runs.
# Target: < 2 s and < 300 MB on the 2-core development machine.
#
# Input: fixtures/traces/healthy-1.jsonl tiled to size when it exists, else a
# SYNTHETIC healthy trace (gpugate::synthetic, via examples/make-big-trace.rs)
# tiled the same way.
# Usage: scripts/bench-check-speed.sh [RUNS]   (needs /usr/bin/time: apt-get install time)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
cargo build --release --quiet --bin gate --example make-big-trace
gate=target/release/gate
mk=target/release/examples/make-big-trace

src=fixtures/traces/healthy-1.jsonl
if [[ -f $src ]]; then
  input="tiled from $src"
else
  src=$work/seed.jsonl
  "$mk" --synthetic healthy --gpus 1 --samples 600 --seed 1 -o "$src" 2>/dev/null
  input="tiled from a SYNTHETIC healthy trace (no fixture present)"
fi
big=$work/big.jsonl
"$mk" --tile "$src" --gpus 8 --samples 36000 -o "$big" 2>/dev/null
size_mb=$(du -m "$big" | cut -f1)

# Baseline from the same big trace (capture is timed once, for reference).
/usr/bin/time -f "%e %M" -o "$work/cap.time" \
  "$gate" capture --baseline big --baseline-dir "$work/b" --commit bench --replay "$big" >/dev/null
read -r cap_s cap_kb < "$work/cap.time"

walls=(); rss=()
for i in $(seq "$runs"); do
  set +e
  /usr/bin/time -f "%e %M" -o "$work/t" \
    "$gate" check --baseline big --baseline-dir "$work/b" --format json --replay "$big" >/dev/null
  code=$?
  set -e
  [[ $code -le 1 ]] || { echo "gate check failed with exit $code" >&2; exit 1; }
  read -r w m < "$work/t"
  walls+=("$w"); rss+=("$m")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall_med=$(median "${walls[@]}")
rss_med_kb=$(median "${rss[@]}")

echo "date:      $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine:   $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "gate:      $($gate --version)"
echo "trace:     8 GPUs x 36000 samples at 100 ms, ${size_mb} MB, $input"
echo "capture:   ${cap_s} s, $((cap_kb / 1024)) MB peak RSS (1 run)"
echo "check:     median of $runs: ${wall_med} s wall, $((rss_med_kb / 1024)) MB peak RSS"
echo "           all runs (s): ${walls[*]}"
echo "           all runs (KB): ${rss[*]}"
awk -v w="$wall_med" -v r="$rss_med_kb" 'BEGIN {
  ok = (w < 2.0 && r < 300*1024);
  printf "target:    < 2 s and < 300 MB: %s\n", ok ? "MET" : "NOT MET";
  exit ok ? 0 : 1 }'
