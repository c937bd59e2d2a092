#!/usr/bin/env bash
# A refactor's live check on a real GPU (what replayed fixtures cannot show):
# `gate doctor` and the NVML cost probe run; a hold-out family's runs are
# recorded live (fixtures/workloads/vit_infer.py); a baseline is captured and
# every run checked by replay with the NEW and the OLD binary, their stdout,
# JSON reports and exit codes diffed; then one live `gate check` per side
# (healthy, small batch) through the sampler.
#
# Usage (repository root; carry target/release/gate, target/release/gate-old,
# target/release/examples/nvml-probe):
#   OUT=$OUT bash scripts/device-smoke.sh
set -u -o pipefail
NEW="$(realpath "${NEW:-target/release/gate}")"
OLD="$(realpath "${OLD:-target/release/gate-old}")"
PROBE="$(realpath "${PROBE:-target/release/examples/nvml-probe}")"
PYTHON="${PYTHON:-python3}"
SECS="${SECONDS_PER_RUN:-8}"
OUT="${OUT:-$PWD/smoke-out}"
W="$(mktemp -d "${TMPDIR:-/tmp}/gate-smoke.XXXXXX")"
mkdir -p "$OUT" "$W/traces" "$W/new" "$W/old" "$W/live"
pack() { tar czf "$OUT/smoke.tgz" -C "$W" . ; }
trap pack EXIT
{ date -u +%FT%TZ; nvidia-smi -L; "$NEW" --version; "$OLD" --version; } > "$W/machine.txt" 2>&1

for b in new old; do
    bin=$NEW; [ $b = old ] && bin=$OLD
    timeout -k 5 60 "$bin" doctor > "$W/$b/doctor.txt" 2>&1; echo "doctor exit $?" >> "$W/$b/doctor.txt"
done
timeout -k 5 120 "$PROBE" costs --rounds 5 > "$W/probe-costs.txt" 2>&1; echo "probe exit $?" >> "$W/probe-costs.txt"

record() { # NAME MODE SEED
    timeout -k 10 120 "$NEW" record -o "$W/traces/vit-$1.jsonl" --warmup-until '^gate: warm' \
        --duration 30s --interval 100ms --tag workload=vit --tag "mode=$2" \
        --note "recorded live by scripts/device-smoke.sh on nvidia-h200, $(date -u +%F)" -- \
        "$PYTHON" fixtures/workloads/vit_infer.py --mode "$2" --seed "$3" --seconds "$SECS" \
        > "$W/traces/vit-$1.stdout" 2> "$W/traces/vit-$1.stderr"
    echo "record $1: exit $?" >> "$W/status.txt"
}
record healthy-1 healthy 1; record healthy-2 healthy 2; record healthy-3 healthy 3
record healthy-4 healthy 4; record readback readback 1; record small-batch small-batch 1
record fp32 fp32 1

for b in new old; do
    bin=$NEW; [ $b = old ] && bin=$OLD
    ( cd "$W/$b" && "$bin" capture --baseline vit --replay ../traces/vit-healthy-{1,2,3}.jsonl \
        > capture.txt 2>&1; echo "capture exit $?" >> capture.txt )
    for t in healthy-4 readback small-batch fp32; do
        ( cd "$W/$b" && "$bin" check --baseline vit --json "$t.json" --replay "../traces/vit-$t.jsonl" \
            > "$t.txt" 2>&1; echo "exit $?" >> "$t.txt" )
    done
done
"$PYTHON" - "$W" > "$W/compare.txt" 2>&1 <<'PY'
import json, sys, os, re
w = sys.argv[1]
def norm(o):
    if isinstance(o, dict):
        return {k: norm(v) for k, v in o.items() if k != "created"}
    if isinstance(o, list):
        return [norm(v) for v in o]
    return o
for n in sorted(os.listdir(f"{w}/new")):
    a, b = f"{w}/new/{n}", f"{w}/old/{n}"
    if n.endswith(".json"):
        same = norm(json.load(open(a))) == norm(json.load(open(b)))
    elif os.path.isdir(a) or n == "doctor.txt":  # doctor: live readings
        continue
    else:  # the baseline's capture time (one second apart) masked
        mask = lambda s: re.sub(r"captured \S+Z", "captured TIME", s)
        same = mask(open(a).read()) == mask(open(b).read())
    print(("same   " if same else "DIFFER ") + n)
for n in sorted(os.listdir(f"{w}/new/baselines")):
    a = re.sub(r"(?m)^created.*$", "", open(f"{w}/new/baselines/{n}").read())
    b = re.sub(r"(?m)^created.*$", "", open(f"{w}/old/baselines/{n}").read())
    print(("same   " if a == b else "DIFFER ") + "baselines/" + n)
PY
for t in healthy:5 small-batch:2; do
    m="${t%%:*}"
    timeout -k 10 150 "$NEW" check --baseline vit --baseline-dir "$W/new/baselines" \
        --json "$W/live/live-$m.json" --warmup-until '^gate: warm' --duration 30s --interval 100ms -- \
        "$PYTHON" fixtures/workloads/vit_infer.py --mode "$m" --seed "${t##*:}" --seconds "$SECS" \
        > "$W/live/live-$m.txt" 2>&1
    echo "exit $?" >> "$W/live/live-$m.txt"
done
cat "$W/status.txt" "$W/compare.txt"; tail -n 3 "$W"/live/*.txt
