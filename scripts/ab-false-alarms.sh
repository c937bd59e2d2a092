#!/usr/bin/env bash
# How often `gate ab` calls two IDENTICAL commands a regression: runs
# `gate ab --no-gpu` on the benchmark of tests/ab_cli.rs (a declared
# number of 1000 with noise of sd ~10, i.e. 1 %, as large as the default
# floor) for seeds 1..SEEDS and counts the verdicts. docs/gating.md quotes
# its output.
#
#   scripts/ab-false-alarms.sh GATE_BINARY SEEDS [gate ab flags...]
#   e.g. scripts/ab-false-alarms.sh target/debug/gate 200 --threshold 0%
set -euo pipefail
gate="$(realpath "$1")"
seeds="$2"
shift 2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/gate.toml" <<'TOML'
[user_metrics.rate]
regex = '^rate: ([0-9.]+)'
direction = "higher_is_better"
aggregate = "last"
TOML
# The same generator as tests/ab_cli.rs (BENCH).
cat > "$work/bench.sh" <<'SH'
c=$(cat count 2>/dev/null || echo 0); c=$((c + 1)); echo $c > count
awk -v base="$1" -v seed="$2" -v c="$c" 'BEGIN { srand(seed * 100003 + c); for (i = 0; i < 24; i++) rand(); n = 0; for (i = 0; i < 12; i++) n += rand(); printf "rate: %.1f\n", base + (n - 6) * 10 }'
SH
declare -A verdicts=()
for seed in $(seq 1 "$seeds"); do
  d="$work/s$seed"
  mkdir -p "$d"
  cp "$work/gate.toml" "$work/bench.sh" "$d/"
  set +e
  (cd "$d" && "$gate" ab --no-gpu --no-history --format json \
    --a "sh bench.sh 1000 $seed" --b "sh bench.sh 1000 $seed" "$@" > report.json 2> stderr.txt)
  set -e
  v="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$d/report.json" 2>/dev/null || echo error)"
  verdicts[$v]=$(( ${verdicts[$v]:-0} + 1 ))
  rm -rf "$d"
done
echo "seeds: $seeds; flags: ${*:-(none)}"
for v in "${!verdicts[@]}"; do echo "$v: ${verdicts[$v]}"; done | sort
