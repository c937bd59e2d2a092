#!/bin/sh
# Rebuilds the real pytest-benchmark files of tests/data with the real
# harness (pip install pytest pytest-benchmark; 5.3.1 was used) running
# scripts/harness/pytest_suite:
#   pytest-benchmark-real.json       5 tests, every round kept (stats.data)
#   pytest-benchmark-sleep-{a,b}.json    test_sleep alone (200 us), twice
#   pytest-benchmark-sleep-slow.json     test_sleep with a 500 us sleep: a
#                                        real slowdown of the same test
#   pytest-benchmark-bulk.json.zst   222 tests (GATE_BENCH_COUNT=220), zstd -19
# PYTHON names the interpreter that has pytest-benchmark (default python3).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() {
  GATE_BENCH_COUNT=$1 "$py" -m pytest -q -p no:cacheprovider "$here/pytest_suite/test_bench_suite.py" \
    --benchmark-json="$2" --benchmark-max-time="$3" --benchmark-min-rounds=5 --benchmark-warmup=off ${4:+-k "$4"} >/dev/null
}
run 3 "$root/tests/data/pytest-benchmark-real.json" 0.002
run 3 "$root/tests/data/pytest-benchmark-sleep-a.json" 0.1 test_sleep
run 3 "$root/tests/data/pytest-benchmark-sleep-b.json" 0.1 test_sleep
GATE_BENCH_SLEEP_US=500 run 3 "$root/tests/data/pytest-benchmark-sleep-slow.json" 0.1 test_sleep
run 220 "$tmp/bulk.json" 0.0005
zstd -19 -q -f "$tmp/bulk.json" -o "$root/tests/data/pytest-benchmark-bulk.json.zst"
echo "wrote tests/data/pytest-benchmark-real*.json tests/data/pytest-benchmark-bulk.json.zst"
