#!/usr/bin/env bash
# Record the round-2 judgement fixtures (moderate pathologies) with `gate
# record` itself, on the device machine with two H200s (nvidia-h200-x2).
#
# Usage (repository root, after `cargo build --release`; carry target/release/gate):
#   bash scripts/record-judgement-fixtures.sh single   # cnn on GPU 0 and gpt on GPU 1, in parallel
#   bash scripts/record-judgement-fixtures.sh multi    # ddp on both GPUs
#   bash scripts/record-judgement-fixtures.sh single cnn:sync gpt:memory   # a subset
# Environment: OUT (where fixtures-<phase>.tgz goes; default ./record-out),
# GATE (default target/release/gate), PYTHON (default python3),
# SECONDS_PER_RUN (measured loop, default 20), WORKLOAD_ARGS (appended to every
# workload's argv, e.g. '--device cpu --tiny' for a smoke test of this script).
#
# Each fixture: gate record --warmup-until '^gate: warm' --duration 30s
# --interval 100ms (GPM at its 500 ms default) -- python3 fixtures/workloads/<family>.py
# --mode <mode> --seconds 20. The workload ends by itself 20 s after its warm
# marker, so gate never has to stop it. A failing fixture is logged with its
# exit code and the others still run. After every fixture the tarball in $OUT
# is rewritten, so a timed-out call still brings back what was recorded.
set -u -o pipefail

PHASE="${1:-}"
shift || true
GATE="${GATE:-target/release/gate}"
PYTHON="${PYTHON:-python3}"
SECS="${SECONDS_PER_RUN:-20}"
OUT="${OUT:-$PWD/record-out}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gate-r2.XXXXXX")"
mkdir -p "$WORK/traces" "$WORK/logs"
exec 2> >(tee -a "$WORK/logs/record-$PHASE.log" >&2)

case "$PHASE" in
    single|multi) ;;
    *) echo "usage: record-judgement-fixtures.sh single|multi [family:fixture ...]" >&2; exit 2 ;;
esac
if [ ! -x "$GATE" ]; then
    echo "record-judgement-fixtures.sh: $GATE not found; run 'cargo build --release' and carry it" >&2
    exit 2
fi

pack() {
    tar czf "$OUT/fixtures-$PHASE.tgz.tmp" -C "$WORK" traces logs && mv "$OUT/fixtures-$PHASE.tgz.tmp" "$OUT/fixtures-$PHASE.tgz"
}

GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -n1)"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -n1)"
{
    date -u +%FT%TZ
    nvidia-smi 2>&1
    nvidia-smi topo -m 2>&1
    "$PYTHON" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1
    "$GATE" --version 2>&1
} > "$WORK/logs/machine-$PHASE.txt"
"$GATE" doctor > "$WORK/logs/doctor-$PHASE.txt" 2>&1
printf 'fixture\tgpu\texit_code\twall_s\n' > "$WORK/logs/status-$PHASE.tsv"

# record FAMILY NAME MODE SEED GPU(S) [extra workload args...]
record() {
    local fam="$1" name="$2" mode="$3" seed="$4" gpus="$5"
    shift 5
    local id="$fam-$name"
    local note="recorded with gate record on ${GPU_NAME:-an NVIDIA GPU} (driver ${DRIVER:-?}), device machine nvidia-h200-x2, CUDA_VISIBLE_DEVICES=$gpus, $(date -u +%F); workload fixtures/workloads/$fam.py --mode $mode --seed $seed --seconds $SECS $*"
    local t0=$SECONDS rc
    CUDA_VISIBLE_DEVICES="$gpus" timeout -k 10 170 "$GATE" record \
        -o "$WORK/traces/$id.jsonl" --warmup-until '^gate: warm' --duration 30s --interval 100ms \
        --tag "workload=$fam" --tag "mode=$mode" --tag "fixture=$id" --note "$note" -- \
        "$PYTHON" fixtures/workloads/$fam.py --mode "$mode" --seed "$seed" --seconds "$SECS" "$@" ${WORKLOAD_ARGS:-} \
        > "$WORK/logs/$id.stdout" 2> "$WORK/logs/$id.stderr"
    rc=$?
    printf '%s\t%s\t%s\t%s\n' "$id" "$gpus" "$rc" "$((SECONDS - t0))" >> "$WORK/logs/status-$PHASE.tsv"
    echo "fixture $id (GPU $gpus): exit $rc after $((SECONDS - t0)) s" >&2
}

# The burner outside gate's tree, for contend-out; stopped after the recording.
BURNER_PIDS=()
start_outside_burner() {
    local gpu="$1" log="$WORK/logs/burner-gpu$1.log"
    CUDA_VISIBLE_DEVICES="$gpu" "$PYTHON" fixtures/workloads/gpu_burner.py --duty 0.35 --burst-ms 15 \
        --seconds 300 > "$log" 2>&1 &
    BURNER_PIDS+=($!)
    for _ in $(seq 1 120); do grep -q 'burner: running' "$log" && return 0; sleep 0.5; done
    echo "burner on GPU $gpu did not start" >&2
}
stop_burners() {
    local p
    for p in "${BURNER_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    BURNER_PIDS=()
}
trap stop_burners EXIT

wanted() {  # wanted FAMILY NAME: true when no subset was given, or it names this one
    [ "${#SUBSET[@]}" -eq 0 ] && return 0
    local x
    for x in "${SUBSET[@]}"; do [ "$x" = "$1:$2" ] && return 0; done
    return 1
}
SUBSET=("$@")

if [ "$PHASE" = single ]; then
    # name mode seed: three healthy runs (run-to-run noise), then one of each
    # moderate pathology. cnn runs on GPU 0 while gpt runs the same mode on GPU 1.
    PLAN=("healthy-1 healthy 1" "healthy-2 healthy 2" "healthy-3 healthy 3"
          "sync sync 1" "launch launch 1" "input input 1" "contend-in contend-in 1"
          "contend-out contend-out 1" "memory memory 1" "tensor tensor 1")
    for row in "${PLAN[@]}"; do
        read -r name mode seed <<< "$row"
        if [ "$mode" = contend-out ]; then
            wanted cnn "$name" && start_outside_burner 0
            wanted gpt "$name" && start_outside_burner 1
            sleep 3
        fi
        # Wait on these two only: a bare `wait` would also wait for the tee above.
        pids=()
        if wanted cnn "$name"; then record cnn "$name" "$mode" "$seed" 0 & pids+=($!); fi
        if wanted gpt "$name"; then record gpt "$name" "$mode" "$seed" 1 & pids+=($!); fi
        [ "${#pids[@]}" -gt 0 ] && wait "${pids[@]}"
        [ "$mode" = contend-out ] && stop_burners
        pack
    done
else
    PLAN=("healthy-1 healthy 1" "healthy-2 healthy 2" "healthy-3 healthy 3"
          "comm comm 1" "straggler-gpu straggler-gpu 1" "straggler-host straggler-host 1")
    for row in "${PLAN[@]}"; do
        read -r name mode seed <<< "$row"
        wanted ddp "$name" && record ddp "$name" "$mode" "$seed" 0,1
        pack
    done
fi
pack
cat "$WORK/logs/status-$PHASE.tsv" >&2
