#!/usr/bin/env bash
# Render `gate report --html` of a trace in headless Chromium and save a PNG,
# to check by eye that the report reads at a glance.
#
#   scripts/screenshot-report.sh TRACE OUT.png
#
# Env: GATE=path/to/gate (default: target/debug/gate, built if missing),
#      WINDOW=1400,2000 (width,height of the page captured).
# Needs Debian's `chromium` (apt-get install -y chromium). Nothing is fetched:
# the report is self-contained and networking features are switched off.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 TRACE OUT.png" >&2
    exit 2
fi
trace=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
gate=${GATE:-$root/target/debug/gate}
if [ ! -x "$gate" ]; then
    (cd "$root" && cargo build --quiet)
fi
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "$0: chromium not found; install it with: apt-get install -y chromium" >&2
    exit 3
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gate" report "$trace" --html "$tmp/report.html" >/dev/null

case "$out" in
    /*) out_abs=$out ;;
    *) out_abs=$(pwd)/$out ;;
esac
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$tmp/profile" \
    --screenshot="$out_abs" --window-size="${WINDOW:-1400,2000}" \
    "file://$tmp/report.html" 2>"$tmp/chromium.log" || {
    cat "$tmp/chromium.log" >&2
    exit 3
}
[ -s "$out_abs" ] || { echo "$0: no screenshot written" >&2; cat "$tmp/chromium.log" >&2; exit 3; }
echo "$out_abs"
