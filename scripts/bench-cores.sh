#!/usr/bin/env bash
# Cores used by one `check --replay` on an idle 2-vCPU VM, beside the two-thread floor.
# Usage: T=TRACE B=BASELINE BD=BASELINE_DIR scripts/bench-cores.sh (a trace from examples/make-big-trace.rs
# --tile fixtures/traces/healthy-1.jsonl --gpus 8 --samples 864000, and its baseline by gate capture).
set -u
G=${GATE:-target/release/gate}; F=${FLOOR:-target/release/examples/check-floor}
echo "date $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) nproc $(nproc) commit $(git rev-parse --short HEAD)"
for r in 1 2 3; do
  for c in gate floor2; do
    case $c in
      gate) /usr/bin/time -f "r$r gate   wall %e user %U sys %S rss %M" $G check --baseline "$B" --baseline-dir "$BD" --replay "$T" --format json >/dev/null 2>/tmp/err; tail -1 /tmp/err ;;
      floor2) /usr/bin/time -f "r$r floor2 wall %e user %U sys %S rss %M" $F --threads 2 "$T" >/dev/null 2>/tmp/err; tail -1 /tmp/err ;;
    esac
  done
done
