#!/usr/bin/env bash
# Run a command with a throwaway PostgreSQL cluster available to it:
#
#   scripts/test-postgres.sh .venv/bin/python -m pytest
#
# When SECLAKE_TEST_PG_URL is already set, or no Debian PostgreSQL binaries
# exist (/usr/lib/postgresql/*/bin), the command runs as is; the tests marked
# `postgres` are then skipped (or fail, under CI=true). Otherwise a cluster is
# created in a temporary directory, listening on 127.0.0.1 on a free port,
# SECLAKE_TEST_PG_URL is exported, and the cluster is stopped and removed when
# the command ends, whatever its outcome.
set -euo pipefail

if [[ -n "${SECLAKE_TEST_PG_URL:-}" ]]; then
    exec "$@"
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [[ -z "$bindir" || ! -x "$bindir/initdb" ]]; then
    echo "test-postgres: no PostgreSQL binaries in /usr/lib/postgresql/*/bin; postgres tests will not run" >&2
    exec "$@"
fi

workdir=$(mktemp -d /tmp/seclake-pg.XXXXXX)
# initdb refuses to run as root: run the cluster as the postgres OS user then.
as_owner=()
if [[ $(id -u) -eq 0 ]]; then
    chown postgres: "$workdir"
    as_owner=(runuser -u postgres --)
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cleanup() {
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$workdir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$workdir"
}
trap cleanup EXIT

"${as_owner[@]}" "$bindir/initdb" -D "$workdir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$workdir/initdb.log" 2>&1 \
    || { cat "$workdir/initdb.log" >&2; exit 1; }
"${as_owner[@]}" "$bindir/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $port -c unix_socket_directories='' -c fsync=off -c full_page_writes=off" start >/dev/null \
    || { cat "$workdir/server.log" >&2; exit 1; }
"$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres seclake_test

export SECLAKE_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$port/seclake_test"
echo "test-postgres: PostgreSQL on 127.0.0.1:$port (stopped when the tests end)" >&2
# Not exec: the EXIT trap must stop the cluster after the command.
"$@"
