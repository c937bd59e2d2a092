#!/usr/bin/env bash
# The H200 runs behind docs/gating.md's "gate ab on the H200" table
# (issue 38.3), run from the repository root on the GPU machine:
#   OUT=DIR scripts/device-ab.sh ab|dist     (GATE=binary, W=workloads dir)
# Every benchmark under `timeout -k`; everything lands in $OUT/PART.tar.gz.
# Never changes the GPU's clocks, power or modes. Part is $1:
#  ab   : A/B batch 128 vs 96 (5 rounds) and A/A batch 128 vs 128 (5 rounds)
#  dist : A/A 4 rounds with a neighbour (gpu_burner.py, outside gate's tree)
#         for the first ~35 s: the disturbed round is dropped and redone.
set -uo pipefail
part="$1"; gate="$(realpath "${GATE:-target/release/gate}")"
W="$(realpath "${W:-fixtures/workloads}")"
out="$OUT/$part"; mkdir -p "$out"; cd "$out"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; "$gate" --version;
  python3 -c "import torch,torchvision;print('torch',torch.__version__,'tv',torchvision.__version__)"; } > env.txt 2>&1
bench="python3 $W/cnn.py --mode healthy --seconds 6"
ab() { # name rounds a_batch b_batch
  local n=$1 r=$2 a=$3 b=$4; mkdir -p "$n"
  local t0=$(date +%s)
  timeout -k 10 280 "$gate" ab --baseline "$n" --rounds "$r" --no-history \
    --warmup-until '^gate: warm' --trace-dir "$n/traces" \
    --json "$n/ab.json" --junit "$n/ab.xml" --markdown "$n/ab.md" --html "$n/ab.html" \
    --a "timeout -k 5 60 $bench --batch $a" --b "timeout -k 5 60 $bench --batch $b" \
    > "$n/stdout.txt" 2> "$n/stderr.txt"
  echo "$n exit $? wall $(( $(date +%s) - t0 )) s" >> env.txt
}
if [ "$part" = ab ]; then
  ab ab-128-vs-96 5 128 96
  ab aa-128-vs-128 5 128 128
else
  date -u +%FT%TZ >> env.txt
  timeout -k 5 40 python3 $W/gpu_burner.py --duty 0.5 --burst-ms 40 --seconds 35 > burner.out 2> burner.err &
  sleep 8
  ab aa-disturbed 4 128 128
  wait
fi
cd "$OUT" && tar -czf "$part.tar.gz" "$part" && rm -rf "$part"
