#!/usr/bin/env bash
# Regenerate fixtures/traces/nogpm/: the GPM-stripped twin of every recorded
# trace in fixtures/traces/ (what the same run holds on a GPU without GPM, or
# recorded with `gate record --no-gpm`; src/trace/nogpm.rs says what changes),
# and its README. tests/fixtures_diagnosis.rs checks the twins are current.
#
# Usage (repository root): bash scripts/strip-gpm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=fixtures/traces/nogpm
mkdir -p "$DIR"
rm -f "$DIR"/*.jsonl
cargo run --locked --quiet --example strip-gpm -- "$DIR" fixtures/traces/*.jsonl
{
    echo "# GPM-stripped twins (derived, not recorded)"
    echo
    echo "Each file here is derived from the recorded trace of the same name in"
    echo "\`fixtures/traces/\` by \`bash scripts/strip-gpm.sh\` (\`src/trace/nogpm.rs\`):"
    echo "every GPM column (SM active, occupancy, pipes, tensor, DRAM, GPM's PCIe and"
    echo "NVLink) is null, the header says GPM is unsupported, and \`gpm_invalid\` events"
    echo "are dropped. NVML's own counters (GPU busy, memory-controller busy, clocks,"
    echo "power, throttle reasons, processes and their SM shares) and every host counter"
    echo "are the recorded ones. NVML's PCIe byte counter was not recorded with these"
    echo "traces, so the twins have no PCIe traffic (as \`gate record --no-gpm\`, which does"
    echo "not read it either: docs/rules.md). Do not edit: rerun the script."
    echo
    for t in fixtures/traces/*.jsonl; do
        n="$(basename "$t")"
        echo "- \`$n\`: from \`fixtures/traces/$n\`"
    done
} > "$DIR/README.md.tmp"
mv "$DIR/README.md.tmp" "$DIR/README.md"
