#!/usr/bin/env bash
# The verdict table of a hold-out family, as written down in
# bench-results/*-holdout*/verdicts*.tsv: a three-run baseline from
# healthy-1..3, then every other recorded run checked against it, with
# defaults and with the benchmark's throughput declared (wall time off).
#
# Usage: scripts/holdout-verdicts.sh FAMILY [TRACE_DIR] > verdicts.tsv
#   FAMILY     trace prefix (recsys for fixtures/traces/recsys-*.jsonl)
#   TRACE_DIR  default fixtures/traces
# Environment: GATE (default target/release/gate).
set -euo pipefail
family="${1:?usage: holdout-verdicts.sh FAMILY [TRACE_DIR]}"
traces="$(cd "${2:-fixtures/traces}" && pwd)"
gate="$(cd "$(dirname "${GATE:-target/release/gate}")" && pwd)/$(basename "${GATE:-target/release/gate}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf 'gate.toml\tfixture\tverdict\tsamples_per_s change %%\tregressed\tranked first\tthen\n'
for cfg in defaults declared; do
  d="$work/$cfg"
  mkdir -p "$d"
  label="none (defaults)"
  if [ "$cfg" = declared ]; then
    label="throughput declared, wall time off"
    cat > "$d/gate.toml" <<'TOML'
[user_metrics.samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "last"

[metrics.wall_time_s]
enabled = false
TOML
  fi
  (cd "$d" && "$gate" capture --baseline b3 --replay "$traces/$family-healthy-1.jsonl" \
      "$traces/$family-healthy-2.jsonl" "$traces/$family-healthy-3.jsonl" >/dev/null 2>&1)
  for t in "$traces/$family"-*.jsonl; do
    name="$(basename "$t" .jsonl)"
    case "$name" in "$family"-healthy-[123]) continue ;; esac
    (cd "$d" && "$gate" check --baseline b3 --format json --replay "$t" > "$d/out.json" 2>/dev/null) || true
    python3 - "$d/out.json" "$label" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ms = r.get("metrics", [])
sp = [m for m in ms if m.get("id") == "samples_per_s" and m.get("change_pct") is not None]
ch = "%.1f" % sp[0]["change_pct"] if sp else ""
regressed = ",".join(m["id"] for m in ms if m.get("verdict") == "regression")
d = r.get("diagnosis") or []
print("\t".join([sys.argv[2], sys.argv[3], str(r.get("verdict")), ch, regressed,
                 d[0]["rule"] if d else "none", ",".join(x["rule"] for x in d[1:3])]))
PY
  done
done
