#!/usr/bin/env bash
# Record gate's real GPU fixtures on the device machine (one H200).
#
# Usage (from the repository root, after `cargo build --release`):
#   bash scripts/record-fixtures.sh                      # all fixtures
#   bash scripts/record-fixtures.sh healthy-1 sync-stall # a subset (smoke test)
# Environment:
#   OUT              where fixtures.tar.gz, doctor.txt and status.tsv go (required
#                    on the device machine; defaults to ./record-out elsewhere)
#   SECONDS_PER_RUN  training-loop seconds per fixture (default 25)
#   WARMUP           gate --warmup (default 5s: covers python/torch/CUDA setup,
#                    about 3-4 s, plus the first loop second)
#   INTERVAL         gate --interval (default 100ms)
#   GATE             gate binary (default target/release/gate)
#   PYTHON           python interpreter (default python3)
#
# Each fixture is one `gate record ... -- python3 fixtures/workloads/train.py`;
# a failing fixture is logged with its exit code and the others still run.
# Total time with the defaults: about 10 x 30 s = 5 minutes.
set -u -o pipefail

ALL_FIXTURES=(healthy-1 healthy-2 healthy-3 launch-storm fp32-no-tf32 memory-bound
              pageable-h2d sync-stall host-bound contention)
SECONDS_PER_RUN="${SECONDS_PER_RUN:-22}"
WARMUP="${WARMUP:-14s}"
INTERVAL="${INTERVAL:-100ms}"
GATE="${GATE:-target/release/gate}"
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-$PWD/record-out}"
mkdir -p "$OUT"
OUT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/gate-fixtures.XXXXXX")"

# Everything on stderr (including set -x traces) also lands in record.log.
exec 2> >(tee -a "$OUT_DIR/record.log" >&2)
set -x

if [ "$#" -gt 0 ]; then
    FIXTURES=("$@")
else
    FIXTURES=("${ALL_FIXTURES[@]}")
fi
for f in "${FIXTURES[@]}"; do
    case " ${ALL_FIXTURES[*]} " in
        *" $f "*) ;;
        *) echo "record-fixtures.sh: unknown fixture '$f'; known: ${ALL_FIXTURES[*]}" >&2; exit 2 ;;
    esac
done

if [ ! -x "$GATE" ]; then
    echo "record-fixtures.sh: $GATE not found or not executable; run 'cargo build --release' first" >&2
    exit 2
fi

GPU_INFO="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>&1 | head -n1)"
GPU_NAME="${GPU_INFO%%,*}"
DRIVER="$(echo "${GPU_INFO#*,}" | tr -d ' ')"
nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1 || true

"$GATE" doctor 2>&1 | tee "$OUT_DIR/doctor.txt"
echo "gate doctor exit code: ${PIPESTATUS[0]}" | tee -a "$OUT_DIR/doctor.txt"
cp "$OUT_DIR/doctor.txt" "$OUT/doctor.txt"

printf 'fixture\tmode\tseed\texit_code\twall_s\ttrace_lines\n' > "$OUT_DIR/status.tsv"

mode_of() {
    case "$1" in
        healthy-*|contention) echo healthy ;;
        *) echo "$1" ;;
    esac
}
seed_of() {
    case "$1" in
        healthy-[0-9]*) echo "${1#healthy-}" ;;
        *) echo 1 ;;
    esac
}

COMP_PID=""
stop_competitor() {
    if [ -n "$COMP_PID" ] && kill -0 "$COMP_PID" 2>/dev/null; then
        kill "$COMP_PID" 2>/dev/null
        wait "$COMP_PID" 2>/dev/null
    fi
    COMP_PID=""
}
trap stop_competitor EXIT

for name in "${FIXTURES[@]}"; do
    mode="$(mode_of "$name")"
    seed="$(seed_of "$name")"
    trace="$OUT_DIR/$name.jsonl"
    workload=("$PYTHON" fixtures/workloads/train.py --mode "$mode" --seconds "$SECONDS_PER_RUN" --seed "$seed")
    cmd=("$GATE" record -o "$trace" --warmup "$WARMUP" --interval "$INTERVAL" --tag "workload=$mode" --tag "fixture=$name")
    extra=""
    if [ "$name" = contention ]; then
        comp_s=$((SECONDS_PER_RUN + 20))
        comp_cmd=("$PYTHON" fixtures/workloads/competitor.py --seconds "$comp_s")
        # Started by this shell, not by gate: it must be outside gate's target tree.
        "${comp_cmd[@]}" > "$OUT_DIR/competitor.log" 2>&1 &
        COMP_PID=$!
        # Wait until its matmuls really run (torch import takes a few seconds), then 3 s more.
        for _ in $(seq 1 60); do
            grep -q 'competitor: running' "$OUT_DIR/competitor.log" 2>/dev/null && break
            kill -0 "$COMP_PID" 2>/dev/null || break
            sleep 0.5
        done
        sleep 3
        extra="; competitor (separate process, not a child of gate, started before the target and running throughout): $(printf '%q ' "${comp_cmd[@]}")"
    fi
    date_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    shown="$(printf '%q ' "${cmd[@]}")--note '<this note>' -- $(printf '%q ' "${workload[@]}")"
    note="fixture $name: GPU $GPU_NAME, driver $DRIVER; $date_utc; command: ${shown% }${extra% }; recorded with gate record on the device machine (scripts/record-fixtures.sh)"
    t0=$(date +%s.%N)
    timeout -k 10 $((SECONDS_PER_RUN + 90)) "${cmd[@]}" --note "$note" -- "${workload[@]}" \
        > "$OUT_DIR/$name.stdout.log" 2> "$OUT_DIR/$name.stderr.log"
    rc=$?
    t1=$(date +%s.%N)
    [ "$name" = contention ] && stop_competitor
    lines=0
    [ -f "$trace" ] && lines=$(wc -l < "$trace")
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$seed" "$rc" "$wall" "$lines" >> "$OUT_DIR/status.tsv"
    echo "fixture $name: exit code $rc, ${wall}s, $lines trace lines" >&2
    tail -n 5 "$OUT_DIR/$name.stderr.log" >&2 || true
done

cat "$OUT_DIR/status.tsv"
cp "$OUT_DIR/status.tsv" "$OUT/status.tsv"
set +x
exec 2>&1  # close the tee so record.log is complete before tar
sleep 0.5
tar -czf "$OUT/fixtures.tar.gz" -C "$OUT_DIR" .
ls -l "$OUT"
echo "traces and logs: $OUT/fixtures.tar.gz (unpacked copy in $OUT_DIR)"
