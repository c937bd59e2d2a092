#!/usr/bin/env bash
# Wall time of `gate check --suite` over three replayed workloads (issue
# 32.2: replayed suite workloads judged at once), two gate binaries side by
# side in interleaved rounds: each round runs both, the order alternating
# from round to round, so a neighbour's compile burst hits both alike.
#
# Inputs: the repository suite's three workloads (gate.toml: train, cnn,
# gpt), each replaying its fixture trace (healthy-3, cnn-healthy-3,
# gpt-healthy-3) tiled by examples/make-big-trace.rs to HOURS hours at
# 100 ms on its recorded GPU count (1), written under a temporary folder in
# /tmp and deleted on exit.
#
# Prints each run's wall and CPU seconds (user+sys) and peak RSS, then the
# medians and the median of the per-round ratios new/old, and checks that
# both binaries wrote the same stdout and the same JSON report.
#
# Usage: scripts/bench-suite-parallel.sh OLD NEW [--hours 1] [--rounds 5]
# Needs /usr/bin/time; MK=path to a built make-big-trace example (else
# target/release/examples/make-big-trace).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1"); new=$(realpath "$2"); shift 2
hours=1; rounds=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 OLD NEW [--hours H] [--rounds N]" >&2; exit 2 ;;
  esac
done
mk=${MK:-target/release/examples/make-big-trace}
work=$(mktemp -d /tmp/gate-suite-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
samples=$(python3 -c "print(int($hours * 36000))")
for w in train:healthy-3 cnn:cnn-healthy-3 gpt:gpt-healthy-3; do
  "$mk" --tile "fixtures/traces/${w#*:}.jsonl" -o "$work/${w%%:*}.jsonl" --gpus 1 --samples "$samples" >/dev/null
done
ls -la "$work"/*.jsonl | awk '{printf "trace %s %.1f MB\n", $9, $5/1e6}'
suite=(check --suite --suite-replay "train=$work/train.jsonl" --suite-replay "cnn=$work/cnn.jsonl"
  --suite-replay "gpt=$work/gpt.jsonl" --no-history)

# one NAME BIN ROUND: one timed suite, "NAME round wall cpu rss_kb exit" to $work/times.
one() {
  local name=$1 bin=$2 round=$3
  set +e
  mkdir -p "$work/$name"
  /usr/bin/time -f "%e %U %S %M" -o "$work/t" "$bin" "${suite[@]}" --json "$work/$name/r.json" \
    >"$work/$name.stdout" 2>"$work/$name.stderr"
  sed -i "s#$work/$name/#OUT/#g" "$work/$name.stderr"
  local code=$?
  set -e
  read -r wall user sys rss <"$work/t"
  echo "$name $round $wall $(python3 -c "print(round($user + $sys, 2))") $rss $code" | tee -a "$work/times"
}
echo "name round wall_s cpu_s rss_kb exit"
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then one old "$old" "$r"; one new "$new" "$r"
  else one new "$new" "$r"; one old "$old" "$r"; fi
  cmp -s "$work/old.stdout" "$work/new.stdout" || { echo "stdout differs in round $r" >&2; exit 1; }
  cmp -s "$work/old/r.json" "$work/new/r.json" || { echo "JSON report differs in round $r" >&2; exit 1; }
  cmp -s "$work/old.stderr" "$work/new.stderr" || { echo "stderr differs in round $r" >&2; exit 1; }
done
python3 - "$work/times" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for name, rnd, wall, cpu, rss, code in rows:
    by.setdefault(name, {})[int(rnd)] = (float(wall), float(cpu), int(rss), code)
for name in ("old", "new"):
    v = list(by[name].values())
    print(f"{name}: median wall {statistics.median(x[0] for x in v):.2f} s, "
          f"cpu {statistics.median(x[1] for x in v):.2f} s, "
          f"peak RSS {statistics.median(x[2] for x in v) / 1024:.0f} MB, exit {v[0][3]}")
ratios = [by["new"][r][0] / by["old"][r][0] for r in by["old"]]
cores = [by["new"][r][1] / by["new"][r][0] for r in by["new"]]
print(f"new/old wall, median of per-round ratios: {statistics.median(ratios):.2f} "
      f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}); new uses {statistics.median(cores):.2f} cores")
EOF
