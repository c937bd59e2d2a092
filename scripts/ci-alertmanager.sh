#!/usr/bin/env bash
# A throwaway Alertmanager on loopback for the alert-delivery tests
# (tests/alerts.rs). Prints shell `export` lines for the tests:
#
#   eval "$(bash scripts/ci-alertmanager.sh start)"   # sets GATE_TEST_ALERTMANAGER_URL
#   ... cargo test ...
#   bash scripts/ci-alertmanager.sh stop "$GATE_TEST_AM_DATA"
#
# Installs Debian's `prometheus-alertmanager` when its binary is missing.
# The server listens on 127.0.0.1 only, on a free port, with a config that
# sends every alert (firing and resolved) to a webhook on another free
# loopback port (GATE_TEST_AM_HOOK_PORT, where a test listens), and its
# storage in a temporary folder. When it cannot start, the reason goes into
# GATE_TEST_ALERTMANAGER_SKIP instead, and the tests print it: never a
# silent skip.
set -uo pipefail

skip() {
    echo "ci-alertmanager: $1" >&2
    printf 'export GATE_TEST_ALERTMANAGER_SKIP=%q\n' "$1"
    exit 0
}

case "${1:-start}" in
stop)
    data=${2:-}
    [ -n "$data" ] && [ -f "$data/pid" ] || exit 0
    pid=$(cat "$data/pid")
    kill "$pid" 2>/dev/null || true
    # It writes its state as it stops: wait for it (10 s at most), then
    # remove the folder.
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    rm -rf "$data"
    exit 0
    ;;
start) ;;
*)
    echo "usage: $0 start | stop DATA_DIR" >&2
    exit 2
    ;;
esac

bin=$(command -v prometheus-alertmanager || command -v alertmanager || true)
if [ -z "$bin" ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq prometheus-alertmanager; } >/dev/null 2>&1 ||
            skip "apt-get install prometheus-alertmanager failed (no package mirror reachable?)"
        bin=$(command -v prometheus-alertmanager || true)
    fi
fi
[ -n "$bin" ] || skip "no prometheus-alertmanager binary and cannot install it"

# Free ports (the kernel's choice): Alertmanager's own, and the one a test
# listens on for Alertmanager's notifications (python3 is on every runner
# that runs the harness tests).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null
}
port=$(free_port) && hook=$(free_port) || skip "cannot find a free port (python3 missing?)"

# Every alert its own group, notified at once and again when it resolves:
# the test reads "firing" then "resolved" as Alertmanager saw them.
data=$(mktemp -d /tmp/gate-am.XXXXXX)
cat >"$data/alertmanager.yml" <<EOF
route:
  receiver: test-hook
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test-hook
    webhook_configs:
      - url: http://127.0.0.1:$hook/
        send_resolved: true
EOF
"$bin" --config.file="$data/alertmanager.yml" --storage.path="$data/storage" \
    --web.listen-address="127.0.0.1:$port" --cluster.listen-address= \
    >"$data/log" 2>&1 &
echo $! >"$data/pid"
# Ready when its API answers (bounded: 30 s).
for _ in $(seq 1 60); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/api/v2/status', timeout=1)" 2>/dev/null; then
        version=$("$bin" --version 2>&1 | awk 'NR == 1 {print $3}')
        echo "ci-alertmanager: Alertmanager $version on 127.0.0.1:$port (data $data)" >&2
        echo "export GATE_TEST_ALERTMANAGER_URL=http://127.0.0.1:$port"
        echo "export GATE_TEST_AM_HOOK_PORT=$hook"
        echo "export GATE_TEST_AM_DATA=$data"
        exit 0
    fi
    kill -0 "$(cat "$data/pid")" 2>/dev/null || break
    sleep 0.5
done
reason=$(tail -n 2 "$data/log" | tr '\n' ' ')
kill "$(cat "$data/pid")" 2>/dev/null || true
skip "Alertmanager did not answer on 127.0.0.1:$port: $reason"
