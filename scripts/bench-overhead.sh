#!/usr/bin/env bash
# Measure gate's own cost on the device machine (one H200), side by side:
#  (a) `gate record --pid` CPU seconds per wall second and peak RSS at
#      --interval 100ms and 10ms, attached to a running GPU training loop;
#  (b) `nvidia-smi dmon` with GPM metrics over the same window, measured the same way;
#  (c) the training loop's throughput bare vs under `gate record -- ...` at 100 ms,
#      PAIRS interleaved pairs in alternating order (bare,gated / gated,bare / ...).
# CPU time and peak RSS come from os.wait4 rusage of the measured process
# (scripts/bench_summary.py measure), exact and independent of /usr/bin/time.
#
# Usage (repository root, after `cargo build --release`): bash scripts/bench-overhead.sh
# Environment: OUT (results dir; bench.tar.gz, bench.txt, bench.json land there),
#   ATTACH_SECONDS (default 30), RUN_SECONDS (default 20), PAIRS (default 5),
#   GATE (default target/release/gate), PYTHON (default python3).
# Time with the defaults: about 75 s for (a)+(b) and 10 x 24 s for (c): ~5.5 minutes.
set -u -o pipefail

ATTACH_SECONDS="${ATTACH_SECONDS:-30}"
RUN_SECONDS="${RUN_SECONDS:-20}"
PAIRS="${PAIRS:-5}"
GATE="${GATE:-target/release/gate}"
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-$PWD/bench-out}"
INTERVALS=(100ms 10ms)
mkdir -p "$OUT"
D="$(mktemp -d "${TMPDIR:-/tmp}/gate-bench.XXXXXX")"
exec 2> >(tee -a "$D/bench.log" >&2)
set -x

if [ ! -x "$GATE" ]; then
    echo "bench-overhead.sh: $GATE not found or not executable; run 'cargo build --release' first" >&2
    exit 2
fi
MEASURE=("$PYTHON" scripts/bench_summary.py measure)
TRAIN=("$PYTHON" fixtures/workloads/train.py --mode healthy)

GPU_INFO="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>&1 | head -n1)"
GPU_NAME="${GPU_INFO%%,*}"
DRIVER="$(echo "${GPU_INFO#*,}" | tr -d ' ')"

# ---- (a) + (b): attach to a running workload --------------------------------
WL_PID=""
cleanup() {
    if [ -n "$WL_PID" ] && kill -0 "$WL_PID" 2>/dev/null; then
        kill "$WL_PID" 2>/dev/null
        wait "$WL_PID" 2>/dev/null
    fi
}
trap cleanup EXIT

attach_loop_s=$(( ${#INTERVALS[@]} * (ATTACH_SECONDS + 10) + 20 ))
"${TRAIN[@]}" --seconds "$attach_loop_s" --seed 11 --result-file "$D/attach-workload-result.json" \
    > "$D/attach-workload.stdout" 2> "$D/attach-workload.stderr" &
WL_PID=$!
for _ in $(seq 1 120); do  # until the loop reports (import + CUDA setup take a few seconds)
    grep -q '^samples_per_s:' "$D/attach-workload.stdout" 2>/dev/null && break
    kill -0 "$WL_PID" 2>/dev/null || break
    sleep 0.5
done
sleep 2

for iv in "${INTERVALS[@]}"; do
    "${MEASURE[@]}" --json "$D/gate-$iv.json" --stdout "$D/gate-$iv.stdout" --stderr "$D/gate-$iv.stderr" \
        --timeout $((ATTACH_SECONDS + 60)) -- \
        env GATE_PROFILE=1 "$GATE" record --pid "$WL_PID" --duration "${ATTACH_SECONDS}s" --interval "$iv" --gpu 0 \
        --tag bench=attach-"$iv" -o "$D/attach-$iv.jsonl" &
    gate_measure=$!
    "${MEASURE[@]}" --json "$D/dmon-$iv.json" --stdout "$D/dmon-$iv.txt" --stderr "$D/dmon-$iv.stderr" \
        --timeout $((ATTACH_SECONDS + 30)) -- \
        nvidia-smi dmon -i 0 -s pucm --gpm-metrics 1,2,3,5,10,20,21 -d 1 -c "$ATTACH_SECONDS" &
    dmon_measure=$!
    wait "$gate_measure"; wait "$dmon_measure"
    tail -n 3 "$D/gate-$iv.stderr" "$D/dmon-$iv.stderr" >&2 || true
done
cleanup
WL_PID=""

# ---- (c): throughput bare vs gated, interleaved -------------------------------
run_bare() {
    "${MEASURE[@]}" --json "$D/pair-$1-bare-measure.json" --stdout "$D/pair-$1-bare.stdout" \
        --stderr "$D/pair-$1-bare.stderr" --timeout $((RUN_SECONDS + 90)) -- \
        "${TRAIN[@]}" --seconds "$RUN_SECONDS" --seed "$1" --result-file "$D/pair-$1-bare.json"
}
run_gated() {
    "${MEASURE[@]}" --json "$D/pair-$1-gated-measure.json" --stdout "$D/pair-$1-gated.stdout" \
        --stderr "$D/pair-$1-gated.stderr" --timeout $((RUN_SECONDS + 90)) -- \
        "$GATE" record -o "$D/pair-$1-gated.jsonl" --interval 100ms --warmup 3s --tag bench=throughput -- \
        "${TRAIN[@]}" --seconds "$RUN_SECONDS" --seed "$1" --result-file "$D/pair-$1-gated.json"
}
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) -eq 1 ]; then run_bare "$i"; run_gated "$i"; else run_gated "$i"; run_bare "$i"; fi
    cat "$D/pair-$i-bare.json" "$D/pair-$i-gated.json" >&2 || true
done

"$PYTHON" scripts/bench_summary.py summarize --dir "$D" --gpu "$GPU_NAME" --driver "$DRIVER" \
    --pairs "$PAIRS" --intervals "$(IFS=,; echo "${INTERVALS[*]}")" --run-seconds "$RUN_SECONDS"
cp "$D/bench.txt" "$D/bench.json" "$OUT/" 2>/dev/null
set +x
exec 2>&1  # close the tee so bench.log is complete before tar
sleep 0.5
tar -czf "$OUT/bench.tar.gz" -C "$D" .
ls -l "$OUT"
