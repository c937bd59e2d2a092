#!/usr/bin/env bash
# The H200 run behind docs/gating.md's `gate ab` table: two batch-size
# variants of fixtures/workloads/cnn.py (ResNet-50 training, batch 128 as A,
# 96 as B; gpt.py 16 against 12 where torchvision is missing), 5 rounds in
# ABBA order, each benchmark under `timeout -k`, and
# everything (environment, stdout, stderr, reports, traces) in one tarball.
# Never changes the GPU's clocks, power or modes.
#
#   scripts/device-ab.sh GATE_BINARY OUT_DIR
set -uo pipefail
gate="$(realpath "$1")"
out="$2"
dir="$out/ab-h200"
mkdir -p "$dir"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,persistence_mode --format=csv
  "$gate" --version
  python3 -c "import torch, torchvision; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'torchvision', torchvision.__version__)"
} > "$dir/env.txt" 2>&1
bench="python3 fixtures/workloads/cnn.py --mode healthy --seconds 8"
a_batch=128
b_batch=96
# Without torchvision: the GPT family (torch only), batch 16 against 12.
if ! python3 -c "import torchvision" 2>/dev/null; then
  bench="python3 fixtures/workloads/gpt.py --mode healthy --seconds 8"
  a_batch=16
  b_batch=12
fi
echo "bench: $bench; A --batch $a_batch, B --batch $b_batch" >> "$dir/env.txt"
timeout -k 10 320 "$gate" ab --baseline cnn-batch --rounds 5 --no-history \
  --warmup-until '^gate: warm' \
  --trace-dir "$dir/traces" \
  --json "$dir/ab.json" --junit "$dir/ab.xml" --markdown "$dir/ab.md" \
  --html "$dir/ab.html" --pr-comment "$dir/pr-comment.md" \
  --a "timeout -k 5 60 $bench --batch $a_batch" \
  --b "timeout -k 5 60 $bench --batch $b_batch" \
  > "$dir/stdout.txt" 2> "$dir/stderr.txt"
echo "gate ab exit: $?" >> "$dir/env.txt"
tar -czf "$out/ab-h200.tar.gz" -C "$out" ab-h200
rm -rf "$dir"
