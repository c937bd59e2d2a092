#!/usr/bin/env bash
# Count the tests that did not run: cargo reports a test that returned early
# as passed, so such tests print "SKIPPED <test> (<what>): <reason>" on
# stderr (tests/history_postgres.rs), and .ci/run reads them here from the
# log of `cargo test`. Prints "ci: N skipped (not passed)" and each line.
# Usage: scripts/ci-skipped.sh LOG
set -euo pipefail
log="${1:?usage: scripts/ci-skipped.sh LOG}"
skipped="$(grep -E '^SKIPPED ' "$log" || true)"
if [ -z "$skipped" ]; then
  echo "ci: 0 skipped"
else
  echo "ci: $(printf '%s\n' "$skipped" | wc -l) skipped (not passed):"
  printf '%s\n' "$skipped" | sed 's/^/  /'
fi
