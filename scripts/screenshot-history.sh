#!/usr/bin/env bash
# Build the demo history (examples/history-demo.rs: the real `gate` binary
# over SYNTHETIC traces), draw `gate history --html` and screenshot it in
# headless Chromium, to check by eye that the trend page reads at a glance.
#
#   scripts/screenshot-history.sh OUT.png
#
# Env: GATE=path/to/gate (default: target/debug/gate, built if missing),
#      WINDOW=1280,2400 (width,height of the page captured).
# Needs Debian's `chromium` (apt-get install -y chromium). Nothing is fetched:
# the page is self-contained and networking features are switched off.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 OUT.png" >&2
    exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
export GATE=${GATE:-$root/target/debug/gate}
if [ ! -x "$GATE" ]; then
    (cd "$root" && cargo build --quiet)
fi
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "$0: chromium not found; install it with: apt-get install -y chromium" >&2
    exit 3
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && cargo run --quiet --example history-demo -- "$tmp/demo") >/dev/null

case "$out" in
    /*) out_abs=$out ;;
    *) out_abs=$(pwd)/$out ;;
esac
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$tmp/profile" \
    --screenshot="$out_abs" --window-size="${WINDOW:-1280,2400}" \
    "file://$tmp/demo/trend.html" 2>"$tmp/chromium.log" || {
    cat "$tmp/chromium.log" >&2
    exit 3
}
[ -s "$out_abs" ] || { echo "$0: no screenshot written" >&2; cat "$tmp/chromium.log" >&2; exit 3; }
echo "$out_abs"
