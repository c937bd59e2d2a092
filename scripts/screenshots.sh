#!/usr/bin/env bash
# Regenerate the screenshots in docs/ from the pages gate renders today, in
# headless Chromium, and record what they were drawn from:
#
#   docs/report-screenshot.png    `gate report --html` of the recorded fixture
#                                 fixtures/traces/contention.jsonl (run from
#                                 the repository root: the page's title is the
#                                 path as given)
#   docs/check-screenshot.png     `gate check --html` of the same fixture
#                                 against the committed baseline train-h200
#                                 (exit 3: another job shared the GPU, so the
#                                 run is DISTURBED; the page is drawn all
#                                 the same)
#   docs/history-screenshot.png   `gate history --html` of the demo history
#                                 (examples/history-demo: the real binary over
#                                 SYNTHETIC traces, a made-up clock)
#   docs/screenshots.sha256       sha256sum lines: each page's SHA-256 (as
#                                 <name>.html) and each PNG's
#
# Both pages are the same bytes on every build, so tests/screenshots.rs
# (no Chromium) renders them again and fails when gate now draws something
# else than the committed PNGs show; Chromium's pixels are not compared.
#
#   bash scripts/screenshots.sh           rewrite the PNGs and the sums
#   bash scripts/screenshots.sh --check   render into a temporary directory:
#                                         the pages must hash as recorded,
#                                         the PNGs as recorded, and Chromium
#                                         must draw a non-empty PNG of each
#
# Env: GATE=path/to/gate (default: target/debug/gate, built with the demo by
# `cargo build` when unset). Needs Debian's `chromium` (apt-get install -y
# chromium; .ci/run installs it) and sha256sum. Nothing is fetched: the pages
# are self-contained and Chromium's networking features are switched off.
set -euo pipefail

check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    *)
        echo "usage: $0 [--check]" >&2
        exit 2
        ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sums=docs/screenshots.sha256

# name, window size (width,height of the page captured).
shots=("report-screenshot 1400,2000" "check-screenshot 1400,2400" "history-screenshot 1280,1900")

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "$0: chromium not found; install it with: apt-get install -y chromium" >&2
    exit 3
fi

if [ -z "${GATE:-}" ]; then
    cargo build --quiet --locked --bin gate --example history-demo
    export GATE=$root/target/debug/gate
else
    cargo build --quiet --locked --example history-demo
fi
demo=$root/target/debug/examples/history-demo

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pages=$tmp/pages
mkdir -p "$pages"

# The pages, built exactly as tests/screenshots.rs builds them.
"$GATE" report fixtures/traces/contention.jsonl --html "$pages/report-screenshot.html" >/dev/null
# Another job on the GPU: a disturbed run exits 3 (issue 38); the page is
# written first.
"$GATE" check --baseline train-h200 --replay fixtures/traces/contention.jsonl \
    --html "$pages/check-screenshot.html" >/dev/null 2>&1 || [ $? = 3 ]
"$demo" "$tmp/demo" >/dev/null 2>"$tmp/demo.log" || {
    cat "$tmp/demo.log" >&2
    exit 1
}
cp "$tmp/demo/trend.html" "$pages/history-screenshot.html"

if [ "$check" = 1 ]; then
    pngs=$tmp/png
else
    pngs=$root/docs
fi
mkdir -p "$pngs"
for shot in "${shots[@]}"; do
    read -r name window <<<"$shot"
    start=$(date +%s)
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$(mktemp -d "$tmp/profile.XXXXXX")" \
        --screenshot="$pngs/$name.png" --window-size="$window" \
        "file://$pages/$name.html" >"$tmp/chromium.log" 2>&1 || {
        cat "$tmp/chromium.log" >&2
        exit 3
    }
    if [ ! -s "$pngs/$name.png" ] || [ "$(head -c 8 "$pngs/$name.png" | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
        echo "$0: chromium wrote no PNG for $name" >&2
        cat "$tmp/chromium.log" >&2
        exit 3
    fi
    echo "$name.png: $(stat -c %s "$pngs/$name.png") bytes, $window, $(($(date +%s) - start)) s" >&2
done

if [ "$check" = 0 ]; then
    {
        echo "# SHA-256 of the pages docs/*-screenshot.png were drawn from (as gate renders"
        echo "# them) and of the PNGs. Written by scripts/screenshots.sh; checked by"
        echo "# tests/screenshots.rs and \`bash scripts/screenshots.sh --check\` (.ci/run)."
        for shot in "${shots[@]}"; do
            read -r name _ <<<"$shot"
            (cd "$pages" && sha256sum "$name.html")
            (cd docs && sha256sum "$name.png")
        done
    } >"$sums"
    echo "wrote docs/report-screenshot.png, docs/check-screenshot.png, docs/history-screenshot.png, $sums" >&2
    exit 0
fi

# --check: the pages gate renders now against the recorded sums, and the
# committed PNGs against theirs.
stale=0
for shot in "${shots[@]}"; do
    read -r name _ <<<"$shot"
    for file in "$name.html" "$name.png"; do
        want=$(awk -v f="$file" '$2 == f { print $1 }' "$sums")
        if [ "$file" = "$name.html" ]; then
            got=$(sha256sum <"$pages/$file" | cut -c1-64)
            what="the page gate renders now"
        else
            got=$(sha256sum <"docs/$file" | cut -c1-64)
            what="docs/$file"
        fi
        if [ -z "$want" ]; then
            echo "$0: $sums records no $file" >&2
            stale=1
        elif [ "$want" != "$got" ]; then
            echo "$0: $what ($file) hashes $got, $sums records $want" >&2
            stale=1
        fi
    done
done
if [ "$stale" = 1 ]; then
    echo "$0: the screenshots are out of date: run \`bash scripts/screenshots.sh\` and commit docs/" >&2
    exit 1
fi
echo "screenshots current: the pages hash as $sums records; chromium drew each" >&2
