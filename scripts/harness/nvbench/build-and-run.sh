#!/bin/bash
# On the GPU machine (nvcc, a host C++ compiler, no network): builds the
# tiny nvbench benchmark gate_copy_bench.cu against the sources that
# pack-sources.sh put in target/nvbench-src, without CMake (nvbench's CMake
# downloads its dependencies), runs it three times with --json (twice as
# written, once GATE_NVBENCH_REPEAT=4: four times the work), and, when a
# gate binary is found, captures a baseline from the first JSON and checks
# the other two against it through `gate capture/check --metrics-file`.
# Everything (JSON files, logs, gate's reports) is packed into
# $OUT/nvbench-run.tar.gz; every step is bounded with timeout -k.
#
# Usage: OUT=/some/dir scripts/harness/nvbench/build-and-run.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
src="$root/target/nvbench-src"
OUT=${OUT:?set OUT to the folder that comes back}
work="$OUT/nvbench-run"
mkdir -p "$work/gen/nvbench/detail" "$work/gen/nvbench/internal"
log="$work/build.log"
exec > >(tee -a "$work/run.log") 2>&1
pack() { tar -czf "$OUT/nvbench-run.tar.gz" -C "$OUT" nvbench-run; echo "packed $OUT/nvbench-run.tar.gz"; }
trap pack EXIT
[ -d "$src/nvbench/nvbench" ] || { echo "no $src: run pack-sources.sh and carry target/nvbench-src"; exit 2; }
nvcc --version | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

# What nvbench's CMake would generate (nvbench/CMakeLists.txt,
# cmake/NVBenchWriteConfigHeader.cmake, cmake/FileToString.cmake,
# rapids_cmake_write_version_file / _git_revision_file): no NVML, no CUPTI.
sed -e 's|#cmakedefine NVBENCH_HAS_NVML|/* NVBENCH_HAS_NVML off */|' \
    -e 's|#cmakedefine NVBENCH_HAS_CUPTI|/* NVBENCH_HAS_CUPTI off */|' \
    "$src/nvbench/nvbench/config.cuh.in" > "$work/gen/nvbench/config.cuh"
cat > "$work/gen/nvbench/detail/version.cuh" <<'H'
#pragma once
#define NVBENCH_VERSION_MAJOR 0
#define NVBENCH_VERSION_MINOR 1
#define NVBENCH_VERSION_PATCH 0
H
sha=$(sed -n 's/^nvbench *[^ ]* *\([0-9a-f]*\).*/\1/p' "$src/PROVENANCE")
cat > "$work/gen/nvbench/detail/git_revision.cuh" <<H
#pragma once
#define NVBENCH_GIT_BRANCH "main"
#define NVBENCH_GIT_SHA1 "${sha:-unknown}"
#define NVBENCH_GIT_VERSION "gate-offline-build"
H
to_string() { # md file, output header, variable name
  { echo '#include <string>'; echo 'namespace {'; echo "const std::string $3 ="
    printf 'R"expected('; cat "$1"; echo ')expected";'; echo '}'; } > "$2"
}
to_string "$src/nvbench/docs/cli_help.md" "$work/gen/nvbench/internal/cli_help.cuh" cli_help_text
to_string "$src/nvbench/docs/cli_help_axis.md" "$work/gen/nvbench/internal/cli_help_axis.cuh" cli_help_axis_text

arch=${CUDA_ARCH:-native}
flags=(-std=c++17 -O2 "-arch=$arch" --extended-lambda --expt-relaxed-constexpr
       -DFMT_HEADER_ONLY -DNVBENCH_NO_IMPLICIT_SYSTEM_HEADER
       -I"$work/gen" -I"$src/nvbench" -I"$src/fmt/include" -I"$src/json/single_include")
mkdir -p "$work/obj"
objs=()
n=0
for f in $(cd "$src/nvbench" && ls nvbench/*.cu nvbench/*.cxx nvbench/detail/*.cu nvbench/detail/*.cxx nvbench/internal/*.cxx 2>/dev/null); do
  case "$f" in
    nvbench/main.cu|nvbench/json_printer.cxx|*cupti*) continue ;;
  esac
  o="$work/obj/$(echo "$f" | tr / _).o"
  echo "nvcc $f" >> "$log"
  if ! timeout -k 10 600 nvcc "${flags[@]}" -c "$src/nvbench/$f" -o "$o" >> "$log" 2>&1; then
    echo "FAILED to compile $f (see build.log)"; tail -30 "$log"; exit 1
  fi
  objs+=("$o"); n=$((n+1))
done
echo "compiled $n nvbench sources"
if ! timeout -k 10 600 nvcc "${flags[@]}" "$here/gate_copy_bench.cu" "$src/nvbench/nvbench/main.cu" "${objs[@]}" \
    -lcuda -o "$work/gate_copy_bench" >> "$log" 2>&1; then
  echo "FAILED to link (see build.log)"; tail -30 "$log"; exit 1
fi
echo "built $work/gate_copy_bench"

run_bench() { # json, repeat
  GATE_NVBENCH_REPEAT=$2 timeout -k 10 300 "$work/gate_copy_bench" --json "$1" --min-samples 20 --timeout 5
}
gate=$(command -v gate || ls "$root"/target/release/gate "$root"/target/debug/gate 2>/dev/null | head -1)
if [ -z "$gate" ]; then
  echo "no gate binary: the JSON files only"
  run_bench "$work/base.json" 1; run_bench "$work/same.json" 1; run_bench "$work/slow.json" 4
  exit 0
fi
cat > "$work/gate.toml" <<'T'
[metrics.wall_time_s]
enabled = false
[user_metrics.nv]
source = "metrics_file"
format = "nvbench"
benchmark = "*"
direction = "lower_is_better"
unit = "s"
T
cd "$work"
g() { timeout -k 10 300 "$gate" "$@"; echo "exit $?" ; }
g capture --baseline nv --runs 1 --metrics-file base.json -- ./gate_copy_bench --json base.json --min-samples 20 --timeout 5
g check --baseline nv --json same-report.json --metrics-file same.json -- ./gate_copy_bench --json same.json --min-samples 20 --timeout 5
GATE_NVBENCH_REPEAT=4 g check --baseline nv --json slow-report.json --metrics-file slow.json -- ./gate_copy_bench --json slow.json --min-samples 20 --timeout 5
