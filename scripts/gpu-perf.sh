#!/usr/bin/env bash
# Issue 12 on the GPU host, one command, ~7 minutes, one tarball:
#   1. NVML cost per call (examples/nvml-probe costs): one call every 150 ms,
#      thread CPU time, median of 40, next to a running training loop;
#   2. sampler overhead in one window with `nvidia-smi dmon`: `gate record
#      --pid` on the training loop at 100 ms (default cadences and a lean
#      preset) and 10 ms, each followed by the NVML floor for the same calls
#      at the same cadences (`nvml-probe floor`); CPU and peak RSS by wait4;
#   3. `gate watch --pid` live for WATCH_SECONDS with a rule that fires
#      (`for = "20s"`), alerts as JSON lines, then the same trace replayed
#      through `gate watch --replay` (the offline twin must agree).
#
# Run from the repository root with the binaries built on the dev machine:
#   cargo build --release --bin gate --example nvml-probe
#   carry: target/release/gate target/release/examples/nvml-probe
#   bash scripts/gpu-perf.sh            # writes $OUT/perf-gpu.tar.gz
# Environment: OUT (default ./perf-out), GATE and PROBE (the binaries above),
#   SECONDS_EACH (20), ROUNDS (40),
#   WATCH_SECONDS (75), PYTHON (python3; needs torch for the workload),
#   SECTIONS (default "1 2 3"; 4 adds the start-up cost of 1 s recordings),
#   CONFIGS (names of section 2's settings,
#   default all: 100ms-default 100ms-nogpm 100ms-lean 10ms-default),
#   REPEAT (rounds of section 2, order rotated each round; 1), GATE_B (a
#   second gate, e.g. an older build, measured beside GATE in every round).
# `100ms-nogpm` runs when this gate has `record --no-gpm` (its NVML floor
# when nvml-probe has `floor --no-gpm`; otherwise it says so and skips).
# The gate-vs-floor check at 100 ms alone, ~3 minutes:
#   SECTIONS=2 CONFIGS="100ms-default 100ms-nogpm" SECONDS_EACH=30 bash scripts/gpu-perf.sh
#   5. a LAUNCHED job of real shape (issue 32.1): `busy-tree.py --torch`, a
#      main process training on the GPU fed by a DataLoader with 8 worker
#      processes, under `gate record` at 100 ms on its cgroup path, on the
#      per-process /proc path (GATE_CGROUP=0) and with --no-gpm; the NVML
#      floors (with and without GPM) and `nvidia-smi dmon -d 1` each beside
#      a job of the same shape, one at a time (a dmon beside gate would slow
#      gate's NVML calls: round 1 of the first run did). gate's own CPU by
#      scripts/gate-self-cpu.py (a launched job's CPU is not gate's; the
#      watchdog apart). Rounds interleaved (order rotated), medians.
#      About 5 minutes with the defaults below:
#   SECTIONS=5 bash scripts/gpu-perf.sh     # LAUNCH_SECONDS (20), LAUNCH_ROUNDS (3),
#      LAUNCH_WARMUP (8s), LAUNCH_JOB (scripts/busy-tree.py --torch)
#   6. the same job shape ATTACHED (`record --pid`, issue 44.1): gate with and
#      without GPM, each on the job's own cgroup where it has one
#      (GATE_CGROUP=1) and on each process's CPU clock (GATE_CGROUP=0), both
#      NVML floors and dmon, one at a time beside one job, rotated rounds,
#      then one profiled run of each path (GATE_PROFILE):
#   SECTIONS=6 bash scripts/gpu-perf.sh     # ATTACH_SECONDS (20), ATTACH_ROUNDS (3),
#      ATTACH_CGROUP (shared; own: the job in a cgroup of its own), ATTACH_JOB,
#      ATTACH_ONLY (some slots: e.g. "clock floorgpm"; "gpmb" is GATE_B with GPM,
#      "dmon" dmon in every round), ATTACH_PROFILE ("gpm clock")
set -u -o pipefail
OUT="${OUT:-$PWD/perf-out}"
SECONDS_EACH="${SECONDS_EACH:-20}"
ROUNDS="${ROUNDS:-40}"
WATCH_SECONDS="${WATCH_SECONDS:-75}"
PYTHON="${PYTHON:-python3}"
SECTIONS="${SECTIONS:-1 2 3}"
CONFIGS="${CONFIGS:-100ms-default 100ms-nogpm 100ms-lean 10ms-default}"
REPEAT="${REPEAT:-1}"
GATE_B="${GATE_B:-}"
section() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# GATE and PROBE name other builds (an older gate measured beside this one).
GATE="${GATE:-target/release/gate}"
PROBE="${PROBE:-target/release/examples/nvml-probe}"
mkdir -p "$OUT"
D="$(mktemp -d "${TMPDIR:-/tmp}/gate-perf.XXXXXX")"
exec > >(tee -a "$D/run.log") 2>&1
for b in "$GATE" "$PROBE"; do
    [ -x "$b" ] || { echo "gpu-perf.sh: $b missing; build it and carry it (see the header)"; exit 2; }
done
MEASURE=("$PYTHON" scripts/bench_summary.py measure)
# One measurement: measure_one KIND NAME -- COMMAND... (KIND: gate, gateb, floor, version).
measure_one() {
    local kind=$1 name=$2; shift 3
    "${MEASURE[@]}" --json "$D/$kind-$name.json" --stdout "$D/$kind-$name.stdout" --stderr "$D/$kind-$name.stderr" \
        --timeout $((SECONDS_EACH + 60)) -- "$@"
}
date -u +%Y-%m-%dT%H:%M:%SZ
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0
"$GATE" --version

WL_PID=""
cleanup() {
    if [ -n "$WL_PID" ] && kill -0 "$WL_PID" 2>/dev/null; then
        kill "$WL_PID" 2>/dev/null; wait "$WL_PID" 2>/dev/null
    fi
}
pack() {
    cleanup
    sleep 0.5
    tar -czf "$OUT/perf-gpu.tar.gz" -C "$D" .
    ls -l "$OUT"
}
trap pack EXIT

if section 5; then
LAUNCH_SECONDS="${LAUNCH_SECONDS:-20}"
LAUNCH_ROUNDS="${LAUNCH_ROUNDS:-3}"
# torch's import, CUDA context and 8 workers' fork take a few seconds:
# counted in gate's lifetime, outside its measured window.
LAUNCH_WARMUP="${LAUNCH_WARMUP:-8s}"
echo "== 5. launched job: main + 8 DataLoader workers, ${LAUNCH_SECONDS}s at 100 ms, $LAUNCH_ROUNDS rounds"
# LAUNCH_JOB: the job's arguments after python (its seconds are appended).
read -r -a job_args <<< "${LAUNCH_JOB:-scripts/busy-tree.py --torch}"
JOB=("$PYTHON" "${job_args[@]}")
job_seconds=$(( LAUNCH_SECONDS + 30 ))
# The timed runs leave GATE_PROFILE unset (its two thread-clock reads per
# section, ~30 a tick, are work a real recording does not do); one profiled
# run of each path after the rounds gives the per-section breakdown.
launched() { # NAME ROUND GATE_CGROUP EXTRA-FLAGS...
    local name=$1 r=$2 cg=$3; shift 3
    env GATE_CGROUP="$cg" ${PROFILE:+GATE_PROFILE=1} timeout -k 10 $((LAUNCH_SECONDS + 120)) \
        "$PYTHON" scripts/gate-self-cpu.py --json "$D/launch-$name-r$r.json" \
        --stdout "$D/launch-$name-r$r.stdout" --stderr "$D/launch-$name-r$r.stderr" --timeout $((LAUNCH_SECONDS + 100)) -- \
        "$GATE" record --interval 100ms --gpu 0 --warmup "$LAUNCH_WARMUP" --duration "${LAUNCH_SECONDS}s" "$@" \
        -o "$D/launch-$name-r$r.jsonl" -- "${JOB[@]}" "$job_seconds"
    grep -o 'host counters: [^"]*' "$D/launch-$name-r$r.jsonl" | head -n 1 | sed "s/^/$name r$r: /"
}
floors() { # ROUND: both NVML floors, then dmon, beside one job of the same shape
    local r=$1
    "${JOB[@]}" $(( 3 * LAUNCH_SECONDS + 50 )) > "$D/floor-job-r$r.stdout" 2> "$D/floor-job-r$r.stderr" &
    local job=$!
    sleep 10
    timeout -k 10 $((LAUNCH_SECONDS + 60)) "${MEASURE[@]}" --json "$D/launchfloor-gpm-r$r.json" \
        --stdout /dev/null --stderr "$D/launchfloor-gpm-r$r.stderr" --timeout $((LAUNCH_SECONDS + 50)) -- \
        "$PROBE" floor --gpu 0 --seconds "$LAUNCH_SECONDS" --interval 100ms --json "$D/launchfloor-gpm-r$r-self.json"
    timeout -k 10 $((LAUNCH_SECONDS + 60)) "${MEASURE[@]}" --json "$D/launchfloor-nogpm-r$r.json" \
        --stdout /dev/null --stderr "$D/launchfloor-nogpm-r$r.stderr" --timeout $((LAUNCH_SECONDS + 50)) -- \
        "$PROBE" floor --gpu 0 --seconds "$LAUNCH_SECONDS" --interval 100ms --no-gpm --json "$D/launchfloor-nogpm-r$r-self.json"
    timeout -k 5 $((LAUNCH_SECONDS + 20)) "${MEASURE[@]}" --json "$D/launch-dmon-r$r.json" \
        --stdout "$D/launch-dmon-r$r.txt" --stderr "$D/launch-dmon-r$r.stderr" \
        --timeout $((LAUNCH_SECONDS + 15)) -- nvidia-smi dmon -i 0 -s pucm -d 1 -c "$LAUNCH_SECONDS"
    kill "$job" 2>/dev/null; wait "$job" 2>/dev/null
}
for r in $(seq 1 "$LAUNCH_ROUNDS"); do
    order=(cgroup proc nogpm floors); for _ in $(seq 2 "$r"); do order=("${order[@]:1}" "${order[0]}"); done
    for kind in "${order[@]}"; do
        case $kind in
            cgroup) launched cgroup "$r" 1 ;;
            proc) launched proc "$r" 0 ;;
            nogpm) launched nogpm "$r" 1 --no-gpm ;;
            floors) floors "$r" ;;
        esac
    done
done
PROFILE=1 launched profiled 1 1
[ -n "${PROFILE_PROC:-}" ] && PROFILE=1 launched profiledproc 1 0
"$PYTHON" - "$D" "$LAUNCH_ROUNDS" <<'EOF'
import json, os, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
def load(f):
    return json.load(open(f)) if os.path.exists(f) else None
rows = {}
for r in range(1, rounds + 1):
    fg, fn = load(f"{d}/launchfloor-gpm-r{r}.json"), load(f"{d}/launchfloor-nogpm-r{r}.json")
    for name, floor in (("cgroup", fg), ("proc", fg), ("nogpm", fn)):
        g = load(f"{d}/launch-{name}-r{r}.json")
        if g is None or floor is None or g.get("gate_cpu_s") is None:
            continue
        x = rows.setdefault(name, {"gate": [], "both": [], "floor": [], "ratio": [], "ratio_both": []})
        x["gate"].append(g["gate_cpu_pct_of_one_core"])
        x["both"].append(g["gate_and_watchdog_cpu_pct_of_one_core"])
        x["floor"].append(floor["cpu_pct_of_one_core"])
        x["ratio"].append(g["gate_cpu_pct_of_one_core"] / floor["cpu_pct_of_one_core"])
        x["ratio_both"].append(g["gate_and_watchdog_cpu_pct_of_one_core"] / floor["cpu_pct_of_one_core"])
dm = [x["cpu_pct_of_one_core"] for r in range(1, rounds + 1) if (x := load(f"{d}/launch-dmon-r{r}.json"))]
print("| launched main + 8 workers, 100 ms | gate % of a core | + watchdog | NVML floor | gate / floor (rounds) | (gate + watchdog) / floor |")
print("|---|---|---|---|---|---|")
for name in ("cgroup", "proc", "nogpm"):
    x = rows.get(name)
    if not x:
        continue
    print(f"| {name} | {med(x['gate']):.3f} % | {med(x['both']):.3f} % | {med(x['floor']):.3f} % | "
          f"{med(x['ratio']):.2f} ({' '.join(f'{v:.2f}' for v in x['ratio'])}) | {med(x['ratio_both']):.2f} |")
if dm:
    print(f"nvidia-smi dmon -d 1 beside the same job: {med(dm):.3f} % of a core (rounds: {' '.join(f'{v:.3f}' for v in dm)})")
print("target (issue 32.1): gate / floor <= 1.2 on the cgroup path")
EOF
for f in "$D"/launch-profiled-r1.stderr "$D"/launch-profiledproc-r1.stderr; do
    [ -f "$f" ] && grep -A14 'GATE_PROFILE' "$f" | sed "s|^|$(basename "$f" .stderr)  |"
done
fi

if section 6; then
ATTACH_SECONDS="${ATTACH_SECONDS:-20}"
ATTACH_ROUNDS="${ATTACH_ROUNDS:-3}"
echo "== 6. attached (--pid): main + 8 DataLoader workers, ${ATTACH_SECONDS}s at 100 ms, $ATTACH_ROUNDS rounds"
# ATTACH_CGROUP=own: the job is started in a cgroup of its own (as a
# systemd unit, a Slurm step or a container gives it), so gate can read its
# cpu.stat; otherwise the job shares gate's cgroup and gate reads /proc.
read -r -a job_args <<< "${ATTACH_JOB:-scripts/busy-tree.py --torch}"
slots=$(( ATTACH_ROUNDS * 6 + 4 ))
job_seconds=$(( slots * (ATTACH_SECONDS + 8) + 60 ))
if [ "${ATTACH_CGROUP:-shared}" = own ]; then
    own=$(sed -n 's/^0:://p' /proc/self/cgroup)
    cg="/sys/fs/cgroup${own%/}/gate-bench-job-$$"
    mkdir "$cg" && echo "job cgroup: $cg"
    # The launcher moves itself in, then becomes the job: every worker is born inside.
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$PYTHON" "${job_args[@]}" "$job_seconds" \
        > "$D/attach-job.stdout" 2> "$D/attach-job.stderr" &
else
    "$PYTHON" "${job_args[@]}" "$job_seconds" > "$D/attach-job.stdout" 2> "$D/attach-job.stderr" &
fi
AJOB=$!
sleep 15
echo "job $AJOB: $(ls /proc/$AJOB/task | wc -l) threads in main; tree: $(pgrep -P $AJOB | wc -l) children"
attached() { # NAME ROUND GATE_CGROUP EXTRA-FLAGS...
    local name=$1 r=$2 cgv=$3; shift 3
    timeout -k 10 $((ATTACH_SECONDS + 60)) "${MEASURE[@]}" --json "$D/att-$name-r$r.json" \
        --stdout "$D/att-$name-r$r.stdout" --stderr "$D/att-$name-r$r.stderr" --timeout $((ATTACH_SECONDS + 50)) -- \
        env GATE_CGROUP="$cgv" ${PROFILE:+GATE_PROFILE=1} "$GATE" record --pid "$AJOB" --interval 100ms --gpu 0 --duration "${ATTACH_SECONDS}s" "$@" \
        -o "$D/att-$name-r$r.jsonl"
    grep -o 'host counters: [^"]*' "$D/att-$name-r$r.jsonl" | head -n 1 | sed "s/^/$name r$r: /"
}
afloor() { # NAME ROUND EXTRA-FLAGS...
    local name=$1 r=$2; shift 2
    timeout -k 10 $((ATTACH_SECONDS + 60)) "${MEASURE[@]}" --json "$D/att-$name-r$r.json" \
        --stdout /dev/null --stderr "$D/att-$name-r$r.stderr" --timeout $((ATTACH_SECONDS + 50)) -- \
        "$PROBE" floor --gpu 0 --seconds "$ATTACH_SECONDS" --interval 100ms "$@" --json "$D/att-$name-r$r-self.json"
}
for r in $(seq 1 "$ATTACH_ROUNDS"); do
    # gpm/nogpm: GATE_CGROUP=1 (the job's own cgroup where it has one);
    # clock/nogpmclock: GATE_CGROUP=0 (each process's CPU clock). dmon in
    # round 1 only.
    # ATTACH_ONLY: a shorter run with these slots alone (no dmon).
    read -r -a order <<< "${ATTACH_ONLY:-gpm clock nogpm nogpmclock floorgpm floornogpm}"
    [ "$r" = 1 ] && [ -z "${ATTACH_ONLY:-}" ] && order+=(dmon)
    for _ in $(seq 2 "$r"); do order=("${order[@]:1}" "${order[0]}"); done
    for kind in "${order[@]}"; do
        case $kind in
            gpm) attached gpm "$r" 1 ;;
            gpmb) GATE="$GATE_B" attached gpmb "$r" 1 ;;
            clock) attached clock "$r" 0 ;;
            nogpm) attached nogpm "$r" 1 --no-gpm ;;
            nogpmclock) attached nogpmclock "$r" 0 --no-gpm ;;
            floorgpm) afloor floorgpm "$r" ;;
            floornogpm) afloor floornogpm "$r" --no-gpm ;;
            dmon) timeout -k 5 $((ATTACH_SECONDS + 20)) "${MEASURE[@]}" --json "$D/att-dmon-r$r.json" \
                    --stdout "$D/att-dmon-r$r.txt" --stderr "$D/att-dmon-r$r.stderr" \
                    --timeout $((ATTACH_SECONDS + 15)) -- nvidia-smi dmon -i 0 -s pucm -d 1 -c "$ATTACH_SECONDS" ;;
        esac
    done
done
case " ${ATTACH_PROFILE:-gpm clock} " in *" gpm "*) PROFILE=1 attached profgpm 1 1 ;; esac
case " ${ATTACH_PROFILE:-gpm clock} " in *" clock "*) PROFILE=1 attached profclock 1 0 ;; esac
kill "$AJOB" 2>/dev/null; pkill -P "$AJOB" 2>/dev/null; wait "$AJOB" 2>/dev/null
[ -n "${cg:-}" ] && for _ in $(seq 1 20); do rmdir "$cg" 2>/dev/null && break; sleep 0.5; done
"$PYTHON" - "$D" "$ATTACH_ROUNDS" <<'EOF'
import json, os, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
def load(n, r):
    f = f"{d}/att-{n}-r{r}.json"
    return json.load(open(f)) if os.path.exists(f) else None
print("| attached main + 8 workers, 100 ms | gate % of a core | NVML floor | gate / floor (rounds) | gate peak RSS | dmon peak RSS |")
print("|---|---|---|---|---|---|")
dm = [x for r in range(1, rounds + 1) if (x := load("dmon", r))]
for name, fl in (("gpm", "floorgpm"), ("gpmb", "floorgpm"), ("clock", "floorgpm"), ("nogpm", "floornogpm"), ("nogpmclock", "floornogpm")):
    g = [load(name, r) for r in range(1, rounds + 1)]
    f = [load(fl, r) for r in range(1, rounds + 1)]
    pairs = [(a, b) for a, b in zip(g, f) if a and b]
    if not pairs:
        continue
    ratio = [a["cpu_s"] / a["wall_s"] / (b["cpu_s"] / b["wall_s"]) for a, b in pairs]
    print(f"| {name} | {med(a['cpu_pct_of_one_core'] for a, _ in pairs):.3f} % | {med(b['cpu_pct_of_one_core'] for _, b in pairs):.3f} % | "
          f"{med(ratio):.2f} ({' '.join(f'{v:.2f}' for v in ratio)}) | {med(a['peak_rss_mib'] for a, _ in pairs):.1f} MiB | "
          f"{med(x['peak_rss_mib'] for x in dm) if dm else float('nan'):.1f} MiB |")
if dm:
    print(f"nvidia-smi dmon -d 1 beside the same job: {med(x['cpu_pct_of_one_core'] for x in dm):.3f} % of a core")
# The floor's loop alone (its own report) against its whole process (wait4):
# the rest is its start (NVML's) and exit, which gate's profile shows apart.
for fl in ("floorgpm", "floornogpm"):
    runs = [(w, json.load(open(f))) for r in range(1, rounds + 1)
            if (w := load(fl, r)) and os.path.exists(f := f"{d}/att-{fl}-r{r}-self.json")]
    if runs:
        print(f"{fl}: whole process {med(w['cpu_s'] for w, _ in runs) * 1e3:.1f} ms, its sampling loop "
              f"{med(s['cpu_s'] for _, s in runs) * 1e3:.1f} ms (medians of {len(runs)})")
print("target (issue 44.1): gate / floor <= 1.2 with and without GPM; peak RSS <= dmon + 3 MiB")
EOF
for f in "$D"/att-profgpm-r1.stderr "$D"/att-profclock-r1.stderr; do
    [ -f "$f" ] && grep -A40 'GATE_PROFILE' "$f" | sed "s|^|$(basename "$f" .stderr)  |"
done
fi

# A training loop that runs through every phase below (sections 1-4).
if section 1 || section 2 || section 3 || section 4; then
total=$(( ROUNDS * 4 + REPEAT * 12 * (SECONDS_EACH + 8) + WATCH_SECONDS + 60 ))
"$PYTHON" fixtures/workloads/train.py --mode healthy --seconds "$total" --seed 12 \
    --result-file "$D/workload-result.json" > "$D/workload.stdout" 2> "$D/workload.stderr" &
WL_PID=$!
for _ in $(seq 1 120); do
    grep -q '^samples_per_s:' "$D/workload.stdout" 2>/dev/null && break
    kill -0 "$WL_PID" 2>/dev/null || { echo "workload died"; cat "$D/workload.stderr"; exit 3; }
    sleep 0.5
done
sleep 2
fi

if section 1; then
echo "== 1. NVML cost per call"
"$PROBE" costs --gpu 0 --rounds "$ROUNDS" --spacing 150ms --json "$D/costs.json" | tee "$D/costs.txt"
fi

if section 2; then
echo "== 2. overhead, same window as dmon, then the NVML floor"
# `--no-gpm` (issue 22 item 5) where this gate and probe have it.
gate_nogpm=no; probe_nogpm=no
# Help texts captured whole: under pipefail the probe's usage exit (2) failed
# a `probe | grep -q` pipeline, and the --no-gpm floor was never measured.
case "$("$GATE" record --help 2>&1)" in *--no-gpm*) gate_nogpm=yes ;; esac
case "$("$PROBE" 2>&1)" in *--no-gpm*) probe_nogpm=yes ;; esac
echo "record --no-gpm: $gate_nogpm; nvml-probe floor --no-gpm: $probe_nogpm"
# name interval extra-flags...
configs=()
for c in $CONFIGS; do
    case $c in
        100ms-default) configs+=("100ms-default 100ms") ;;
        100ms-nogpm)
            if [ "$gate_nogpm" = yes ]; then configs+=("100ms-nogpm 100ms --no-gpm")
            else echo "100ms-nogpm: skipped, this gate has no 'record --no-gpm'"; fi ;;
        100ms-lean) configs+=("100ms-lean 100ms --gpm-interval 1s --process-interval 2s") ;;
        10ms-default) configs+=("10ms-default 10ms") ;;
        *) echo "unknown CONFIGS entry '$c'"; exit 2 ;;
    esac
done
for round in $(seq 1 "$REPEAT"); do
for cfg in "${configs[@]}"; do
    set -- $cfg
    base=$1; iv=$2; shift 2
    name=$base; [ "$REPEAT" -gt 1 ] && name="$base-r$round"
    rec=(record --pid "$WL_PID" --duration "${SECONDS_EACH}s" --interval "$iv" --gpu 0 "$@")
    fl=(--interval "$iv")
    [ "$base" = 100ms-lean ] && fl+=(--gpm-interval 1s --process-interval 2s)
    floor_ok=yes
    if [ "$base" = 100ms-nogpm ]; then
        if [ "$probe_nogpm" = no ]; then
            floor_ok=no; echo "$name: NVML floor not measured (nvml-probe has no 'floor --no-gpm')"
        else fl+=(--no-gpm); fi
    fi
    # The order rotates each round (gate, floor, GATE_B; then floor, GATE_B, gate; ...).
    order=(gate floor gateb); for _ in $(seq 2 "$round"); do order=("${order[@]:1}" "${order[0]}"); done
    for kind in "${order[@]}"; do
        case $kind in
            gate)
                m=""
                if [ "$round" = 1 ]; then
                    # nvidia-smi dmon in the same window, round 1 only.
                    "${MEASURE[@]}" --json "$D/dmon-$name.json" --stdout "$D/dmon-$name.txt" --stderr "$D/dmon-$name.stderr" \
                        --timeout $((SECONDS_EACH + 30)) -- \
                        nvidia-smi dmon -i 0 -s pucm --gpm-metrics 1,2,3,5,10,20,21 -d 1 -c "$SECONDS_EACH" &
                    m=$!
                fi
                measure_one gate "$name" -- env GATE_PROFILE=1 "$GATE" "${rec[@]}" -o "$D/attach-$name.jsonl"
                [ -n "$m" ] && wait "$m" ;;
            floor)
                [ "$floor_ok" = yes ] && measure_one floor "$name" -- \
                    "$PROBE" floor --gpu 0 --seconds "$SECONDS_EACH" "${fl[@]}" --json "$D/floor-$name-self.json" ;;
            gateb)
                [ -n "$GATE_B" ] && measure_one gateb "$name" -- \
                    env GATE_PROFILE=1 "$GATE_B" "${rec[@]}" -o "$D/attach-b-$name.jsonl" ;;
        esac
    done
    "$PYTHON" - "$D" "$name" <<'EOF'
import json, os, sys
d, n = sys.argv[1], sys.argv[2]
r = {k: json.load(open(f"{d}/{k}-{n}.json")) for k in ("gate", "gateb", "dmon", "floor")
     if os.path.exists(f"{d}/{k}-{n}.json")}
mib = lambda x: x.get("peak_rss_mib", float("nan"))
for k, v in r.items():
    print(f"{n:17} {k:6} cpu {v['cpu_s']:.3f} s / {v['wall_s']:.1f} s = {v['cpu_pct_of_one_core']:.2f} % of a core, peak RSS {mib(v):.1f} MiB")
for k in ("gate", "gateb"):
    if "floor" in r and k in r:
        print(f"{n:17} {k}/floor CPU ratio {r[k]['cpu_s'] / max(r['floor']['cpu_s'], 1e-9):.2f} (target <= 1.2)")
EOF
    # Where gate's own CPU went (GATE_PROFILE sections: NVML calls vs the rest).
    for k in gate gateb; do
        [ -f "$D/$k-$name.stderr" ] && grep -A14 'GATE_PROFILE' "$D/$k-$name.stderr" | sed "s/^/$name $k  /"
    done
done
done
# Medians over the rounds, per setting: CPU % of a core and the ratio to the floor.
"$PYTHON" - "$D" <<'EOF'
import glob, json, os, re, statistics, sys
d = sys.argv[1]
runs = {}
for f in glob.glob(f"{d}/*.json"):
    m = re.match(r"(gate|gateb|floor)-(.+?)(-r\d+)?\.json$", os.path.basename(f))
    if m and not f.endswith("-self.json"):
        runs.setdefault((m.group(2), m.group(3) or ""), {})[m.group(1)] = json.load(open(f))
for base in sorted({b for b, _ in runs}):
    rounds = [v for (b, _), v in runs.items() if b == base]
    for k in ("gate", "gateb", "floor"):
        pct = [r[k]["cpu_pct_of_one_core"] for r in rounds if k in r]
        ratio = [r[k]["cpu_s"] / r["floor"]["cpu_s"] for r in rounds if k in r and "floor" in r and k != "floor"]
        if pct:
            line = f"median {base:14} {k:6} {statistics.median(pct):.3f} % of a core over {len(pct)} rounds"
            if ratio:
                line += f", {k}/floor {statistics.median(ratio):.2f} (rounds: {' '.join(f'{x:.2f}' for x in ratio)})"
            print(line)
EOF
fi

if section 4; then
echo "== 4. start-up: 1 s recordings (default setting) beside the NVML floor's 1 s, and gate --version"
for i in 1 2 3 4 5; do
    measure_one gate "start-$i" -- env GATE_PROFILE=1 "$GATE" record --pid "$WL_PID" --duration 1s --interval 100ms --gpu 0 -o "$D/start-$i.jsonl"
    measure_one floor "start-$i" -- "$PROBE" floor --gpu 0 --seconds 1 --interval 100ms --json "$D/floor-start-$i-self.json"
    measure_one version "start-$i" -- "$GATE" --version
done
grep -h -E "open_gpus|trace_finish" "$D"/gate-start-*.stderr | sed 's/^/start-up  /'
"$PYTHON" - "$D" <<'EOF'
import json, statistics, sys
d = sys.argv[1]
for k in ("gate", "floor", "version"):
    ms = [json.load(open(f"{d}/{k}-start-{i}.json"))["cpu_s"] * 1000 for i in range(1, 6)]
    print(f"start-up {k:8} median {statistics.median(ms):.1f} ms CPU (runs: {' '.join(f'{x:.1f}' for x in ms)})")
EOF
fi

if section 3; then
echo "== 3. gate watch live (rule that fires), then replayed"
cat > "$D/watch.toml" <<'EOF'
# Fires on a healthy training loop: the GPU is busy. A real deployment
# would use e.g. "sm_active_pct.mean < 30 and gpu_busy_pct.mean > 80".
[rules.gpu_is_busy]
severity = "medium"
title = "GPU busy for 20 s"
when = "gpu_busy_pct.mean > 50"
for = "20s"
explanation = "The GPU has been busy for the whole window."
EOF
if "$GATE" watch --help >/dev/null 2>&1; then
    "${MEASURE[@]}" --json "$D/watch.json" --stdout "$D/watch-alerts.jsonl" --stderr "$D/watch.stderr" \
        --timeout $((WATCH_SECONDS + 30)) -- \
        timeout -s INT "$WATCH_SECONDS" "$GATE" watch --pid "$WL_PID" --gpu 0 --config "$D/watch.toml" \
        --trace-dir "$D/watch-traces"
    cat "$D/watch.stderr" | tail -n 20
    head -c 2000 "$D/watch-alerts.jsonl"; echo
    t=$(ls "$D"/watch-traces/*.jsonl* 2>/dev/null | head -n 1)
    [ -n "$t" ] && "$GATE" watch --replay "$t" --config "$D/watch.toml" > "$D/watch-replay-alerts.jsonl" 2> "$D/watch-replay.stderr"
    echo "live alerts: $(wc -l < "$D/watch-alerts.jsonl"), replayed: $(wc -l < "$D/watch-replay-alerts.jsonl" 2>/dev/null)"
else
    echo "this gate has no 'watch' subcommand: skipped"
fi
fi
