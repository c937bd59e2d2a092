#!/bin/sh
# Packs what build-and-run.sh needs into target/nvbench-src (ignored by
# git; about 6 MB), on a machine that can reach GitHub or has mirrors of
# the three repositories: nvbench itself (pinned), fmt 12.2.0 (nvbench's
# pinned version) and nlohmann/json's single header. The GPU machine has no
# network, and nvbench's own CMake build downloads rapids-cmake, CPM, fmt
# and nlohmann/json at configure time (cmake/RAPIDS.cmake,
# cmake/NVBenchDependencies.cmake), so it cannot build there as shipped.
#
# Usage: pack-sources.sh [NVBENCH_GIT_DIR FMT_GIT_DIR JSON_GIT_DIR]
# (git directories; default: clone from GitHub into a temporary folder).
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
out="$root/target/nvbench-src"
NVBENCH_COMMIT=66212f1da71cc9afb2894a46fa8f234cbdd6c0d8
FMT_TAG=12.2.0
JSON_REF=${JSON_REF:-v3.11.3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 3 ]; then
  nv=$1; fmt=$2; json=$3
else
  git clone -q --bare https://github.com/NVIDIA/nvbench.git "$tmp/nvbench.git"
  git clone -q --bare --branch "$FMT_TAG" --depth 1 https://github.com/fmtlib/fmt.git "$tmp/fmt.git"
  git clone -q --bare --branch "$JSON_REF" --depth 1 https://github.com/nlohmann/json.git "$tmp/json.git"
  nv=$tmp/nvbench.git; fmt=$tmp/fmt.git; json=$tmp/json.git
fi
rm -rf "$out"
mkdir -p "$out/nvbench" "$out/fmt" "$out/json"
git --git-dir="$nv" archive "$NVBENCH_COMMIT" nvbench docs/cli_help.md docs/cli_help_axis.md LICENSE | tar -x -C "$out/nvbench"
git --git-dir="$fmt" archive "$FMT_TAG" include LICENSE | tar -x -C "$out/fmt"
json_ref=$JSON_REF
git --git-dir="$json" rev-parse -q --verify "$json_ref^{commit}" >/dev/null || json_ref=HEAD
git --git-dir="$json" archive "$json_ref" single_include LICENSE.MIT | tar -x -C "$out/json"
cat > "$out/PROVENANCE" <<INFO
nvbench  https://github.com/NVIDIA/nvbench  $NVBENCH_COMMIT  (Apache-2.0 with LLVM exception)
fmt      https://github.com/fmtlib/fmt      $FMT_TAG  (MIT)
json     https://github.com/nlohmann/json   $(git --git-dir="$json" rev-parse "$json_ref")  (MIT)
INFO
du -sh "$out"
echo "carry target/nvbench-src to the GPU machine, then run scripts/harness/nvbench/build-and-run.sh"
