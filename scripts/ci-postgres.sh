#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the history tests
# (tests/history_postgres.rs). Prints shell `export` lines for the tests:
#
#   eval "$(bash scripts/ci-postgres.sh start)"   # sets GATE_TEST_POSTGRES_URL
#   ... cargo test ...
#   bash scripts/ci-postgres.sh stop "$GATE_TEST_PG_DATA"
#
# Installs Debian's `postgresql` when its server binaries are missing. The
# server runs as the `postgres` user (it refuses root), listens on
# 127.0.0.1:${GATE_TEST_PG_PORT:-55432} only, trusts local connections
# (a test cluster in a temporary folder, nothing else on it), and its
# superuser is `gate`. When it cannot start, the reason goes into
# GATE_TEST_POSTGRES_SKIP instead, and the tests print it: never a silent skip.
set -uo pipefail

skip() {
    echo "ci-postgres: $1" >&2
    printf 'export GATE_TEST_POSTGRES_SKIP=%q\n' "$1"
    exit 0
}

bindir() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

case "${1:-start}" in
stop)
    data=${2:-}
    [ -n "$data" ] && [ -d "$data/db" ] || exit 0
    b=$(bindir)
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$b/pg_ctl" -D "$data/db" -m fast -w stop >/dev/null 2>&1 || true
    else
        "$b/pg_ctl" -D "$data/db" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$data"
    exit 0
    ;;
start) ;;
*)
    echo "usage: $0 start | stop DATA_DIR" >&2
    exit 2
    ;;
esac

port=${GATE_TEST_PG_PORT:-55432}
b=$(bindir)
if [ -z "$b" ] || [ ! -x "$b/initdb" ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq postgresql; } >/dev/null 2>&1 ||
            skip "apt-get install postgresql failed (no package mirror reachable?)"
        b=$(bindir)
    fi
fi
[ -n "$b" ] && [ -x "$b/initdb" ] || skip "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb) and cannot install them"

data=$(mktemp -d /tmp/gate-pg.XXXXXX)
run_as=()
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || skip "running as root and there is no 'postgres' user to run the server as"
    chown postgres "$data"
    run_as=(runuser -u postgres --)
fi
"${run_as[@]}" "$b/initdb" -D "$data/db" -U gate --auth=trust -E UTF8 >"$data/initdb.log" 2>&1 ||
    skip "initdb failed: $(tail -n 2 "$data/initdb.log" | tr '\n' ' ')"
# One role that must give its password (scram-sha-256; the first matching
# pg_hba line wins): the tests check that a wrong one is named as such.
{ echo "host all gate_pw 127.0.0.1/32 scram-sha-256"; cat "$data/db/pg_hba.conf"; } >"$data/hba.tmp" &&
    cat "$data/hba.tmp" >"$data/db/pg_hba.conf" && rm -f "$data/hba.tmp"
"${run_as[@]}" "$b/pg_ctl" -D "$data/db" -l "$data/db/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $port -k $data -c fsync=off" start >/dev/null 2>&1 ||
    skip "the server did not start on 127.0.0.1:$port: $(tail -n 2 "$data/db/server.log" 2>/dev/null | tr '\n' ' ')"
echo "ci-postgres: PostgreSQL $("$b/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data $data)" >&2
echo "export GATE_TEST_POSTGRES_URL=postgres://gate@127.0.0.1:$port/postgres"
if "$b/psql" -q -h 127.0.0.1 -p "$port" -U gate -d postgres \
    -c "CREATE ROLE gate_pw LOGIN PASSWORD 'right-pw'" >/dev/null 2>&1; then
    echo "export GATE_TEST_POSTGRES_PASSWORD_URL=postgres://gate_pw:right-pw@127.0.0.1:$port/postgres"
fi
echo "export GATE_TEST_PG_DATA=$data"
