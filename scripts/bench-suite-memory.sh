#!/usr/bin/env bash
# Peak memory of one `gate check --suite` of N replayed workloads (issue
# 41.10, issue 44.2), OLD and NEW side by side: a baseline captured from
# fixtures/traces/healthy-1/2, copied under N names, N [[suite.workload]]s
# each replaying healthy-3, every report written (--json --html --junit
# --markdown). Rounds alternate the order; each prints peak RSS and wall
# (/usr/bin/time) and the md5 of all outputs and stdout, which must agree.
#
#   scripts/bench-suite-memory.sh OLD NEW [N=1000] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(realpath "$1"); new=$(realpath "$2"); n=${3:-1000}; rounds=${4:-3}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT; cd "$d"; mkdir baselines
"$new" capture --baseline w --replay "$root/fixtures/traces/healthy-1.jsonl" \
    "$root/fixtures/traces/healthy-2.jsonl" >/dev/null 2>&1
: > gate.toml; args=()
for i in $(seq 0 $((n - 1))); do
    sed "s/^name = \"w\"/name = \"w$i\"/" baselines/w.toml > "baselines/w$i.toml"
    printf '[[suite.workload]]\nname = "w%d"\nbaseline = "w%d"\ncommand = ["true"]\n\n' "$i" "$i" >> gate.toml
    args+=(--suite-replay "w$i=$root/fixtures/traces/healthy-3.jsonl")
done
one() {
    /usr/bin/time -f "%M %e" "$1" check --suite "${args[@]}" --json s.json \
        --html s.html --junit s.xml --markdown s.md > out.txt 2> err.txt || true
    echo "$2 $(tail -n 1 err.txt) $(cat s.json s.html s.xml s.md out.txt | md5sum | cut -c1-12)"
}
echo "which peak_rss_kb wall_s outputs_md5 ($n workloads)"
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then one "$old" OLD; one "$new" NEW; else one "$new" NEW; one "$old" OLD; fi
done
