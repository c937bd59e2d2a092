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
# With --matrix "1 6 24" (issue 32.4-6) it measures instead, for each
# length in hours, 3 runs of 8 GPUs (made, measured, deleted before the
# next length) with GATE_THREADS in --threads (default "1 2 4 8"): the
# capture, check and report of each, gate and OLD side by side in every
# round, each command's peak scratch (its unnamed files' allocated
# blocks, polled every 0.2 s through /proc/PID/fd), the report JSON's size,
# and whether the baseline and the check JSON are the same bytes as OLD's.
# TMPDIR should be a disk with room: 3 x 1.4-1.8 GB at 24 h plus scratch.
#
# Usage: scripts/bench-memory.sh [--hours 24] [--nodes 64] [--old PATH]
#        scripts/bench-memory.sh --matrix "1 6 24" [--threads "1 2 4 8"] [--runs 3] [--matrix-nodes N] [--old PATH]
# (--runs: how many runs of each length are captured and checked; the
# report, text report and `watch --replay` rows read the first.)
# GATE (default target/release/gate), MK (default
# target/release/examples/make-big-trace); NO_BUILD=1 uses them as built.
# Disk: the traces go to a temporary directory under TMPDIR (default /tmp)
# and are deleted at the end: 3 x 1.4 GB at 24 h plus NODES x 58 MB
# (about 8 GB with the defaults); a pooled capture also parks its runs'
# columns in scratch files under TMPDIR (4 bytes a value: ~2.9 GB for
# 3 x 24 h), and a trace whose columns pass GATE_SPILL_MB (64) keeps them
# in one while it is read (~1 GB for 24 h). OLD may be a wrapper that sets
# GATE_SPILL_MB=1048576: the same binary with every trace's columns in
# memory.
set -euo pipefail
cd "$(dirname "$0")/.."
hours=24; nodes=64; old=""; matrix=""; threads="1 2 4 8"; mruns=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --hours) hours=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --matrix) matrix=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --matrix-nodes) matrix_nodes=$2; shift 2 ;;
    --runs) mruns=$2; shift 2 ;;
    *) echo "usage: $0 [--hours H] [--nodes N] [--old PATH] | --matrix \"H...\" [--threads \"T...\"] [--old PATH]" >&2; exit 2 ;;
  esac
done
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
[[ -n ${NO_BUILD:-} ]] || cargo build --release --quiet --bin gate --example make-big-trace
gate=${GATE:-target/release/gate}
mk=${MK:-target/release/examples/make-big-trace}
work=$(mktemp -d "${TMPDIR:-/tmp}/gate-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT

# scratch_watch PID OUT: the most bytes PID's unnamed (deleted) files
# held at once (their allocated blocks), polled until PID exits.
scratch_watch() {
  local pid=$1 out=$2 most=0 now
  while kill -0 "$pid" 2>/dev/null; do
    # Open (fd) or only mapped (map_files: parked columns), each file once.
    now=$({ find "/proc/$pid/fd" "/proc/$pid/map_files" -lname '*(deleted)' -printf '%p\n'; } 2>/dev/null \
      | xargs -r stat -L -c '%d:%i %b %B' 2>/dev/null | sort -u -k1,1 \
      | awk '{s += $2 * $3} END {printf "%.0f\n", s}')
    (( now > most )) && most=$now
    sleep 0.2
  done
  echo "$most" >"$out"
}

# mrow LABEL ENV... -- CMD...: one matrix row, with the peak scratch.
mrow() {
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f "$work/scratch"
  set +e
  env "${envs[@]}" /usr/bin/time -f "%U %S %e %M" -o "$work/t" "$@" >"$work/out" 2>"$work/err" &
  local tpid=$!
  local gpid=""
  for _ in $(seq 50); do
    gpid=$(pgrep -P "$tpid" | head -n1)
    [[ -n $gpid ]] && break
    sleep 0.02
  done
  [[ -n $gpid ]] && scratch_watch "$gpid" "$work/scratch" &
  local wpid=$!
  wait "$tpid"; local code=$?
  wait "$wpid" 2>/dev/null
  set -e
  if [[ $code -gt 1 && $code -ne 4 ]]; then echo "$label failed (exit $code):" >&2; cat "$work/err" >&2; exit 1; fi
  local scratch=0; [[ -s $work/scratch ]] && scratch=$(cat "$work/scratch")
  awk -v l="$label" -v s="$scratch" -v o="$(stat -c %s "$work/out")" \
    '{printf "| %s | %.2f | %.1f | %d | %d | %.1f |\n", l, $1 + $2, $3, $4 / 1024, s / 1e6, o / 1e6}' "$work/t"
}

if [[ -n $matrix ]]; then
  # In the scratch directory: no gate.toml of the repository's (its user
  # metric is not in synthetic traces).
  gate=$(realpath "$gate"); mk=$(realpath "$mk"); [[ -n $old ]] && old=$(realpath "$old")
  cd "$work"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), no GPU, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "gate:    $gate ($($gate --version))${old:+; old: $old}; TMPDIR ${TMPDIR:-/tmp} ($(stat -f -c %T "${TMPDIR:-/tmp}"))"
  echo "rows: hours, GATE_THREADS, binary, command; peak scratch = unnamed files' allocated bytes; out = stdout bytes"
  echo
  echo "| run | CPU s | wall s | peak RSS MB | peak scratch MB | out MB |"
  echo "|---|---|---|---|---|---|"
  bins=(gate); [[ -n $old ]] && bins+=(old)
  for h in $matrix; do
    samples=$(awk -v h="$h" 'BEGIN {printf "%d", h * 36000}')
    runs=()
    for s in $(seq "$mruns"); do
      "$mk" --synthetic healthy --gpus 8 --samples "$samples" --seed "$s" -o "$work/run$s.jsonl" 2>/dev/null
      runs+=("$work/run$s.jsonl")
    done
    echo "|   ${h} h: $mruns runs of $(( $(stat -c %s "${runs[0]}") / 1000000 )) MB each | | | | | |"
    for t in $threads; do
      for b in "${bins[@]}"; do
        bin=$gate; [[ $b == old ]] && bin=$old
        mrow "${h} h, $t thr, $b, capture $mruns runs" GATE_THREADS="$t" -- "$bin" capture --baseline "m$h-$t" --baseline-dir "$work/b-$b" --commit bench --replay "${runs[@]}"
        mrow "${h} h, $t thr, $b, check $mruns runs" GATE_THREADS="$t" -- "$bin" check --baseline "m$h-$t" --baseline-dir "$work/b-$b" --format json --replay "${runs[@]}"
        cp "$work/out" "$work/check-$b.json"
        mrow "${h} h, $t thr, $b, report 1 run (JSON)" GATE_THREADS="$t" -- "$bin" report --format json "${runs[0]}"
        mrow "${h} h, $t thr, $b, report 1 run (text)" GATE_THREADS="$t" -- "$bin" report "${runs[0]}"
        mrow "${h} h, $t thr, $b, watch --replay 1 run" GATE_THREADS="$t" -- "$bin" watch --replay "${runs[0]}"
      done
      if [[ -n $old ]]; then
        same_b=DIFFERS; diff <(grep -v '^created' "$work/b-gate/m$h-$t.toml") <(grep -v '^created' "$work/b-old/m$h-$t.toml") >/dev/null && same_b=identical
        # The check JSON names its baseline file and creation time: gate's
        # check is run again (untimed) against old's baseline to compare.
        GATE_THREADS="$t" "$gate" check --baseline "m$h-$t" --baseline-dir "$work/b-old" --format json --replay "${runs[@]}" >"$work/check-gate.json" 2>/dev/null || true
        same_c=DIFFERS; cmp -s "$work/check-gate.json" "$work/check-old.json" && same_c=identical
        echo "|   ${h} h, $t thr: baseline $same_b, check JSON $same_c to old's | | | | | |"
      fi
    done
    rm -f "${runs[@]}"
  done
  # --matrix-nodes N: `report --format json` of N nodes x 1 h (the JSON
  # timeline's document bound), and the same nodes' multi-node capture.
  if (( ${matrix_nodes:-0} > 0 )); then
    nf=()
    for n in $(seq 0 $((matrix_nodes - 1))); do
      "$mk" --synthetic healthy --gpus 8 --samples 36000 --seed $((100 + n)) -o "$work/node$n.jsonl" 2>/dev/null
      nf+=("$work/node$n.jsonl")
    done
    echo "|   $matrix_nodes nodes x 1 h: $(( $(stat -c %s "${nf[0]}") / 1000000 )) MB each | | | | | |"
    for t in $threads; do
      for b in "${bins[@]}"; do
        bin=$gate; [[ $b == old ]] && bin=$old
        mrow "$matrix_nodes nodes, $t thr, $b, capture --multi-node" GATE_THREADS="$t" -- "$bin" capture --baseline "n$t" --baseline-dir "$work/b-$b" --commit bench --multi-node --replay "${nf[@]}"
        mrow "$matrix_nodes nodes, $t thr, $b, report (JSON)" GATE_THREADS="$t" -- "$bin" report --format json "${nf[@]}"
      done
      if [[ -n $old ]]; then
        same_b=DIFFERS; diff <(grep -v '^created' "$work/b-gate/n$t.toml") <(grep -v '^created' "$work/b-old/n$t.toml") >/dev/null && same_b=identical
        echo "|   $matrix_nodes nodes, $t thr: baseline $same_b to old's | | | | | |"
      fi
    done
    rm -f "${nf[@]}"
  fi
  exit 0
fi

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
