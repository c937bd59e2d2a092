#!/bin/sh
# Rebuilds tests/data/google-benchmark.json with the real Google Benchmark
# library (Debian bookworm: apt-get install -y libbenchmark-dev g++, library 1.7.1): three
# BENCHMARK()s, --benchmark_repetitions=3, so the JSON holds each
# repetition and the mean/median/stddev/cv aggregates the library writes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/tests/data/google-benchmark.json}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -std=c++17 "$here/gbench_tiny.cc" -o "$tmp/gbench_tiny" -lbenchmark -lpthread
"$tmp/gbench_tiny" --benchmark_repetitions=3 --benchmark_min_time=0.05 \
  --benchmark_format=json --benchmark_out_format=json --benchmark_out="$out" >/dev/null
echo "wrote $out"
