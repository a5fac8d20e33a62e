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
# The cluster serves TLS as well as plain connections: the script makes a
# throwaway CA and a server certificate with openssl, and exports
# QFLOW_TEST_POSTGRES_TLS_DIR, a directory holding ca.crt (the CA that
# signed the server's certificate; sslrootcert for sslmode=verify-full) and
# other-ca.crt (a CA that signed nothing the server has, to see a
# certificate fail to verify). The certificate names localhost only, not
# 127.0.0.1: sslmode=verify-full passes by the name localhost and fails the
# host name check by the address in QFLOW_TEST_POSTGRES_URL, as a server's
# certificate for its DNS name does when a client connects by its address.
#
# Environment: PG_BIN (default: the newest /usr/lib/postgresql/*/bin, e.g.
# Debian's postgresql-15), QFLOW_PG_FSYNC=on to keep fsync on (the
# benchmark does; tests do not need a throwaway cluster to survive a power
# loss), QFLOW_PG_OPTIONS for more server settings, e.g. to count the
# statements a benchmark sends:
#   QFLOW_PG_OPTIONS='-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all'
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

# A throwaway CA, its server certificate, and an unrelated CA.
tls="$dir/tls"
mkdir -p "$tls"
{
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=qflow throwaway CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$tls/ca.key" -out "$tls/ca.crt"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=qflow unrelated CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$tls/other-ca.key" -out "$tls/other-ca.crt"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
        -keyout "$tls/server.key" -out "$tls/server.csr"
    printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
        -CAcreateserial -days 2 -extfile "$tls/server.ext" -out "$tls/server.crt"
} >"$dir/openssl.log" 2>&1 || {
    echo "error: openssl could not make the throwaway certificates:" >&2
    cat "$dir/openssl.log" >&2
    exit 2
}
chmod 600 "$tls/server.key"
chmod 644 "$tls/ca.crt" "$tls/other-ca.crt" "$tls/server.crt"
if [ "$(id -u)" = 0 ]; then
    chown -R postgres: "$tls"
fi

fsync="${QFLOW_PG_FSYNC:-off}"
started=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        continue # taken
    fi
    if "${as_owner[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=$fsync -c ssl=on -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key ${QFLOW_PG_OPTIONS:-}" \
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
export QFLOW_TEST_POSTGRES_TLS_DIR="$tls"
echo "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on $QFLOW_TEST_POSTGRES_URL (throwaway, in $dir; TLS too, CA $tls/ca.crt)" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
