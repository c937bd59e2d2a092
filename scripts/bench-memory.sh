#!/usr/bin/env bash
# Peak memory of the commands that read many or long traces (issue 22,
# item 2; BENCHMARKS.md, section 2, "Memory bounded by what is kept"), on
# SYNTHETIC traces (examples/make-big-trace.rs, signature healthy: GPM in
# every sample, full-precision noise, 8 GPUs at 100 ms), one run each:
#
#   capture    `gate capture` of 3 runs of HOURS (default 24) h       target < 400 MB
#   check      `gate check` of the same 3 runs against that baseline
#   report     `gate report --format json` of one of those runs
#   mcapture   `gate capture --multi-node` of NODES (64) nodes x 1 h  target < 600 MB
#   mcheck     `gate check --multi-node` of the same nodes
#   mreport    `gate report --format json --html` of the nodes         target < 600 MB,
#                                                                      HTML < 10 MB
# Peak RSS is /usr/bin/time's maximum resident set size; CPU is user+sys.
# Every run and node has its own seed (distinct files, as real runs are).
#
# Usage: scripts/bench-memory.sh [--hours 24] [--nodes 64] [--old PATH]
# GATE (default target/release/gate), MK (default
# target/release/examples/make-big-trace); NO_BUILD=1 uses them as built.
# Disk: the traces go to a temporary directory under TMPDIR (default /tmp)
# and are deleted at the end: 3 x 1.4 GB at 24 h plus NODES x 58 MB
# (about 8 GB with the defaults); a pooled capture also keeps its runs'
# steady samples in a scratch file under TMPDIR (about as large as the
# columns of the runs it pools: ~2.9 GB for 3 x 24 h), and a trace whose
# columns pass GATE_SPILL_MB (256) keeps them in another while it is read
# (~1 GB for 24 h). OLD may be a wrapper that sets GATE_SPILL_MB=1048576:
# the same binary with every trace's columns in memory.
set -euo pipefail
cd "$(dirname "$0")/.."
hours=24; nodes=64; old=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --hours) hours=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    *) echo "usage: $0 [--hours H] [--nodes N] [--old PATH]" >&2; exit 2 ;;
  esac
done
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
[[ -n ${NO_BUILD:-} ]] || cargo build --release --quiet --bin gate --example make-big-trace
gate=${GATE:-target/release/gate}
mk=${MK:-target/release/examples/make-big-trace}
work=$(mktemp -d "${TMPDIR:-/tmp}/gate-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), no GPU, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gate:    $gate ($($gate --version)), GATE_THREADS=${GATE_THREADS:-all cores}${old:+; old: $old}"
samples=$(awk -v h="$hours" 'BEGIN {printf "%d", h * 36000}')
runs=()
for s in 1 2 3; do
  "$mk" --synthetic healthy --gpus 8 --samples "$samples" --seed "$s" -o "$work/synthetic-run$s.jsonl" 2>/dev/null
  runs+=("$work/synthetic-run$s.jsonl")
done
node_files=()
for n in $(seq 0 $((nodes - 1))); do
  "$mk" --synthetic healthy --gpus 8 --samples 36000 --seed $((100 + n)) -o "$work/synthetic-node$n.jsonl" 2>/dev/null
  node_files+=("$work/synthetic-node$n.jsonl")
done
echo "input:   3 runs of 8 GPU x $hours h ($(( $(stat -c %s "${runs[0]}") / 1000000 )) MB each), $nodes nodes of 8 GPU x 1 h ($(( $(stat -c %s "${node_files[0]}") / 1000000 )) MB each), synthetic healthy, distinct seeds"
echo

# measure LABEL CMD...: one table row "| LABEL | cpu | wall | rss MB |"
measure() {
  local label=$1; shift
  set +e
  /usr/bin/time -f "%U %S %e %M" -o "$work/t" "$@" >/dev/null 2>"$work/err"
  local code=$?
  set -e
  if [[ $code -gt 1 && $code -ne 4 ]]; then echo "$label failed (exit $code):" >&2; cat "$work/err" >&2; exit 1; fi
  awk -v l="$label" '{printf "| %s | %.2f | %.1f | %d |\n", l, $1 + $2, $3, $4 / 1024}' "$work/t"
}

echo "| command | CPU s | wall s | peak RSS MB |"
echo "|---|---|---|---|"
bins=(gate); [[ -n $old ]] && bins+=(old)
for b in "${bins[@]}"; do
  bin=$gate; [[ $b == old ]] && bin=$old
  measure "$b capture, 3 runs x $hours h" "$bin" capture --baseline three --baseline-dir "$work/b-$b" --commit bench --replay "${runs[@]}"
  measure "$b check, 3 runs x $hours h" "$bin" check --baseline three --baseline-dir "$work/b-$b" --format json --replay "${runs[@]}"
  measure "$b report, 1 run x $hours h" "$bin" report --format json "${runs[0]}"
  measure "$b capture --multi-node, $nodes nodes x 1 h" "$bin" capture --baseline multi --baseline-dir "$work/b-$b" --commit bench --multi-node --replay "${node_files[@]}"
  measure "$b check --multi-node, $nodes nodes x 1 h" "$bin" check --baseline multi --baseline-dir "$work/b-$b" --multi-node --format json --replay "${node_files[@]}"
  measure "$b report --html, $nodes nodes x 1 h" "$bin" report --format json --html "$work/multi-$b.html" "${node_files[@]}"
  echo "|   $b: HTML of $nodes nodes: $(( $(stat -c %s "$work/multi-$b.html") / 1000 )) kB | | | |"
done
if [[ -n $old ]]; then
  # The outputs must not change: baselines byte for byte (but the creation time).
  for f in three multi; do
    if diff <(grep -v '^created' "$work/b-gate/$f.toml") <(grep -v '^created' "$work/b-old/$f.toml") >/dev/null; then
      echo "baseline $f: identical to old's"
    else
      echo "baseline $f: DIFFERS from old's"
    fi
  done
fi
