#!/usr/bin/env bash
# Record a hold-out family on one GPU, each run twice: with GPM (as every
# fixture so far) and with `gate record --no-gpm` (what an A100, L4 or T4
# records): jax (fixtures/workloads/jax_train.py), gnn (gnn.py), timm
# (pytest-benchmark timing a timm ViT: test_timm_bench.py, its JSON files
# kept beside the traces) or lightning (lightning_fit.py, loader workers). Four
# healthy runs (baseline and false-alarm check) and one run of each
# pathology; the causes a right diagnosis names first are written in the
# workload before the recording. gnn's host-busy mode runs beside CPU hogs
# started here, outside gate's target tree (two per core).
# Round 5 (issue 39.5, issue 38): multibench (pytest-benchmark timing four
# GPU operations in one process, one of which regresses: test_multi_bench.py,
# verbose so each test's progress lines are in gate's timestamped capture),
# rawkernel (a CuPy RawKernel: coalesced, strided, atomic: rawkernel.py),
# ckpt (a transformer trained with and without gradient checkpointing:
# ckpt_train.py) and neighbour (ckpt_train.py's healthy loop clean, then
# beside fixtures/workloads/gpu_burner.py started here OUTSIDE gate's target
# tree at a light and a heavy load, then with the burner started by the
# workload INSIDE the tree; GPM only).
# Every run is under `timeout -k`, the whole under a time budget (runs past
# it are skipped and said so in status.tsv); traces and logs are packed into
# $OUT/holdout-FAMILY.tgz after every run, so a cut session keeps what it had.
#
# Usage (repository root, after `cargo build --release`; carry target/release/gate):
#   bash scripts/record-holdout-twice.sh jax            # everything (fits in 8 minutes)
#   bash scripts/record-holdout-twice.sh gnn --dry-run  # print every command, run nothing
#   bash scripts/record-holdout-twice.sh gnn smoke      # gnn.py --tiny on the CPU, no gate
#   bash scripts/record-holdout-twice.sh timm smoke     # one tiny pytest-benchmark run per mode
# Environment: OUT (default ./record-out), GATE (default target/release/gate),
# PYTHON (python3), SECONDS_PER_RUN (measured loop, default 10), BUDGET_S
# (default 420: no run starts after it, so the last one ends by 465 s),
# RUN_TIMEOUT_S (default 45), ONLY (run names to record, e.g. "d2h-copy
# healthy-4": the rest of a family a time budget cut), GPM_MODES ("yes no",
# the default; "yes" records with GPM only).
set -u -o pipefail

GATE="${GATE:-target/release/gate}"
PYTHON="${PYTHON:-python3}"
SECS="${SECONDS_PER_RUN:-10}"
BUDGET_S="${BUDGET_S:-420}"
RUN_TIMEOUT_S="${RUN_TIMEOUT_S:-45}"
OUT="${OUT:-$PWD/record-out}"
# (name mode seed), in recording order: three healthy runs first (a
# baseline even if the budget cuts the end), one last, so that a drift over
# the session shows in the healthy runs.
case "${1:-}" in
    jax)
        SCRIPT=fixtures/workloads/jax_train.py
        PATHOLOGIES="recompile remat hostsync fp32 small-batch"
        VERSIONS='import jax, jaxlib, optax; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "optax", optax.__version__, jax.devices())' ;;
    gnn)
        SCRIPT=fixtures/workloads/gnn.py
        PATHOLOGIES="cpu-sample sync wide fp32 host-busy"
        VERSIONS='import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' ;;
    timm)
        SCRIPT=fixtures/workloads/test_timm_bench.py
        PATHOLOGIES="fp32 cpu-preprocess unfused-attn d2h-copy"
        VERSIONS='import torch, timm, pytest_benchmark; print("torch", torch.__version__, "timm", timm.__version__, "pytest-benchmark", pytest_benchmark.__version__, torch.cuda.get_device_name(0))' ;;
    lightning)
        SCRIPT=fixtures/workloads/lightning_fit.py
        PATHOLOGIES="ema-cpu slow-loader d2h-metrics fp32"
        VERSIONS='import torch, lightning, torchvision; print("torch", torch.__version__, "lightning", lightning.__version__, "torchvision", torchvision.__version__, torch.cuda.get_device_name(0))' ;;
    multibench)
        SCRIPT=fixtures/workloads/test_multi_bench.py
        PATHOLOGIES="matmul-fp32 norm-unfused"
        VERSIONS='import torch, pytest_benchmark; print("torch", torch.__version__, "pytest-benchmark", pytest_benchmark.__version__, torch.cuda.get_device_name(0))' ;;
    rawkernel)
        SCRIPT=fixtures/workloads/rawkernel.py
        PATHOLOGIES="strided atomic"
        VERSIONS='import cupy; print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())' ;;
    ckpt)
        SCRIPT=fixtures/workloads/ckpt_train.py
        PATHOLOGIES="checkpoint sync h2d-copy"
        VERSIONS='import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' ;;
    neighbour)
        # Modes out-light/out-heavy: the healthy loop beside a burner started
        # here, outside the tree (BURNER_LIGHT / BURNER_HEAVY: duty and burst ms).
        SCRIPT=fixtures/workloads/ckpt_train.py
        PATHOLOGIES="out-light out-heavy contend-in"
        GPM_MODES="${GPM_MODES:-yes}"
        VERSIONS='import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' ;;
    *) echo "usage: record-holdout-twice.sh jax|gnn|timm|lightning|multibench|rawkernel|ckpt|neighbour [--dry-run | smoke]" >&2; exit 2 ;;
esac
FAMILY="$1"
shift
RUNS="healthy-1:healthy:1 healthy-2:healthy:2 healthy-3:healthy:3"
for p in $PATHOLOGIES; do RUNS="$RUNS $p:$p:1"; done
RUNS="$RUNS healthy-4:healthy:4"
BURNER_LIGHT="${BURNER_LIGHT:-0.03 5}"
BURNER_HEAVY="${BURNER_HEAVY:-0.5 40}"

DRY=0
MODE=record
case "${1:-}" in
    "") ;;
    --dry-run) DRY=1 ;;
    smoke) MODE=smoke ;;
    *) echo "usage: record-holdout-twice.sh FAMILY [--dry-run | smoke]" >&2; exit 2 ;;
esac

# workload_cmd MODE SEED SECONDS [JSON]: the benchmark's argv into WL (an
# array). timm is a pytest-benchmark run: the mode travels in the
# environment (pytest owns argv) and JSON is its --benchmark-json file.
workload_cmd() {
    local mode="$1" seed="$2" secs="$3" json="${4:-/dev/null}"
    case "$FAMILY" in
        timm) WL=(env "GATE_WL_MODE=$mode" "GATE_WL_SEED=$seed" "$PYTHON" -m pytest "$SCRIPT"
                  -s -q -p no:cacheprovider --benchmark-json "$json" --benchmark-max-time "$secs") ;;
        # Four benchmarks share SECS; -v prints each test's node id as it
        # starts and PASSED as it ends (the spans of issue 39.1).
        multibench) WL=(env "GATE_WL_MODE=$mode" "GATE_WL_SEED=$seed" "$PYTHON" -m pytest "$SCRIPT"
                  -v -s -p no:cacheprovider --benchmark-json "$json"
                  --benchmark-max-time "$(awk "BEGIN{print $secs/4}")" --benchmark-min-rounds 5) ;;
        neighbour) case "$mode" in out-*) mode=healthy ;; esac
                  WL=("$PYTHON" "$SCRIPT" --mode "$mode" --seed "$seed" --seconds "$secs") ;;
        lightning) WL=("$PYTHON" "$SCRIPT" --mode "$mode" --seed "$seed" --seconds "$secs" --warm-steps 15) ;;
        *) WL=("$PYTHON" "$SCRIPT" --mode "$mode" --seed "$seed" --seconds "$secs") ;;
    esac
}

# run CMD...: execute, or print in a dry run (quoted so it can be pasted).
run() {
    if [ "$DRY" = 1 ]; then
        printf '%q ' "$@"
        printf '\n'
        return 0
    fi
    "$@"
}

if [ "$MODE" = smoke ]; then
    for m in healthy $PATHOLOGIES; do
        case "$FAMILY" in
            timm|multibench) workload_cmd "$m" 0 0.8; run env GATE_WL_TINY=1 GATE_WL_DEVICE="${SMOKE_DEVICE:-cuda}" "${WL[@]}" ;;
            rawkernel) run "$PYTHON" "$SCRIPT" --tiny --mode "$m" --seconds 2 --warm-steps 2 ;;
            neighbour) case "$m" in out-*) continue ;; esac
                       run "$PYTHON" "$SCRIPT" --tiny --device "${SMOKE_DEVICE:-cpu}" --mode "$m" --seconds 2 --warm-steps 2 ;;
            *) run "$PYTHON" "$SCRIPT" --tiny --device cpu --mode "$m" --seconds 2 --warm-steps 2 ;;
        esac
        echo "smoke $m: exit $?" >&2
    done
    exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gate-$FAMILY-holdout.XXXXXX")"
mkdir -p "$WORK/traces/gpm" "$WORK/traces/nogpm-recorded" "$WORK/logs" "$WORK/harness" "$OUT"
pack() {
    [ "$DRY" = 1 ] && return 0
    tar czf "$OUT/holdout-$FAMILY.tgz.tmp" -C "$WORK" traces logs harness \
        && mv "$OUT/holdout-$FAMILY.tgz.tmp" "$OUT/holdout-$FAMILY.tgz"
}

if [ "$DRY" = 0 ]; then
    GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -n1)"
    DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -n1)"
    {
        date -u +%FT%TZ
        nvidia-smi 2>&1
        "$PYTHON" -c "$VERSIONS" 2>&1
        "$GATE" --version 2>&1
    } > "$WORK/logs/machine.txt"
fi
printf 'fixture\tgpm\texit_code\twall_s\n' > "$WORK/logs/status.tsv"
START=$SECONDS

# record NAME MODE SEED GPM(yes|no)
record() {
    local name="$1" mode="$2" seed="$3" gpm="$4"
    local id="$FAMILY-$name" dir=gpm flags=()
    if [ "$gpm" = no ]; then dir=nogpm-recorded; flags=(--no-gpm); fi
    if [ $((SECONDS - START)) -ge "$BUDGET_S" ]; then
        printf '%s\t%s\tskipped (time budget %s s)\t0\n' "$id" "$gpm" "$BUDGET_S" >> "$WORK/logs/status.tsv"
        echo "fixture $id (GPM $gpm): skipped, past the $BUDGET_S s budget" >&2
        return 0
    fi
    local json="$WORK/harness/$id-gpm-$gpm.json" extra=(--duration "$((SECS + 4))s")
    workload_cmd "$mode" "$seed" "$SECS" "$json"
    case "$FAMILY" in
        # pytest-benchmark ends by itself: its teardown stays in the trace,
        # and its JSON is the trace's metrics file.
        timm|multibench) extra=(--metrics-file "$json") ;;
        # Lightning's teardown and the final checkpoint stay in the trace.
        lightning) extra=(--duration "$((SECS + 30))s") ;;
    esac
    local note="hold-out: recorded with gate record${flags:+ ${flags[*]}} on ${GPU_NAME:-an NVIDIA GPU} (driver ${DRIVER:-?}), device machine nvidia-h200, $(date -u +%F); workload ${WL[*]}"
    local t0=$SECONDS rc
    # pytest -v -s prints the test's node id before the marker on its line.
    local warm='^gate: warm'
    [ "$FAMILY" = multibench ] && warm='gate: warm$'
    local cmd=(timeout -k 5 "$RUN_TIMEOUT_S" "$GATE" record "${flags[@]}"
        -o "$WORK/traces/$dir/$id.jsonl" --warmup-until "$warm" --warmup-timeout 35s
        "${extra[@]}" --interval 100ms
        --tag "workload=$FAMILY" --tag "mode=$mode" --tag "fixture=$id" --tag "gpm=$gpm"
        --note "$note" -- "${WL[@]}")
    if [ "$DRY" = 1 ]; then
        run "${cmd[@]}"
        rc=0
    else
        "${cmd[@]}" > "$WORK/logs/$id-gpm-$gpm.stdout" 2> "$WORK/logs/$id-gpm-$gpm.stderr"
        rc=$?
    fi
    printf '%s\t%s\t%s\t%s\n' "$id" "$gpm" "$rc" "$((SECONDS - t0))" >> "$WORK/logs/status.tsv"
    echo "fixture $id (GPM $gpm): exit $rc after $((SECONDS - t0)) s" >&2
    pack
}

# host-busy: CPU hogs outside gate's target tree, two per core, only
# around that mode's runs.
HOGS=()
start_hogs() {
    [ "$DRY" = 1 ] && return 0
    local n=$(( 2 * $(nproc) ))
    for _ in $(seq 1 "$n"); do
        "$PYTHON" -c 'while True: pass' & HOGS+=($!)
    done
    echo "started $n CPU hogs outside the target tree" >&2
}
stop_hogs() {
    [ "${#HOGS[@]}" -gt 0 ] && kill "${HOGS[@]}" 2>/dev/null && wait "${HOGS[@]}" 2>/dev/null
    HOGS=()
}
# out-light / out-heavy (neighbour): one gpu_burner.py started here, outside
# gate's target tree, around that run only; it is running on the GPU (its
# first burst done) before gate starts.
BURNER=""
start_burner() {
    [ "$DRY" = 1 ] && { echo "# burner outside the tree: duty/burst $1" >&2; return 0; }
    local duty burst line
    read -r duty burst <<< "$1"
    coproc BURN { exec "$PYTHON" fixtures/workloads/gpu_burner.py --duty "$duty" --burst-ms "$burst" --seconds 600 2>> "$WORK/logs/burner.stderr"; }
    BURNER=$BURN_PID
    read -r -t 60 line <&"${BURN[0]}"
    echo "burner pid $BURNER (duty $duty, burst $burst ms) outside the target tree: $line" | tee -a "$WORK/logs/burner.stderr" >&2
}
stop_burner() {
    [ -n "$BURNER" ] && kill "$BURNER" 2>/dev/null && wait "$BURNER" 2>/dev/null
    BURNER=""
}
trap 'stop_hogs; stop_burner' EXIT

for r in $RUNS; do
    IFS=: read -r name mode seed <<< "$r"
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
    [ "$mode" = host-busy ] && start_hogs
    [ "$mode" = out-light ] && start_burner "$BURNER_LIGHT"
    [ "$mode" = out-heavy ] && start_burner "$BURNER_HEAVY"
    for g in ${GPM_MODES:-yes no}; do record "$name" "$mode" "$seed" "$g"; done
    [ "$mode" = host-busy ] && stop_hogs
    stop_burner
done
pack
if [ "$DRY" = 1 ]; then
    rm -rf "$WORK"
else
    cat "$WORK/logs/status.tsv" >&2
    echo "written: $OUT/holdout-$FAMILY.tgz ($((SECONDS - START)) s)" >&2
fi
