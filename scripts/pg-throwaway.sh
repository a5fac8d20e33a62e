#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for qflow's PostgreSQL tests and benchmark.
#
#   scripts/pg-throwaway.sh run CMD [ARG...]
#
# creates a cluster in a temporary directory (initdb, trust authentication,
# listening on 127.0.0.1 only, on a free port), exports its URL as
# QFLOW_TEST_POSTGRES_URL, runs CMD, then stops the cluster and removes the
# directory, whatever CMD did (exit status: CMD's). Run as root, the
# cluster runs as the `postgres` user (PostgreSQL refuses to run as root).
#
# Environment: PG_BIN (default: the newest /usr/lib/postgresql/*/bin, e.g.
# Debian's postgresql-15), QFLOW_PG_FSYNC=on to keep fsync on (the
# benchmark does; tests do not need a throwaway cluster to survive a power
# loss).
set -euo pipefail

if [ "${1:-}" != run ] || [ $# -lt 2 ]; then
    echo "usage: $0 run CMD [ARG...]" >&2
    exit 2
fi
shift

PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    echo "error: no PostgreSQL server binaries (initdb, pg_ctl) found: install Debian's postgresql-15 (apt-get install postgresql-15) or set PG_BIN" >&2
    exit 2
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/qflow-pg.XXXXXX")"
as_owner=()
if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    as_owner=(runuser -u postgres --)
fi

stop() {
    "${as_owner[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT

"${as_owner[@]}" "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 2
}

fsync="${QFLOW_PG_FSYNC:-off}"
started=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        continue # taken
    fi
    if "${as_owner[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=$fsync" \
        start >/dev/null; then
        started=1
        break
    fi
done
if [ -z "$started" ]; then
    echo "error: the throwaway PostgreSQL cluster did not start:" >&2
    cat "$dir/server.log" >&2 || true
    exit 2
fi

export QFLOW_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
echo "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on $QFLOW_TEST_POSTGRES_URL (throwaway, in $dir)" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
