#!/usr/bin/env bash
# Behaviour byte-identical between two builds of gate: runs check, capture,
# suite, report, watch and history on the fixture traces and suites with every
# output (--json, --junit, --markdown, --html, --openmetrics, --bmf,
# --pr-comment, stdout as text and JSON, GitHub annotations, step summary and
# $GITHUB_OUTPUT written to temp files) and watch's alerts with each binary, then diffs every
# file, stdout, stderr and exit code byte for byte.
#
#   scripts/same-output.sh BEFORE_BINARY AFTER_BINARY
#
# Masked, and only these, because they legitimately differ between two runs:
#   - the case's output folder (a temp path, different per binary) -> OUT,
#     and each binary's own history database folder -> SIDE;
#   - `created = "..."` in a captured baseline and `"recorded_at"`/
#     `created` times, and in the history listing (only there) every
#     RFC 3339 time (the clock);
#   - the SQLite history database itself (binary, holds times): compared
#     through `gate history --format json` instead.
# Run from the repository root. Exit 0 when every case is the same.
set -u
before=$(realpath "$1")
after=$(realpath "$2")
root=$(mktemp -d /tmp/same-output.XXXXXX)
T=fixtures/traces
cases=0
differ=0

# run NAME ARGS...: the case with both binaries, each in OUT=$root/{before,after}/NAME.
run() {
    local name=$1
    shift
    cases=$((cases + 1))
    for side in before after; do
        local bin=${!side}
        local out=$root/$side/$name
        mkdir -p "$out"
        : >"$out/step-summary.md"
        : >"$out/github-output.txt"
        local args=()
        for a in "$@"; do
            a=${a//OUT/$out}
            args+=("${a//SIDE/$side}")
        done
        GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=$out/step-summary.md \
            GITHUB_OUTPUT=$out/github-output.txt NO_COLOR=1 \
            "$bin" "${args[@]}" >"$out/stdout" 2>"$out/stderr"
        echo $? >"$out/exit-code"
        # Mask the temp folder and the clock (see the header).
        find "$out" -type f | sort | while read -r f; do
            case "$f" in *.sqlite*) rm -f "$f"; continue ;; esac
            sed -i -e "s#$out#OUT#g" -e "s#$root/$side#SIDE#g" \
                -e 's/^created = "[^"]*"/created = "TIME"/' \
                -e 's/"recorded_at": "[^"]*"/"recorded_at": "TIME"/' \
                -e 's/"created": "[^"]*"/"created": "TIME"/' "$f"
            case "$name" in history-list*)
                sed -i -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' "$f" ;;
            esac
        done
    done
    if ! diff -r "$root/before/$name" "$root/after/$name" >"$root/$name.diff"; then
        differ=$((differ + 1))
        echo "DIFFERS: $name (see $root/$name.diff)"
        head -20 "$root/$name.diff"
    else
        echo "same: $name (exit $(cat "$root/after/$name/exit-code"), $(ls "$root/after/$name" | wc -l) files)"
    fi
}

every_output=(--junit OUT/r.xml --markdown OUT/r.md --json OUT/r.json --openmetrics OUT/r.prom
    --bmf OUT/r.bmf.json --html OUT/r.html --pr-comment OUT/comment/pr.md --html-url https://ci.example/r.html)

# One check: pass, regression, other families, JSON stdout, an error.
run check-pass check --baseline train-h200 --replay $T/healthy-3.jsonl "${every_output[@]}"
run check-regression check --baseline train-h200 --replay $T/sync-stall.jsonl "${every_output[@]}"
run check-regression-json check --baseline train-h200 --replay $T/launch-storm.jsonl --format json "${every_output[@]}"
run check-cnn check --baseline cnn-h200 --replay $T/cnn-sync.jsonl "${every_output[@]}"
run check-gpt-two-runs check --baseline gpt-h200 --replay $T/gpt-memory.jsonl $T/gpt-healthy-3.jsonl "${every_output[@]}"
run check-ddp check --baseline ddp-h200x2 --replay $T/ddp-straggler-gpu.jsonl "${every_output[@]}"
run check-threshold check --baseline train-h200 --replay $T/memory-bound.jsonl --threshold 10% --fail-on-improvement "${every_output[@]}"
run check-missing-baseline check --baseline nope --replay $T/healthy-3.jsonl "${every_output[@]}"
run check-bad-flags check --baseline train-h200 --replay $T/healthy-3.jsonl --confirm 2 "${every_output[@]}"
run check-shared-output check --baseline train-h200 --replay $T/healthy-3.jsonl --json OUT/same --markdown OUT/same
# Suites: all pass, one regression, one workload's baseline missing (a
# temporary gate.toml), JSON stdout, one workload.
suite_pass=(--suite-replay train=$T/healthy-3.jsonl --suite-replay cnn=$T/cnn-healthy-3.jsonl --suite-replay gpt=$T/gpt-healthy-3.jsonl)
suite_mixed=(--suite-replay train=$T/sync-stall.jsonl --suite-replay cnn=$T/cnn-healthy-3.jsonl --suite-replay gpt=$T/gpt-launch.jsonl)
run suite-pass check --suite "${suite_pass[@]}" "${every_output[@]}"
run suite-mixed check --suite "${suite_mixed[@]}" "${every_output[@]}"
run suite-mixed-json check --suite "${suite_mixed[@]}" --format json "${every_output[@]}"
run suite-one check --suite --workload cnn --suite-replay cnn=$T/cnn-memory.jsonl "${every_output[@]}"
broken=$root/broken-gate.toml
sed 's/baseline = "cnn-h200"/baseline = "cnn-missing"/' gate.toml >"$broken"
run suite-missing-baseline check --suite --config "$broken" "${suite_mixed[@]}" "${every_output[@]}"
run suite-bad-replay check --suite --suite-replay nope=$T/healthy-3.jsonl "${every_output[@]}"
# Capture: one baseline, two runs; a suite of baselines.
run capture capture --baseline b1 --baseline-dir OUT/baselines --replay $T/healthy-1.jsonl $T/healthy-2.jsonl
run capture-suite capture --suite --baseline-dir OUT/baselines "${suite_pass[@]}"
run capture-invalid capture --baseline b2 --baseline-dir OUT/baselines --replay $T/launch-storm.jsonl --runs 2
# Report on a trace, every format.
run report-text report $T/sync-stall.jsonl --json OUT/r.json --markdown OUT/r.md --html OUT/r.html
run report-json report $T/cnn-input.jsonl --format json
# Watch: alerts (firing and resolved) on stdout and in a file.
run watch-replay watch --window 10s --replay $T/sync-stall.jsonl $T/healthy-1.jsonl --min-severity info --eval-every 2s --alerts OUT/alerts.jsonl
run watch-replay-stdout watch --window 10s --replay $T/launch-storm.jsonl --min-severity info
# History: checks recorded (drift and trend read), then listed.
hist=(--history "sqlite:$root/SIDE/history.sqlite" --branch main)
for i in 1 2 3; do
    run history-check-$i check --baseline train-h200 --replay $T/healthy-$i.jsonl "${hist[@]}" "${every_output[@]}"
done
run history-suite check --suite "${suite_mixed[@]}" "${hist[@]}" "${every_output[@]}"
run history-list history --history "sqlite:$root/SIDE/history.sqlite" --format json
run history-list-text history --history "sqlite:$root/SIDE/history.sqlite"
echo "$cases cases, $differ differ; outputs under $root"
[ "$differ" -eq 0 ]
