#!/usr/bin/env bash
# Record a hold-out family (fixtures/workloads/bert.py, vit_infer.py, decode.py
# or recsys.py) with
# `gate record` on one GPU: five healthy runs (baseline and false-alarm
# check) and one run of each pathology. Nothing in gate was tuned on these
# before their verdicts were written down (fixtures/README.md, docs/gating.md).
#
# Usage (repository root, after `cargo build --release`; carry target/release/gate):
#   bash scripts/record-holdout.sh bert         # everything
#   bash scripts/record-holdout.sh vit smoke    # vit_infer.py --tiny on the GPU, then stop
# Environment: OUT (where holdout.tgz goes; default ./record-out), GATE,
# PYTHON, SECONDS_PER_RUN (measured loop, default 15).
set -u -o pipefail

case "${1:-}" in
    bert) SCRIPT=bert.py; PATHOLOGIES="gradlog fp32 tokenize small-batch eager-attn" ;;
    vit) SCRIPT=vit_infer.py; PATHOLOGIES="readback preprocess fp32 small-batch" ;;
    decode) SCRIPT=decode.py; PATHOLOGIES="stream fp32 batch4" ;;
    recsys) SCRIPT=recsys.py; PATHOLOGIES="unpinned host-input sync fp32" ;;
    *) echo "usage: record-holdout.sh bert|vit|decode|recsys [smoke]" >&2; exit 2 ;;
esac
FAMILY="$1"
shift

GATE="${GATE:-target/release/gate}"
PYTHON="${PYTHON:-python3}"
SECS="${SECONDS_PER_RUN:-15}"
OUT="${OUT:-$PWD/record-out}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gate-holdout.XXXXXX")"
mkdir -p "$WORK/traces" "$WORK/logs"
exec 2> >(tee -a "$WORK/logs/record.log" >&2)

pack() {
    tar czf "$OUT/holdout-$FAMILY.tgz.tmp" -C "$WORK" traces logs && mv "$OUT/holdout-$FAMILY.tgz.tmp" "$OUT/holdout-$FAMILY.tgz"
}

GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -n1)"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -n1)"
{
    date -u +%FT%TZ
    nvidia-smi 2>&1
    "$PYTHON" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.version.cuda)' 2>&1
    "$GATE" --version 2>&1
} > "$WORK/logs/machine.txt"
printf 'fixture\texit_code\twall_s\n' > "$WORK/logs/status.tsv"

# record NAME MODE SEED
record() {
    local name="$1" mode="$2" seed="$3"
    local id="$FAMILY-$name"
    local note="hold-out: recorded with gate record on ${GPU_NAME:-an NVIDIA GPU} (driver ${DRIVER:-?}), device machine nvidia-h200, $(date -u +%F); workload fixtures/workloads/$SCRIPT --mode $mode --seed $seed --seconds $SECS"
    local t0=$SECONDS rc
    timeout -k 10 150 "$GATE" record \
        -o "$WORK/traces/$id.jsonl" --warmup-until '^gate: warm' --duration 30s --interval 100ms \
        --tag "workload=$FAMILY" --tag "mode=$mode" --tag "fixture=$id" --note "$note" -- \
        "$PYTHON" fixtures/workloads/$SCRIPT --mode "$mode" --seed "$seed" --seconds "$SECS" \
        > "$WORK/logs/$id.stdout" 2> "$WORK/logs/$id.stderr"
    rc=$?
    printf '%s\t%s\t%s\n' "$id" "$rc" "$((SECONDS - t0))" >> "$WORK/logs/status.tsv"
    echo "fixture $id: exit $rc after $((SECONDS - t0)) s" >&2
    pack
}

BURNER=""
stop_burner() { [ -n "$BURNER" ] && kill "$BURNER" 2>/dev/null && wait "$BURNER" 2>/dev/null; BURNER=""; }
trap stop_burner EXIT

if [ "${1:-}" = smoke ]; then
    for m in healthy $PATHOLOGIES; do
        "$PYTHON" fixtures/workloads/$SCRIPT --tiny --mode $m --seconds 3 --warm-steps 3 \
            > "$WORK/logs/smoke-$m.stdout" 2> "$WORK/logs/smoke-$m.stderr"
        echo "smoke $m: exit $?" >&2
    done
    pack
    exit 0
fi

record healthy-1 healthy 1
record healthy-2 healthy 2
record healthy-3 healthy 3
for mode in $PATHOLOGIES; do
    record "$mode" "$mode" 1
done
"$PYTHON" fixtures/workloads/gpu_burner.py --duty 0.35 --burst-ms 15 --seconds 300 \
    > "$WORK/logs/burner.log" 2>&1 &
BURNER=$!
for _ in $(seq 1 120); do grep -q 'burner: running' "$WORK/logs/burner.log" && break; sleep 0.5; done
sleep 2
record contend-out contend-out 1
stop_burner
record healthy-4 healthy 4
record healthy-5 healthy 5
pack
cat "$WORK/logs/status.tsv" >&2
