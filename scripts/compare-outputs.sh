#!/usr/bin/env bash
# Outputs of two gate binaries on one trace, compared byte for byte
# (BENCHMARKS.md, section 2: "One trace parsed on every core"): a baseline
# captured by each, then `check --format json` against the same (OLD's)
# baseline on all cores and at GATE_THREADS=1, and `report --format json`.
# Usage: scripts/compare-outputs.sh OLD_GATE NEW_GATE TRACE WORKDIR
set -euo pipefail
old=$1; new=$2; big=$3; w=$4
mkdir -p $w
$old capture --baseline big --baseline-dir $w/b-old --commit bench --replay $big >/dev/null 2>&1
$new capture --baseline big --baseline-dir $w/b-new --commit bench --replay $big >/dev/null 2>&1
for b in old new; do
  bin=$old; [[ $b == new ]] && bin=$new
  set +e
  $bin check --baseline big --baseline-dir $w/b-old --format json --replay $big > $w/check-$b.json 2>$w/check-$b.err; echo "check exit $b: $?"
  $bin report --format json $big > $w/report-$b.json 2>$w/report-$b.err; echo "report exit $b: $?"
  GATE_THREADS=1 $bin check --baseline big --baseline-dir $w/b-old --format json --replay $big > $w/check1-$b.json 2>/dev/null; echo "check GATE_THREADS=1 exit $b: $?"
  set -e
done
cmp $w/check-old.json $w/check-new.json && echo "check JSON identical ($(stat -c %s $w/check-new.json) bytes)"
cmp $w/report-old.json $w/report-new.json && echo "report JSON identical ($(stat -c %s $w/report-new.json) bytes)"
cmp $w/check1-old.json $w/check-new.json && echo "check JSON identical to old at GATE_THREADS=1"
cmp $w/check1-new.json $w/check-new.json && echo "new check JSON identical at GATE_THREADS=1 and all cores"
diff <(grep -v created $w/b-old/*.toml) <(grep -v created $w/b-new/*.toml) && echo "baselines identical apart from creation time ($(ls $w/b-new))"
